"""Where dpcore may write (dpcore.files): never over a device, FIFO or directory, never over a
fit's ledger, salt file or input (session 13; found by a robustness run that replaced
/dev/null with a regular file)."""
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import InvalidArgumentError
from dpcore.files import check_not_protected, check_replaceable, replace_into, same_file
from mechanisms import Synthesizer

SCHEMA = {"columns": {"a": {"type": "categorical", "categories": ["x", "y"]},
                      "b": {"type": "categorical", "categories": ["u", "v", "w"]}}}


def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.choice(["u", "v", "w"], 200)})


def test_replace_into_refuses_a_fifo_and_a_directory_and_keeps_the_temporary(tmp_path):
    fifo, folder, tmp = tmp_path / "pipe", tmp_path / "dir", tmp_path / "tmp"
    os.mkfifo(fifo)
    folder.mkdir()
    tmp.write_text("data")
    for target, message in ((fifo, "not a regular file"), (folder, "is a directory")):
        with pytest.raises(InvalidArgumentError, match=message):
            replace_into(tmp, target)
    assert tmp.read_text() == "data"
    replace_into(tmp, tmp_path / "new")                 # absent: renamed
    assert (tmp_path / "new").read_text() == "data" and not tmp.exists()


def test_a_link_to_a_device_fifo_or_directory_is_refused(tmp_path):
    fifo, folder, tmp = tmp_path / "pipe", tmp_path / "dir", tmp_path / "tmp"
    os.mkfifo(fifo)
    folder.mkdir()
    tmp.write_text("data")
    for target, message in ((fifo, "not a regular file"), (folder, "is a directory"),
                            (Path("/dev/null"), "not a regular file")):
        link = tmp_path / f"link-{target.name}"
        os.symlink(target, link)
        with pytest.raises(InvalidArgumentError, match=message):
            replace_into(tmp, link)
        assert link.is_symlink()
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    check_replaceable(tmp_path / "dangling")


def test_a_link_is_replaced_not_its_target(tmp_path):
    target, link, tmp = tmp_path / "t", tmp_path / "l", tmp_path / "tmp"
    target.write_text("keep")
    os.symlink(target, link)
    tmp.write_text("new")
    check_replaceable(link)
    replace_into(tmp, link)
    assert target.read_text() == "keep" and link.read_text() == "new" and not link.is_symlink()


def test_protected_paths_match_through_links_and_hard_links(tmp_path):
    a = tmp_path / "a"
    a.write_text("x")
    os.symlink(a, tmp_path / "s")
    os.link(a, tmp_path / "h")
    for other in ("a", "s", "h"):
        assert same_file(tmp_path / other, a)
        with pytest.raises(InvalidArgumentError, match="is the input"):
            check_not_protected(tmp_path / other, [("the input", a)])
    check_not_protected(tmp_path / "b", [("the input", a), ("nothing", None)])


@pytest.mark.parametrize("method", ["write", "save"])
@pytest.mark.parametrize("target", ["ledger.json", "ledger.json.private", "pipe"])
def test_the_api_never_writes_over_its_ledger_salt_file_or_a_fifo(tmp_path, method, target):
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-6, seed=0, progress=False,
                               ledger_path=ledger).fit(frame(), SCHEMA)
    os.mkfifo(tmp_path / "pipe")
    before = ledger.read_bytes()
    with pytest.raises(InvalidArgumentError, match="ledger|salt file|not a regular file"):
        getattr(synth, method)(tmp_path / target)
    assert ledger.read_bytes() == before and synth.verify(allow_fixed_seed=True).ok
    assert not (tmp_path / "ledger.json.private").exists()


def test_the_api_never_writes_over_the_file_it_was_fitted_on(tmp_path):
    data = tmp_path / "data.csv"
    frame().to_csv(data, index=False)
    before = data.read_bytes()
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-6, seed=0, progress=False)
    synth.fit_file(data, SCHEMA)
    for method in ("write", "save"):
        with pytest.raises(InvalidArgumentError, match="fitted on"):
            getattr(synth, method)(data)
    assert data.read_bytes() == before
    synth.write(tmp_path / "out.csv", 10)           # any other path is fine
    assert len(pd.read_csv(tmp_path / "out.csv")) == 10


def test_workload_synthesizers_default_delta_like_the_others():
    from mechanisms import AIM, MST
    assert AIM(epsilon=1.0).delta == MST(epsilon=1.0).delta == 1e-9
    assert Synthesizer.create("mwem", epsilon=1.0).delta == 1e-9


def test_numpy_scalars_are_numbers_and_other_types_are_type_errors():
    from dpcore.errors import DpcoreTypeError
    synth = Synthesizer.create("mst", epsilon=np.float32(1.0), delta=np.float64(1e-9))
    assert type(synth.epsilon) is float and synth.epsilon == 1.0
    assert Synthesizer.create("mst", epsilon=np.int64(2)).epsilon == 2
    with pytest.raises(DpcoreTypeError, match="epsilon must be a number"):
        Synthesizer.create("mst", epsilon="1")


def test_integer_column_names_are_the_schemas_texts():
    from dpcore.encoding import infer_schema
    df = pd.DataFrame({0: ["a", "b"] * 50, 1: ["x", "y"] * 50})
    schema = {"columns": {"0": {"type": "categorical", "categories": ["a", "b"]},
                          "1": {"type": "categorical", "categories": ["x", "y"]}}}
    synth = Synthesizer.create("mst", epsilon=1.0, progress=False).fit(df, schema)
    assert list(synth.sample(5).columns) == ["0", "1"]
    assert infer_schema(df).names == ("0", "1")


def test_a_sample_too_large_for_memory_is_refused_not_attempted():
    synth = Synthesizer.create("mst", epsilon=1.0, progress=False).fit(frame(), SCHEMA)
    with pytest.raises(InvalidArgumentError, match="n must be <= .* write\\(\\) or sample_chunks"):
        synth.sample(2 ** 40)


@pytest.mark.parametrize("content", [b"not a pickle", b"", b"\x80\x05K\x01."])
def test_loading_what_save_did_not_write_is_a_typed_error(tmp_path, content):
    path = tmp_path / "s.pkl"
    path.write_bytes(content)          # text, an empty file, a pickle of the int 1
    with pytest.raises(InvalidArgumentError, match="s.pkl"):
        Synthesizer.load(path)


def test_a_reformatted_ledger_is_still_a_record_and_a_link_to_one_is_not(tmp_path):
    import json as json_module
    from dpcore.accounting import PrivacyFilter
    from dpcore.files import check_not_a_record
    ledger = tmp_path / "ledger.json"
    PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=ledger).close()
    pretty = tmp_path / "pretty.json"          # keys sorted: "format" is no longer first
    pretty.write_text(json_module.dumps(json_module.loads(ledger.read_text()), indent=2,
                                        sort_keys=True))
    for record in (ledger, pretty):
        with pytest.raises(InvalidArgumentError, match="dpcore ledger"):
            check_not_a_record(record)
    link = tmp_path / "link.json"
    link.symlink_to(ledger)
    check_not_a_record(link)                   # a rename replaces the link, not the ledger
    plain = tmp_path / "out.csv"
    plain.write_text("a,b\n1,2\n")
    check_not_a_record(plain)


def test_a_file_that_only_mentions_the_marks_is_not_a_record(tmp_path):
    """Audit 17 F3: a saved synthesizer's pickle holds the attribute name ``input_salt_`` and
    could not be saved over ("is a ledger's salt file"); a CSV with a "dpcore-ledger" category
    could not be replaced either. A record is JSON text holding a mark; such files are not."""
    from dpcore.accounting import PrivacyFilter
    from dpcore.files import check_not_a_record
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-6, seed=0,
                               progress=False).fit(frame(), SCHEMA)
    saved = tmp_path / "s.pkl"
    synth.save(saved)
    assert b"input_salt" in saved.read_bytes()
    synth.save(saved)                                   # the same path again
    csv = tmp_path / "t.csv"
    csv.write_text("kind\ndpcore-ledger\ninput_salt\n")
    check_not_a_record(csv)
    # JSON text with a mark after a byte-order mark and blank lines still is one
    ledger = tmp_path / "ledger.json"
    PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=ledger).close()
    records = []
    # review 17: blank padding of 1 MiB or more hid the mark in the bytes the JSON test read
    for k, pad in enumerate((b"\n \r\n", b"\n" * (1 << 20), b" " * ((1 << 20) + 5))):
        padded = tmp_path / f"padded{k}.json"
        padded.write_bytes(b"\xef\xbb\xbf" + pad + ledger.read_bytes())
        records.append((padded, "dpcore ledger"))
    salt = tmp_path / "salt.private"
    salt.write_text('[{"input_salt": "00"}]')
    lines = tmp_path / "salt-lines.private"
    lines.write_text('{"run": 0, "input_salt": "00"}\n{"run": 1, "input_salt": "11"}\n')
    escaped = tmp_path / "escaped.json"         # the same JSON strings, no mark bytes
    escaped.write_text(ledger.read_text().replace("dpcore-ledger", "dpcore\\u002dledger"))
    assert b"dpcore-ledger" not in escaped.read_bytes()
    records += [(salt, "salt file"), (lines, "salt file"), (escaped, "dpcore ledger")]
    for record, what in records:
        with pytest.raises(InvalidArgumentError, match=what):
            check_not_a_record(record)
