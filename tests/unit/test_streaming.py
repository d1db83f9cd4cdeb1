"""Bounded memory on one machine (issue 21): the typed chunked reader, the chunked decoder and
the streaming writer give exactly what the whole-table paths give."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpcore.encoding as encoding
from dpcore.accounting import Ledger
from dpcore.datasets import adult
from dpcore.encoding import (EncodingError, decode_codes, encode_frame, iter_csv_chunks,
                             read_codes, write_table)
from dpcore.schema import Schema
from mechanisms import Synthesizer

SCHEMA = Schema.from_dict({"columns": {
    "c": {"type": "categorical", "categories": ["a", "b", "32"], "other": "zz"},
    "n": {"type": "numeric", "lower": 0, "upper": 100, "bins": 7, "integer": True,
          "missing": "code"},
    "x": {"type": "numeric", "lower": -1, "upper": 1, "bins": 4},
    "m": {"type": "numeric", "lower": 0, "upper": 9, "bins": 3, "decode": "midpoint"}}})


def _csv(tmp_path, text: str, name: str = "t.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _plain_codes(path, schema, chunk_rows=3):
    """The old reader: every cell a Python string, encoded per row."""
    parts, rows = [], 0
    for chunk in iter_csv_chunks(path, chunk_rows=chunk_rows):
        parts.append(encode_frame(chunk, schema, row_offset=rows))
        rows += len(chunk)
    return np.concatenate(parts)


def test_typed_reader_gives_the_plain_readers_codes(tmp_path):
    rows = ["c,n,x,m", "a,5,0.5,1", "32.0,,-1,9", "q,100,1e-1,3", "b,7,-0.25,0", "32,0,1,4"]
    path = _csv(tmp_path, "\n".join(rows) + "\n")
    for chunk_rows in (1, 2, 100):
        got = read_codes(path, SCHEMA, chunk_rows=chunk_rows)
        assert got.dtype == SCHEMA.code_dtype()
        np.testing.assert_array_equal(got, _plain_codes(path, SCHEMA))
    assert got[:, 0].tolist() == [0, 2, 3, 1, 2]        # "32.0" is "32"; "q" goes to other


def test_typed_reader_on_adult_matches_the_plain_reader(tmp_path):
    df, schema = adult()
    path = tmp_path / "adult.csv"
    df.iloc[:3000].to_csv(path, index=False)
    np.testing.assert_array_equal(read_codes(path, schema, chunk_rows=1000),
                                  _plain_codes(path, schema, chunk_rows=1000))


@pytest.mark.parametrize("bad, where", [("a,5,0.5,1\nb,500,0,1", "row 2"),
                                        ("a,5,0.5,1\nb,x,0,1", "row 2"),
                                        ("a,5,2.5,1", "row 1")])
def test_typed_reader_raises_the_plain_readers_error(tmp_path, bad, where):
    path = _csv(tmp_path, "c,n,x,m\nb,1,0,0\n" + bad + "\n")
    with pytest.raises(EncodingError) as plain:
        _plain_codes(path, SCHEMA, chunk_rows=100)
    with pytest.raises(EncodingError) as typed:
        read_codes(path, SCHEMA, chunk_rows=2)
    assert str(typed.value) == f"{path}: {plain.value}"
    assert typed.value.row == plain.value.row and f"row {int(where[4:]) + 1}" in str(typed.value)


@pytest.mark.parametrize("body", ["1,2\n3\n", "1,2\n3,4,\n", "1,2\n\n3,4\n", "1,2\r\n3\r\n",
                                  "1,2\n3,4", "1,2\n3,4,5", '1,"2"\n3\n', "1,2\r3\n"])
def test_fast_row_check_agrees_with_the_csv_module(tmp_path, monkeypatch, body):
    path = _csv(tmp_path, "a,b\n" + body)

    def outcome():
        try:
            encoding._check_rows(path, ",", 2)
            return "ok"
        except EncodingError as err:
            return str(err)
    fast = outcome()
    monkeypatch.setattr(encoding, "_check_rows_fast", lambda *a: False)
    assert fast == outcome()


def test_chunked_decoding_equals_whole_decoding():
    rng = np.random.default_rng(1)
    codes = np.column_stack([rng.integers(0, s, 500) for s in SCHEMA.domain().shape])
    for seed in (0, 5, [3, 1]):
        whole = decode_codes(codes, SCHEMA, seed=seed)
        for size in (1, 7, 499, 500):
            parts = [decode_codes(codes[s:s + size], SCHEMA, seed=seed, start=s, total=500)
                     for s in range(0, 500, size)]
            pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
    with pytest.raises(ValueError, match="must lie in a table"):
        decode_codes(codes[:10], SCHEMA, seed=0, start=495, total=500)


def test_chunked_write_has_the_bytes_of_the_whole_write(tmp_path):
    frame = decode_codes(np.zeros((30, 4), dtype=np.uint8) + [0, 7, 1, 2], SCHEMA, seed=0)
    write_table(frame, tmp_path / "whole.csv", missing_token="NA")
    rows = write_table((frame.iloc[s:s + 4] for s in range(0, 30, 4)), tmp_path / "parts.csv",
                       missing_token="NA")
    assert rows == 30
    assert (tmp_path / "whole.csv").read_bytes() == (tmp_path / "parts.csv").read_bytes()


@pytest.fixture(scope="module")
def fitted():
    df, schema = adult()
    return Synthesizer.create("mst", epsilon=1.0, seed=3, progress=False).fit(df.iloc[:4000],
                                                                              schema)


def test_streaming_writer_writes_what_sample_returns(tmp_path, fitted):
    """The CLI's writer (chunks) against sample() + write_table (the whole table)."""
    missing = fitted.schema_.missing_values[0]          # write()'s default token
    write_table(fitted.sample(), tmp_path / "own.csv", missing_token=missing)
    assert fitted.write(tmp_path / "own-chunks.csv", chunk_rows=777) == len(fitted.sample())
    assert (tmp_path / "own.csv").read_bytes() == (tmp_path / "own-chunks.csv").read_bytes()
    write_table(fitted.sample(2500, seed=9), tmp_path / "n.csv", missing_token=missing)
    fitted.write(tmp_path / "n-chunks.csv", 2500, seed=9, chunk_rows=1000)
    assert (tmp_path / "n.csv").read_bytes() == (tmp_path / "n-chunks.csv").read_bytes()
    sizes = {len(c) for c in fitted.sample_chunks(2500, seed=9, chunk_rows=1000)}
    assert sizes == {1000, 500}
    with pytest.raises(ValueError, match="chunk_rows"):
        next(fitted.sample_chunks(10, chunk_rows=0))


def test_cli_output_and_ledger_equal_the_in_memory_fit(tmp_path):
    """dpcore synth (typed reader, streaming writer) against Synthesizer.fit on the same rows
    and seed: the same charges in the ledger and the same synthetic rows."""
    from dpcore.cli import main
    df, schema = adult()
    data = tmp_path / "data.csv"
    df.iloc[:3000].to_csv(data, index=False)
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(schema.to_dict()))
    assert main(["synth", "--data", str(data), "--schema", str(schema_path), "--mechanism",
                 "mst", "--epsilon", "1", "--delta", "1e-9", "--seed", "4", "--quiet",
                 "--out", str(tmp_path / "out.csv"), "--ledger", str(tmp_path / "l.json")]) == 0
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-9, seed=4, progress=False).fit(
        pd.read_csv(data, dtype=object, keep_default_na=False), schema)
    write_table(synth.sample(), tmp_path / "mem.csv", missing_token=schema.missing_values[0])
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "mem.csv").read_bytes()
    cli = Ledger.load(tmp_path / "l.json").charges
    mem = synth.ledger.charges
    assert len(cli) == len(mem) > 0
    assert [(e.event, e.rho, e.what) for e in cli] == [(e.event, e.rho, e.what) for e in mem]


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"a": ["x", None, "y z", ""], "b": np.array([1, -2, 30, 4], dtype=np.int64)}),
    pd.DataFrame({"a": ["x", "y"], "b": ["1", np.nan]}),
    pd.DataFrame({"a": ["x,y", "q"], "b": [1, 2]}),                 # needs quoting: pandas
    pd.DataFrame({"a": ['say "hi"', "q"], "b": [1, 2]}),
    pd.DataFrame({"a": ["x", "y"], "b": [0.1, 2.5]}),               # floats: pandas
    pd.DataFrame({"a": ["x", "y"], "b": pd.array([1, None], dtype="Int64")}),
    pd.DataFrame({"a": [True, False], "b": [1, 2]}),
    pd.DataFrame({"only": ["x", ""]}),
    pd.DataFrame({"a": pd.Series([], dtype=object), "b": pd.Series([], dtype=np.int64)}),
    pd.DataFrame({"a": pd.Categorical(["é", None, "x", "é"]),                # compiled writer
                  "b": np.array([2 ** 63 - 1, -2 ** 63, 0, 7], dtype=np.int64)}),
    pd.DataFrame({"a": pd.Categorical(["x", "y,z"]), "b": [1, 2]}),   # quoting: pandas
    pd.DataFrame({"a": pd.Categorical([1, 2]), "b": [1, 2]}),         # number labels: pandas
])
def test_the_fast_csv_text_is_pandas_text(tmp_path, monkeypatch, frame):
    monkeypatch.setattr(encoding, "_TEXT_ROWS", 3)       # a 4-row frame is written in 2 slices
    for header in (True, False):
        text = encoding._plain_csv(frame, "NA", ",", header=header)
        if text is not None:
            assert text == frame.to_csv(None, index=False, header=header,
                                        na_rep="NA").encode("utf-8")
    write_table([frame, frame], tmp_path / "t.csv", missing_token="NA")
    assert (tmp_path / "t.csv").read_text() == frame.to_csv(None, index=False, na_rep="NA") + \
        frame.to_csv(None, index=False, header=False, na_rep="NA")


def test_the_fast_csv_path_takes_decoded_adult():
    df, schema = adult()
    frame = decode_codes(encode_frame(df.iloc[:2000], schema), schema, seed=0)
    text = encoding._plain_csv(frame, "?", ",", header=True)
    assert text is not None and text == frame.to_csv(None, index=False, na_rep="?").encode()
    # the writers' categorical decoding: the same values, the same text
    cats = decode_codes(encode_frame(df.iloc[:2000], schema), schema, seed=0, categorical=True)
    assert any(isinstance(t, pd.CategoricalDtype) for t in cats.dtypes)
    as_objects = cats.astype(object)
    pd.testing.assert_frame_equal(as_objects.where(as_objects.notna(), None),
                                  frame.astype(object))
    assert encoding._plain_csv(cats, "?", ",", header=True) == text


@pytest.mark.parametrize("name", ["mst", "independent", "aim"])
def test_write_draws_the_rows_of_sample_a_block_at_a_time(tmp_path, monkeypatch, name):
    """write() and sample_chunks() draw a sampling block at a time (memory bounded by a block,
    not by n); the rows, the chunks' concatenation and the file's bytes are sample()'s."""
    import dpcore.junction_tree as junction_tree
    monkeypatch.setattr(junction_tree, "SAMPLE_BLOCK", 256)
    df, schema = adult()
    options = {"rounds": 16, "workload": "all-2way"} if name == "aim" else {}
    synth = Synthesizer.create(name, epsilon=1.0, delta=1e-9, seed=3, progress=False,
                               **options).fit(df.iloc[:2000], schema)
    n = 4 * 256 + 9
    whole = synth.sample(n, seed=5)
    # the block path draws no whole sample: sample_codes(n) must not be reached
    monkeypatch.setattr(synth, "sample_codes", lambda *a, **k: pytest.fail("drew n rows whole"))
    chunks = list(synth.sample_chunks(n, seed=5, chunk_rows=100))
    assert max(len(c) for c in chunks) <= 100 and sum(len(c) for c in chunks) == n
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole)
    synth.write(tmp_path / "w.csv", n, seed=5, chunk_rows=100)
    write_table(whole, tmp_path / "s.csv", missing_token=schema.missing_values[0])
    assert (tmp_path / "w.csv").read_bytes() == (tmp_path / "s.csv").read_bytes()


@pytest.mark.parametrize("seed, error", [(1.5, TypeError), ("7", TypeError), (True, TypeError),
                                         (-1, ValueError), (2 ** 64, ValueError)])
def test_a_bad_sample_seed_is_a_typed_error(seed, error):
    df, schema = adult()
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-9, seed=0,
                               progress=False).fit(df.iloc[:500], schema)
    for draw in (lambda: synth.sample(10, seed=seed), lambda: synth.sample_codes(10, seed=seed),
                 lambda: synth.sample_chunks(10, seed=seed)):   # refused at the call
        with pytest.raises(error, match="seed must be"):
            draw()
