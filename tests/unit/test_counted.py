"""The stream engine (issue 21): one file read chunk by chunk and counted in this process
(dpcore.counted.FileTable, Synthesizer.fit_file, dpcore synth --engine stream) gives the memory
engine's marginals, charges and synthetic rows; a bad file spends nothing; iter_codes is
read_codes, chunk by chunk."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpcore.csvblocks as csvblocks
from dpcore import Dataset
from dpcore.accounting import Ledger
from dpcore.counted import FileTable, batch_bytes, file_sha256
from dpcore.datasets import adult
from dpcore.encoding import EncodingError, RestartRead, iter_codes, read_codes
from dpcore.errors import InvalidArgumentError
from mechanisms import Synthesizer

ROWS = 3000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Adult's first ROWS rows as a plain CSV (the block reader's), and its schema."""
    df, schema = adult()
    path = tmp_path_factory.mktemp("counted") / "adult.csv"
    df.iloc[:ROWS].to_csv(path, index=False)
    return path, schema


def _small_blocks(monkeypatch, block_bytes: int) -> None:
    """The block reader in blocks of ``block_bytes`` (many chunks from a small file)."""
    monkeypatch.setattr(csvblocks, "CSV_BLOCK_BYTES", block_bytes)


def _quoted_late(path, out, line: int):
    """``path`` with one value quoted on data line ``line``: the same table, but the block
    reader meets the quote only in a later block."""
    lines = path.read_text().splitlines(keepends=True)
    first, rest = lines[line].split(",", 1)
    lines[line] = f'"{first}",{rest}'
    out.write_text("".join(lines))
    return out


@pytest.fixture(scope="module")
def small(data):
    """The first 400 rows: many chunks of a few rows each, quickly."""
    path, schema = data
    out = path.with_name("small.csv")
    out.write_text("".join(path.read_text().splitlines(keepends=True)[:401]))
    return out, schema


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk_rows=st.integers(7, 500), block=st.integers(1500, 60_000),
       engine=st.sampled_from(["auto", "pandas"]))
def test_iter_codes_concatenates_to_read_codes(small, monkeypatch, chunk_rows, block, engine):
    path, schema = small
    whole = read_codes(path, schema, engine="pandas")
    with monkeypatch.context() as m:
        _small_blocks(m, block)
        parts = list(iter_codes(path, schema, chunk_rows=chunk_rows, engine=engine))
    assert all(p.dtype == whole.dtype and p.shape[1] == whole.shape[1] for p in parts)
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    if engine == "pandas":
        assert max(len(p) for p in parts) <= chunk_rows
    else:
        assert len(parts) >= len(path.read_bytes()) // block - 1   # the block size held


def test_a_late_quote_restarts_the_read(data, tmp_path, monkeypatch):
    """The block reader meets a quote after yielding chunks: iter_codes raises RestartRead,
    and read_codes and FileTable read again with pandas, counting nothing twice."""
    path, schema = data
    quoted = _quoted_late(path, tmp_path / "q.csv", 2500)
    _small_blocks(monkeypatch, 20_000)
    got = iter_codes(quoted, schema)
    assert len(next(got)) > 0
    with pytest.raises(RestartRead):
        list(got)
    whole = read_codes(path, schema, engine="pandas")
    np.testing.assert_array_equal(read_codes(quoted, schema), whole)
    table = FileTable(quoted, schema)
    table.prefetch([("age",), ("sex", "income")])
    want = Dataset(whole, schema.domain()).marginals([("age",), ("sex", "income")])
    for g, w in zip(table.marginals([("age",), ("sex", "income")]), want):
        np.testing.assert_array_equal(g.values, w.values)
    assert table.passes == 1


def test_file_table_counts_the_in_memory_marginals(data, monkeypatch):
    path, schema = data
    _small_blocks(monkeypatch, 30_000)              # several chunks
    local = Dataset(read_codes(path, schema), schema.domain())
    cliques = [("age",), ("income", "sex"), ("race", "sex", "workclass"), ("fnlwgt",)]
    table = FileTable(path, schema)
    assert table.prefetch(cliques[:2]) == file_sha256(path)
    for got, want in zip(table.marginals(cliques), local.marginals(cliques)):
        assert got.attributes == want.attributes
        np.testing.assert_array_equal(got.values, want.values)
    assert table.passes == 2                         # the prefetch, then one for the rest
    table.marginals(cliques)
    assert table.passes == 2


def test_the_batch_cap_and_a_changed_input(data, tmp_path):
    path, schema = data
    copy = tmp_path / "copy.csv"
    copy.write_bytes(path.read_bytes())
    domain = schema.domain()
    small = [("sex",), ("income",)]
    table = FileTable(copy, schema, batch_bytes=batch_bytes(domain, small))
    table.prefetch(small + [("age", "sex")])         # the pair does not fit: not counted
    assert table.passes == 1
    table.marginals(small)
    assert table.passes == 1
    copy.write_bytes(path.read_bytes().replace(b"Male", b"Female", 1))
    with pytest.raises(InvalidArgumentError, match="input changed between passes"):
        table.marginals([("age", "sex")])
    with pytest.raises(InvalidArgumentError, match="batch_bytes"):
        FileTable(copy, schema, batch_bytes=-1)


def test_a_file_changed_during_a_pass_is_refused(data, tmp_path, monkeypatch):
    """Rows appended while a pass reads the file: the pass counted the old bytes, the hash
    would commit to the new ones. Refused, with no digest in the message (it can reach the
    public ledger)."""
    import dpcore.encoding as encoding
    path, schema = data
    copy = tmp_path / "grow.csv"
    copy.write_bytes(path.read_bytes())
    _small_blocks(monkeypatch, 30_000)
    real = encoding.iter_codes

    def growing(*args, **kwargs):
        for k, codes in enumerate(real(*args, **kwargs)):
            if k == 0:
                with open(copy, "ab") as fh:
                    fh.write(path.read_bytes().split(b"\n", 2)[1] + b"\n")
            yield codes

    monkeypatch.setattr(encoding, "iter_codes", growing)
    with pytest.raises(InvalidArgumentError, match="changed while it was read") as err:
        FileTable(copy, schema).prefetch([("sex",)])
    assert file_sha256(copy)[:8] not in str(err.value)


def _two_inputs(path, tmp_path, kind: str):
    """Files A and B of one schema, different tables, in the format ``kind`` reads: the
    block reader's plain CSV, a CSV with a quote on its first data line (pandas reads it),
    Parquet."""
    lines = path.read_text().splitlines(keepends=True)
    a_rows, b_rows = lines[1:201], lines[201:401]
    out = []
    for name, rows in (("a", a_rows), ("b", b_rows)):
        text = "".join([lines[0]] + rows)
        if kind == "pandas":
            first, rest = text.split("\n", 1)[1].split(",", 1)
            text = lines[0] + f'"{first}",{rest}'
        target = tmp_path / f"{name}.{'parquet' if kind == 'parquet' else 'csv'}"
        target.write_text(text)
        if kind == "parquet":
            frame = pd.read_csv(target, dtype=str, keep_default_na=False)
            frame.to_parquet(target, index=False)
        out.append(target)
    return out


@pytest.mark.parametrize("kind", ["blocks", "pandas", "parquet"])
def test_a_file_renamed_over_the_input_for_one_open_is_refused(data, tmp_path, monkeypatch, kind):
    """Audit 16 F7: a reader opens the input's path several times (header, row check, parser,
    hash). B renamed over the path for one of those opens and A renamed back before the hash
    left the path's (device, inode, size, mtime) as before: B was counted while the ledger
    committed to A. Every open of the input goes through open_input, whose descriptor must be
    the file identified before the read: a swap at any one of the opens is refused."""
    import builtins
    import os
    import sys
    import dpcore.counted as counted
    path, schema = data
    a, b = _two_inputs(path, tmp_path, kind)
    keep = tmp_path / "keep"
    real_open = builtins.open
    direct = []

    def watched(file, *args, **kwargs):       # every open of A outside open_input is a gap
        if isinstance(file, (str, os.PathLike)) and os.fspath(file) == str(a) \
                and sys._getframe(1).f_code is not counted.open_input.__code__:
            direct.append(sys._getframe(1).f_code.co_name)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", watched)
    opens = []
    monkeypatch.setattr(counted, "open", lambda *args, **kw: opens.append(1) or
                        real_open(*args, **kw), raising=False)
    table = FileTable(a, schema)
    table.prefetch([("sex",)])
    assert direct == [] and len(opens) >= 2           # the header and the data at least
    expected = table.marginals([("sex",)])[0].values
    for k in range(len(opens)):
        seen = []

        def swapping(file, *args, **kwargs):
            seen.append(1)
            if len(seen) - 1 != k:
                return real_open(file, *args, **kwargs)
            os.rename(a, keep)
            os.rename(b, a)
            try:
                return real_open(file, *args, **kwargs)
            finally:
                os.rename(a, b)
                os.rename(keep, a)

        monkeypatch.setattr(counted, "open", swapping, raising=False)
        with pytest.raises(InvalidArgumentError, match="changed while it was read"):
            FileTable(a, schema).prefetch([("sex",)])
    # A alone still reads as before
    monkeypatch.setattr(counted, "open", real_open, raising=False)
    again = FileTable(a, schema)
    again.prefetch([("sex",)])
    np.testing.assert_array_equal(again.marginals([("sex",)])[0].values, expected)
    assert again.marginals([("sex",)])[0].values.sum() == 200


def test_a_file_rewritten_in_place_with_its_mtime_set_back_is_refused(data, tmp_path):
    """Review 17: the same size rewritten in place, os.utime putting the mtime back, and the
    original written back before the hash kept (device, inode, size, mtime): the other table
    was counted, the commitment was to this one. The status-change time, which no user can set
    back, is part of the identity now."""
    import os
    import dpcore.counted as counted
    path, schema = data
    target = _quoted_late(path, tmp_path / "q.csv", 2)        # the pandas reader: two passes
    a = target.read_bytes()
    b = a.replace(b"Male", b"Mxle")
    assert len(a) == len(b) and a != b
    st = os.stat(target)

    def rewrite(content):
        with open(target, "r+b") as fh:
            fh.write(content)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))

    def read():
        rewrite(b)
        try:
            return read_codes(target, schema)
        except EncodingError:            # "Mxle" is no category: what was read does not matter
            return None
        finally:
            rewrite(a)

    with pytest.raises(InvalidArgumentError, match="changed while it was read"):
        counted.read_and_hash(target, read)


def test_a_failed_run_leaves_no_hash_of_the_data_in_the_ledger(data, tmp_path):
    """An input that changes between passes fails the run after charges; the ledger's
    closing reason says so without any digest of either version of the file."""
    path, schema = data
    copy = tmp_path / "copy.csv"
    copy.write_bytes(path.read_bytes())
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-9, seed=5, progress=False,
                               ledger_path=str(ledger))
    real = FileTable._count
    calls = []

    def count_then_change(self, shape, subsets):
        out = real(self, shape, subsets)
        calls.append(1)
        if len(calls) == 1:      # after the prefetch: the file changes before the next pass
            copy.write_bytes(path.read_bytes().replace(b"Male", b"Female", 1))
        return out

    import unittest.mock as mock
    with mock.patch.object(FileTable, "_count", count_then_change), \
            pytest.raises(InvalidArgumentError, match="input changed between passes"):
        synth.fit_file(copy, schema, batch_bytes=batch_bytes(schema.domain(), [("sex",)]))
    text = ledger.read_text()
    assert "input changed between passes" in text
    for version in (path.read_bytes(), copy.read_bytes()):
        assert hashlib.sha256(version).hexdigest() not in text


def _fit(name, how, path, schema, **kwargs):
    options = {"rounds": 15, "max_model_size": 1} if name == "aim" else {}
    synth = Synthesizer.create(name, epsilon=1.0, delta=1e-9, seed=5, progress=False,
                               **options)
    if how == "file":
        return synth.fit_file(path, schema, **kwargs)
    return synth.fit_codes(read_codes(path, schema), schema, input_sha256=file_sha256(path))


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_fit_file_is_the_memory_fit(data, name):
    path, schema = data
    mem = _fit(name, "codes", path, schema)
    for batch in (None, 8 * 200):                   # one pass; then a pass per later marginal
        got = _fit(name, "file", path, schema, batch_bytes=batch)
        assert [(e.event, e.rho, e.what) for e in got.ledger.charges] == \
            [(e.event, e.rho, e.what) for e in mem.ledger.charges]
        assert got.input_sha256_ == mem.input_sha256_ == file_sha256(path)
        pd.testing.assert_frame_equal(got.sample(), mem.sample())
        if batch is None:
            assert got.data_passes_ == 1
            assert got.batch_fits(schema)
        else:
            assert got.data_passes_ > 1
            assert not got.batch_fits(schema, batch_bytes=batch)


def _bad_files(path, tmp_path):
    lines = path.read_text().splitlines(keepends=True)
    bad_value = lines[:]
    bad_value[2000] = "1000," + bad_value[2000].split(",", 1)[1]   # age above its bound
    ragged = lines[:]
    ragged[2500] = ragged[2500].rstrip("\n") + ",extra\n"
    quoted = bad_value[:]
    quoted[5] = '"' + quoted[5].split(",", 1)[0] + '",' + quoted[5].split(",", 1)[1]
    out = {}
    for name, body in (("value", bad_value), ("ragged", ragged), ("quoted", quoted),
                       ("both", [*bad_value[:2500], ragged[2500], *bad_value[2501:]])):
        out[name] = tmp_path / f"{name}.csv"
        out[name].write_text("".join(body))
    return out


def test_a_bad_file_gives_read_codes_error_and_spends_nothing(data, tmp_path, monkeypatch):
    path, schema = data
    _small_blocks(monkeypatch, 40_000)              # the bad rows lie past the first chunk
    for kind, bad in _bad_files(path, tmp_path).items():
        with pytest.raises(EncodingError) as want:
            read_codes(bad, schema)
        ledger = tmp_path / f"{kind}.json"
        synth = Synthesizer.create("mst", epsilon=1.0, seed=1, progress=False,
                                   ledger_path=ledger)
        with pytest.raises(EncodingError) as got:
            synth.fit_file(bad, schema)
        assert str(got.value) == str(want.value), kind
        assert (got.value.row, got.value.column) == (want.value.row, want.value.column)
        assert not ledger.exists()                   # no run opened, nothing charged
    assert "has 16 fields" in str(got.value)         # "both": the ragged row comes first
    with pytest.raises(InvalidArgumentError, match="reads records"):
        Synthesizer.create("fem", epsilon=1.0, progress=False).fit_file(path, schema)


def _opened(ledger) -> str:
    """The input SHA-256 the run's salt opens (from the private file beside the ledger)."""
    private = json.loads(Path(f"{ledger}.private").read_text().splitlines()[-1])
    text = Path(ledger).read_text()
    commitment = hashlib.sha256(bytes.fromhex(private["input_salt"]) +
                                bytes.fromhex(private["input_sha256"])).hexdigest()
    assert commitment in text
    return private["input_sha256"]


def test_cli_stream_writes_what_memory_writes(data, tmp_path, monkeypatch):
    from dpcore.cli import main
    path, schema = data
    (tmp_path / "schema.json").write_text(json.dumps(schema.to_dict()))
    common = ["synth", "--data", str(path), "--schema", str(tmp_path / "schema.json"),
              "--mechanism", "mst", "--epsilon", "1", "--delta", "1e-9", "--seed", "3",
              "--quiet"]
    for engine in ("memory", "stream", "auto"):
        argv = common + ["--out", str(tmp_path / f"{engine}.csv"),
                         "--ledger", str(tmp_path / f"{engine}.json")]
        with monkeypatch.context() as m:
            if engine == "auto":       # auto streams: the whole code array is never read
                m.setattr("dpcore.encoding.read_codes", _refuse)
            assert main(argv + ["--engine", engine]) == 0
    for engine in ("stream", "auto"):
        assert (tmp_path / f"{engine}.csv").read_bytes() == (tmp_path / "memory.csv").read_bytes()
        assert _opened(tmp_path / f"{engine}.json") == _opened(tmp_path / "memory.json") \
            == file_sha256(path)
        charges = [[(e.event, e.rho, e.what) for e in Ledger.load(tmp_path / f"{k}.json").charges]
                   for k in (engine, "memory")]
        assert charges[0] == charges[1] and charges[0]
    assert main(common + ["--mechanism", "fem", "--engine", "stream", "--out",
                          str(tmp_path / "f.csv"), "--ledger", str(tmp_path / "f.json")]) == 2


def _refuse(*args, **kwargs):
    raise AssertionError("read_codes called: the memory engine ran")


def test_cli_auto_reads_in_memory_when_the_batch_does_not_fit(data, tmp_path, monkeypatch):
    from dpcore.cli import main
    path, schema = data
    (tmp_path / "schema.json").write_text(json.dumps(schema.to_dict()))
    monkeypatch.setattr("dpcore.counted.DEFAULT_BATCH_BYTES", 1024)
    monkeypatch.setattr(Synthesizer, "fit_file", _refuse)
    assert main(["synth", "--data", str(path), "--schema", str(tmp_path / "schema.json"),
                 "--mechanism", "mst", "--epsilon", "1", "--delta", "1e-9", "--seed", "3",
                 "--quiet", "--out", str(tmp_path / "o.csv"),
                 "--ledger", str(tmp_path / "l.json")]) == 0


RULED = {"columns": {
    "AGE": {"type": "numeric", "lower": 0, "upper": 59, "integer": True, "bins": [0, 16, 30, 59]},
    "IND": {"type": "categorical", "categories": ["N", "a1", "a2", "b1"]},
    "CAT": {"type": "categorical", "categories": ["N", "A", "B"]}},
    "constraints": [{"type": "derived", "name": "industry", "column": "CAT", "from": "IND",
                     "map": {"N": "N", "a1": "A", "a2": "A", "b1": "B"}}]}


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_fit_file_with_a_derived_column_and_parquet(tmp_path, name):
    """MST's curator holds the measured columns only (the file's columns are picked per
    chunk), AIM's all of them (it measures the derived one as a coarsening); a Parquet file
    is read in row groups. Both as in memory."""
    from dpcore.schema import Schema
    pytest.importorskip("pyarrow")
    schema = Schema.from_dict(RULED)
    rng = np.random.default_rng(0)
    age = rng.integers(0, 60, 1200)
    ind = rng.choice(["N", "a1", "a2", "b1"], 1200)
    df = pd.DataFrame({"AGE": age.astype(str), "IND": ind,
                       "CAT": pd.Series(ind).map(RULED["constraints"][0]["map"])})
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_parquet(tmp_path / "r.parquet", index=False, row_group_size=500)
    mem = _fit(name, "codes", tmp_path / "r.csv", schema)
    for path in (tmp_path / "r.csv", tmp_path / "r.parquet"):
        got = _fit(name, "file", path, schema, chunk_rows=300)
        assert [(e.event, e.rho, e.what) for e in got.ledger.charges] == \
            [(e.event, e.rho, e.what) for e in mem.ledger.charges]
        pd.testing.assert_frame_equal(got.sample(), mem.sample())
        assert got.data_passes_ == 1


def test_a_bad_file_leaves_a_continued_ledger_as_it_was(data, tmp_path):
    from dpcore.accounting import PrivacyFilter
    path, schema = data
    bad = _bad_files(path, tmp_path)["value"]
    ledger = tmp_path / "lifetime.json"
    PrivacyFilter.from_approx_dp(4.0, 1e-9, ledger_path=ledger).close()
    before = ledger.read_bytes()
    synth = Synthesizer.create("aim", epsilon=1.0, delta=1e-9, seed=1, progress=False,
                               ledger_path=ledger, continue_ledger=True)
    with pytest.raises(EncodingError, match="row 2000"):
        synth.fit_file(bad, schema)
    assert ledger.read_bytes() == before and Ledger.load(ledger).spent == 0


def test_a_later_pass_encoding_error_leaves_no_data_facts_in_the_ledger(data, tmp_path):
    """A value error on a pass after the ledger opened (the input changed underneath): the
    run fails, and its public reason names the kind of error only, not the row, column or
    value (facts of the data, not released under DP)."""
    path, schema = data
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-9, seed=5, progress=False,
                               ledger_path=str(ledger))
    real = FileTable._count
    calls = []

    def fail_later(self, shape, subsets):
        calls.append(1)
        if len(calls) > 1:
            raise EncodingError("column 'age', row 1234: 'secret-value' is not a number",
                                column="age", row=1234, value="secret-value")
        return real(self, shape, subsets)

    import unittest.mock as mock
    with mock.patch.object(FileTable, "_count", fail_later), pytest.raises(EncodingError):
        synth.fit_file(path, schema, batch_bytes=batch_bytes(schema.domain(), [("sex",)]))
    text = ledger.read_text()
    assert "EncodingError" in text and "failed" in text
    # The row number alone could occur by chance in a hash or a rational, so the whole file is
    # searched for the phrase and the close entry (the only place a reason is written) for it.
    assert "row 1234" not in text and "secret-value" not in text and "'age'" not in text
    closing = [e for e in Ledger.load(ledger).entries if e.kind == "close"]
    assert closing and "1234" not in json.dumps(closing[-1].what)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "none"])
@pytest.mark.parametrize("block", [100, 1 << 20])
def test_the_block_reader_hashes_the_bytes_it_reads(data, tmp_path, monkeypatch, ending, block):
    """read_and_hash over the block reader: the file's SHA-256 from the bytes as they were
    read (header, every block, a last line without its end), without a second pass."""
    import dpcore.counted as counted
    path, schema = data
    text = path.read_text().splitlines()[:200]
    raw = (ending if ending != "none" else "\n").join(text) + (ending if ending != "none" else "")
    target = tmp_path / "t.csv"
    target.write_bytes(raw.encode())
    _small_blocks(monkeypatch, block)
    monkeypatch.setattr(counted, "file_sha256", lambda p: pytest.fail("a second pass"))
    codes, digest = counted.read_and_hash(target, lambda: read_codes(target, schema))
    assert digest == hashlib.sha256(raw.encode()).hexdigest()
    assert len(codes) == 199


def test_a_pass_that_did_not_read_the_whole_file_is_hashed_again(data, tmp_path, monkeypatch):
    """A reader stopped early, a quoted file read by pandas (not the block reader), or a file
    read and then another: the digest is still the file's, from a second pass."""
    import dpcore.counted as counted
    path, schema = data
    _small_blocks(monkeypatch, 5000)
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    calls = []
    real = counted.file_sha256
    monkeypatch.setattr(counted, "file_sha256", lambda p: calls.append(p) or real(p))
    first, digest = counted.read_and_hash(path, lambda: next(iter_codes(path, schema)))
    assert digest == expected and len(calls) == 1 and len(first) < ROWS
    quoted = _quoted_late(path, tmp_path / "q.csv", 2)
    _, digest = counted.read_and_hash(quoted, lambda: read_codes(quoted, schema))
    assert digest == hashlib.sha256(quoted.read_bytes()).hexdigest() and len(calls) == 2
    # another file read inside the pass does not feed this file's digest
    _, digest = counted.read_and_hash(path, lambda: read_codes(quoted, schema))
    assert digest == expected and len(calls) == 3
    with open(path, "rb") as fh:
        assert counted.digest_for(fh) is None                # outside read_and_hash


def test_interleaved_reader_passes_never_mix_their_bytes_in_the_digest(tmp_path, monkeypatch):
    """Review 15b: two block-reader passes over the hashed file, interleaved, fed one hash
    (the second pass restarting it): the byte count matched the file, the order did not, and
    a wrong input commitment was recorded. Each pass now hashes on its own."""
    import hashlib
    from dpcore import counted, csvblocks
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n" + b"".join(b"%d,%d\n" % (i, i * 7) for i in range(40)))
    calls = []
    real = counted.file_sha256
    monkeypatch.setattr(counted, "file_sha256", lambda q: calls.append(q) or real(q))

    def read():
        a = csvblocks._line_blocks(path, 64)
        b = csvblocks._line_blocks(path, 64)
        next(a)
        next(a)
        next(b)
        for _ in a:           # A reads to the end
            pass
        next(b)
        b.close()             # B stops early
    _, digest = counted.read_and_hash(path, read)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest() and not calls


def test_a_curator_reads_a_counted_table_once_before_it_can_charge(small, tmp_path):
    # audit 16 F4: a Curator over a FileTable nobody had prefetched charged its first
    # measurement, then met a bad row on its first read: the budget spent for a file a free
    # pass refuses
    from dpcore import Curator
    from dpcore.accounting import PrivacyFilter
    path, schema = small
    bad = tmp_path / "bad.csv"
    lines = path.read_text().splitlines(keepends=True)
    bad.write_text("".join(lines[:300]) + lines[300].replace("Private", "NoSuchClass", 1)
                   + "".join(lines[301:]))
    budget = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    with pytest.raises(EncodingError, match="row 300"):
        Curator(FileTable(bad, schema), budget)
    assert budget.spent == 0 and len(budget.ledger) == 0
    table = FileTable(path, schema)
    curator = Curator(table, budget)
    assert table.passes == 1
    curator.measure(("sex",), sigma=10.0)
    assert budget.spent > 0 and table.passes == 2
    primed = FileTable(path, schema)
    primed.prefetch([("sex",)])
    Curator(primed, budget).measure(("sex",), sigma=10.0)
    assert primed.passes == 1                 # already read: no extra pass
