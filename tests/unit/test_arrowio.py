"""pyarrow I/O (issue 21): the streaming Parquet writer gives the file of the whole table."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.datasets import adult
from dpcore.encoding import decode_codes, read_codes, write_table
from dpcore.schema import Schema
from mechanisms import Synthesizer

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SCHEMA = Schema.from_dict({"columns": {
    "c": {"type": "categorical", "categories": ["a", "b", "32"], "other": "zz",
          "missing": "code"},
    "n": {"type": "numeric", "lower": 0, "upper": 100, "bins": 7, "integer": True,
          "missing": "code"},
    "x": {"type": "numeric", "lower": -1, "upper": 1, "bins": 4, "missing": "code"},
    "m": {"type": "numeric", "lower": 0, "upper": 9, "bins": 3, "decode": "midpoint"}}})


def _whole(frame: pd.DataFrame, path) -> pd.DataFrame:
    frame.to_parquet(path, index=False)
    return pd.read_parquet(path)


@pytest.mark.parametrize("size", [1, 4, 7, 30])
def test_chunks_read_back_as_the_whole_tables_parquet(tmp_path, size):
    """Chunks whose dtypes differ (int64 / Int64 where a chunk has a missing value; a column
    all missing, type null, in the first chunks) read back as the whole table's file."""
    codes = np.zeros((30, 4), dtype=np.uint8) + [0, 1, 1, 2]
    codes[9:, 0] = 4        # "c": missing from row 9 on (missing code 4); rows 0-8: "a"
    codes[:9, 0] = 4        # ... and rows 0-8 too: "c" is all missing at first
    codes[12:, 0] = [0, 1, 2, 3] * 4 + [0, 1]
    codes[20, 1] = 7        # "n": missing only in row 20 (Int64 in that chunk)
    codes[25, 2] = 4        # "x": NaN in row 25
    frame = decode_codes(codes, SCHEMA, seed=0)
    expected = _whole(frame, tmp_path / "whole.parquet")
    rows = write_table((frame.iloc[s:s + size] for s in range(0, 30, size)),
                       tmp_path / "parts.parquet")
    assert rows == 30
    got = pd.read_parquet(tmp_path / "parts.parquet")
    pd.testing.assert_frame_equal(got, expected)
    assert pq.ParquetFile(tmp_path / "parts.parquet").metadata.num_row_groups == -(-30 // size)
    assert not list(tmp_path.glob(".*.tmp"))       # the temporary file was renamed


def test_a_column_missing_in_every_chunk_stays_as_the_whole_tables(tmp_path):
    frame = decode_codes(np.zeros((10, 4), dtype=np.uint8) + [4, 7, 4, 0], SCHEMA, seed=1)
    expected = _whole(frame, tmp_path / "whole.parquet")
    write_table((frame.iloc[s:s + 3] for s in range(0, 10, 3)), tmp_path / "parts.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "parts.parquet"), expected)


def test_a_column_missing_in_many_first_chunks_becomes_text(tmp_path):
    codes = np.zeros((40, 4), dtype=np.uint8) + [4, 1, 1, 0]
    codes[-1, 0] = 1        # "c" gets its first value in the last of 40 one-row chunks
    frame = decode_codes(codes, SCHEMA, seed=2)
    write_table((frame.iloc[[s]] for s in range(40)), tmp_path / "late.parquet")
    got = pd.read_parquet(tmp_path / "late.parquet")
    assert got["c"].isna().sum() == 39 and got["c"].iloc[-1] == "b"
    pd.testing.assert_frame_equal(got.drop(columns="c"), frame.drop(columns="c"),
                                  check_dtype=False)


def test_a_failed_parquet_write_leaves_no_file(tmp_path):
    frame = decode_codes(np.zeros((6, 4), dtype=np.uint8), SCHEMA, seed=0)

    def chunks():
        yield frame.iloc[:3]
        raise RuntimeError("the sampler failed")

    with pytest.raises(RuntimeError, match="sampler failed"):
        write_table(chunks(), tmp_path / "out.parquet")
    assert list(tmp_path.iterdir()) == []


def test_synthesizer_parquet_holds_the_csv_rows(tmp_path):
    """write() to .parquet, chunk by chunk: the rows of the CSV writer and of sample()."""
    df, schema = adult()
    synth = Synthesizer.create("mst", epsilon=1.0, seed=3, progress=False).fit(df.iloc[:3000],
                                                                                schema)
    assert synth.write(tmp_path / "s.parquet", 2500, seed=9, chunk_rows=1000) == 2500
    assert pq.ParquetFile(tmp_path / "s.parquet").metadata.num_row_groups == 3
    # the chunks' category columns are written as dictionaries, stored as plain text
    assert str(pq.read_schema(tmp_path / "s.parquet").field("workclass").type) == "string"
    synth.write(tmp_path / "s.csv", 2500, seed=9, chunk_rows=1000)
    got = pd.read_parquet(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(got, _whole(synth.sample(2500, seed=9), tmp_path / "w.pq"))
    # the CSV and the Parquet file encode to the same codes
    np.testing.assert_array_equal(read_codes(tmp_path / "s.parquet", synth.schema_),
                                  read_codes(tmp_path / "s.csv", synth.schema_))


# ---------------------------------------------------------------- the pyarrow CSV reader
def _outcome(path, schema, engine, **kwargs):
    try:
        return read_codes(path, schema, engine=engine, **kwargs).tolist()
    except Exception as err:   # noqa: BLE001 - compared, not swallowed
        return type(err), str(err), getattr(err, "row", None)


def _both(path, schema, **kwargs):
    """The codes, or the error (type, text, row), of the default engine (the compiled block
    reader where the file is plain CSV) and of the pandas reader; the explicit block engines
    (compiled, pyarrow) must agree too wherever they read the file."""
    fast, slow = (_outcome(path, schema, e, **kwargs) for e in ("auto", "pandas"))
    for engine in ("compiled", "pyarrow"):
        got = _outcome(path, schema, engine, **kwargs)
        if not (isinstance(got, tuple) and "without quotes" in got[1]):
            assert got == fast, engine
    return [fast, slow]


@pytest.mark.parametrize("engine", ["compiled", "pyarrow"])
def test_block_readers_give_the_pandas_codes_on_adult(tmp_path, monkeypatch, engine):
    import dpcore.csvblocks as csvblocks
    df, schema = adult()
    path = tmp_path / "adult.csv"
    df.to_csv(path, index=False)
    monkeypatch.setattr(csvblocks, "CSV_BLOCK_BYTES", 1 << 16)     # many blocks
    fast = read_codes(path, schema, engine=engine)
    np.testing.assert_array_equal(fast, read_codes(path, schema, engine="pandas"))
    assert fast.dtype == schema.code_dtype() and len(fast) == len(df)
    np.testing.assert_array_equal(read_codes(path, schema), fast)   # auto is compiled


@pytest.mark.parametrize("body", [
    "a,5,0.5,1\nb,,-1,9\n32.0,100,1e-1,3\n",         # missing n (code), "32.0" is "32"
    "a,5,0.5,1\r\nq,7,-0.25,0\r\n",                  # CRLF; q goes to "other"
    "a,5,0.5,1\nb,500,0,1\n",                        # out of bounds: row 2
    "a,5,0.5,1\nb,x,0,1\n",                          # not a number
    "a,5,0.5,1\nb,1,0\n",                            # ragged
    "a,5,0.5,1,\nb,1,0,1,\n",                        # trailing delimiters
    "a,5,2.5,1\nb,1,0\n",                            # a bad value before a ragged row
    "a,5,0.5,1\n\nb,1,0,1\n",                        # a blank line
    "a,5,0.5,1\nb,1,0,1",                            # no final newline
    "a,5,0.5,1\nb,1,0,1\r",                          # a final CR
    "",                                              # a header only
    "a, 5,0.5,1\n",                                  # a space is not trimmed
    "a,5,0.5,1\n\xff,1,0,1\n",                       # not UTF-8 (written as latin-1)
])
def test_pyarrow_reader_gives_the_pandas_codes_and_errors(tmp_path, body):
    path = tmp_path / "t.csv"
    path.write_bytes(("c,n,x,m\n" + body).encode("latin-1"))
    fast, slow = _both(path, SCHEMA_READ)
    assert fast == slow


def test_quoted_files_are_read_by_pandas(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('c,n,x,m\na,5,0.5,1\n"b",1,0,1\n', encoding="utf-8")
    for engine in ("pyarrow", "compiled"):
        with pytest.raises(ValueError, match="without quotes"):
            read_codes(path, SCHEMA_READ, engine=engine)
    plain = tmp_path / "p.csv"
    plain.write_text('c,n,x,m\na,5,0.5,1\nb,1,0,1\n', encoding="utf-8")
    np.testing.assert_array_equal(read_codes(path, SCHEMA_READ), read_codes(plain, SCHEMA_READ))
    with pytest.raises(ValueError, match="engine must be one of"):
        read_codes(path, SCHEMA_READ, engine="arrow")


SCHEMA_READ = Schema.from_dict({"columns": {
    "c": {"type": "categorical", "categories": ["a", "b", "32"], "other": "zz"},
    "n": {"type": "numeric", "lower": 0, "upper": 100, "bins": 7, "integer": True,
          "missing": "code"},
    "x": {"type": "numeric", "lower": -1, "upper": 1, "bins": 4},
    "m": {"type": "numeric", "lower": 0, "upper": 9, "bins": 3, "decode": "midpoint"}}})


SCHEMA_MISSING = Schema.from_dict({"columns": {
    "c": {"type": "categorical", "categories": ["a", "b"], "missing": "code"},
    "n": {"type": "numeric", "lower": 0, "upper": 10, "bins": 10, "integer": True,
          "missing": "code"}}})


@pytest.mark.parametrize("text", [
    b"c,n\na,5\n\nb,6\n",          # a blank line that every column could read as missing
    b"c,n\r\na,5\r\n\r\nb,6\r\n",  # the same with CRLF
    b"c,n\na,5\nb,6\n\n",          # a trailing blank line
    b"\nc,n\na,5\n",               # a blank first line
    b"c,n\ra,5\nb,6\n",            # a header ended by a bare CR
    b"c,n\ra,5\rb,6\r",            # CR line endings throughout
])
def test_blank_lines_and_bare_cr_headers_read_as_pandas_reads_them(tmp_path, text):
    # pyarrow would make a blank line a row of empty fields (all missing here) and a header
    # ended by a bare CR would swallow the first row: such files go to the pandas reader.
    path = tmp_path / "t.csv"
    path.write_bytes(text)
    fast, slow = _both(path, SCHEMA_MISSING)
    assert fast == slow


def test_a_public_layout_fixes_the_parquet_types_whatever_the_chunk(tmp_path):
    """With the public schema's layout, a chunk without missing values, one with them and one
    whose text column is all missing write the same types (no int64 / Int64 or string / null
    disagreement between the parts of a partitioned dataset)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from dpcore.arrowio import public_layout, write_parquet_chunks
    schema = Schema.from_dict({"columns": {
        "c": {"type": "categorical", "categories": ["a", "b"], "missing": "code"},
        "n": {"type": "numeric", "lower": 0, "upper": 10, "bins": 5, "integer": True,
              "missing": "code"},
        "x": {"type": "numeric", "lower": 0, "upper": 1, "bins": 2},
        "d": {"type": "datetime", "lower": "2020-01-01", "upper": "2020-12-31", "bins": 4},
        "k": {"type": "code", "size": 3}}})
    chunks = [decode_codes(np.array([[0, 1, 0, 1, 2], [1, 2, 1, 0, 0]]), schema, seed=0),
              pd.DataFrame({"c": [None, None], "n": pd.array([None, 7], dtype="Int64"),
                            "x": [np.nan, 1.0], "d": [None, None], "k": [1, 2]})]
    files = []
    for k, chunk in enumerate(chunks):
        files.append(tmp_path / f"p{k}.parquet")
        assert write_parquet_chunks([chunk], files[-1], public_layout(schema)) == 2
    a, b = (pq.read_schema(f) for f in files)
    assert a.equals(b, check_metadata=True)
    assert [f.type for f in a] == [pa.string(), pa.int64(), pa.float64(), pa.string(),
                                   pa.int64()]
    back = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    assert str(back["n"].dtype) == "Int64" and back["c"].isna().sum() == 2
    assert back["n"].tolist()[:2] == chunks[0]["n"].tolist() and pd.isna(back["n"][2])
    assert back["d"].tolist()[:2] == chunks[0]["d"].tolist()


@pytest.mark.parametrize("typed_rows, block_bytes", [(4, 1024), (3, 20), (250_000, 1 << 20)])
def test_the_earliest_bad_row_is_reported_whatever_the_chunking(tmp_path, monkeypatch,
                                                                 typed_rows, block_bytes):
    """A bad n on row 4 and a bad c on row 5: every reader, whatever its chunk sizes, reports
    row 4 (within a chunk the earliest row wins, not the first column)."""
    import dpcore.csvblocks as csvblocks
    import dpcore.encoding as encoding
    monkeypatch.setattr(encoding, "_TYPED_ROWS", typed_rows)
    monkeypatch.setattr(csvblocks, "CSV_BLOCK_BYTES", block_bytes)
    strict = Schema.from_dict({"columns": {
        "c": {"type": "categorical", "categories": ["a", "b"]},
        "n": {"type": "numeric", "lower": 0, "upper": 100, "bins": 7, "integer": True}}})
    path = tmp_path / "t.csv"
    path.write_text("c,n\na,1\nb,2\na,3\na,x\nq,5\nb,6\n")
    fast, slow = _both(path, strict, chunk_rows=typed_rows)
    assert fast == slow and fast[2] == 4 and "'n'" in fast[1]


def test_an_integer_column_with_a_null_is_read_as_integers(tmp_path):
    """Review 18: Arrow turns an int64 column holding a null into float64, which rounded
    2^53 + 1 onto an upper bound of 2^53 before the schema checked it (refused without the
    null, accepted with it)."""
    from dpcore.encoding import EncodingError
    schema = Schema.from_dict({"missing_values": [""], "columns": {"x": {
        "type": "numeric", "lower": 0, "upper": 2 ** 53, "bins": 4, "integer": True,
        "missing": "code"}}})
    for values in ([5, 2 ** 53 + 1], [5, 2 ** 53 + 1, None]):
        path = tmp_path / f"x{len(values)}.parquet"
        pq.write_table(pa.table({"x": pa.array(values, pa.int64())}), path)
        with pytest.raises(EncodingError, match="above the upper bound"):
            read_codes(path, schema)
    path = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"x": pa.array([5, 2 ** 53, None], pa.int64())}), path)
    codes = read_codes(path, schema)
    assert codes[:, 0].tolist() == [0, 3, schema.columns[0].missing_code]
