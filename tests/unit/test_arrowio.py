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
    synth.write(tmp_path / "s.csv", 2500, seed=9, chunk_rows=1000)
    got = pd.read_parquet(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(got, _whole(synth.sample(2500, seed=9), tmp_path / "w.pq"))
    # the CSV and the Parquet file encode to the same codes
    np.testing.assert_array_equal(read_codes(tmp_path / "s.parquet", synth.schema_),
                                  read_codes(tmp_path / "s.csv", synth.schema_))
