"""The pyarrow CSV reader and the pandas typed reader agree on generated small CSVs (issue
21): the same codes, or the same typed error (class, message, row) — with quoting (pandas
then reads it), missing values, unknown categories, bad numbers, ragged rows, CRLF."""
from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.encoding import read_codes
from dpcore.schema import Schema

pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict({"missing_values": ["", "NA"], "columns": {
    "c": {"type": "categorical", "categories": ["a", "b", "3", "x y"], "missing": "code"},
    "k": {"type": "categorical", "categories": ["u", "v"]},
    "n": {"type": "numeric", "lower": 0, "upper": 50, "bins": 5, "integer": True,
          "missing": "code"},
    "f": {"type": "numeric", "lower": -1, "upper": 1, "bins": 4, "out_of_bounds": "clip"}}})

cells = {
    "c": st.sampled_from(["a", "b", "3", "3.0", "x y", "", "NA", "zz", "A", "a,b", 'q"t',
                          "\ufeffa"]),     # a byte-order mark pyarrow drops at a block's start
    "k": st.sampled_from(["u", "v", "w", "", " u", "\ufeffu"]),
    "n": st.one_of(st.integers(-2, 60).map(str), st.sampled_from(["", "NA", "1.5", "x", "7.0",
                                                                   "1e1", "+3", " 4"])),
    "f": st.one_of(st.floats(-3, 3, allow_nan=False).map(repr),
                   st.sampled_from(["0", "-0", "nan", "1e400", ".5", ""]))}
rows = st.lists(st.fixed_dictionaries(cells), min_size=0, max_size=12)


def _text(draw_rows, order, quoting, newline, ragged):
    out = io.StringIO()
    writer = csv.writer(out, quoting=quoting, lineterminator=newline)
    writer.writerow(order)
    for i, row in enumerate(draw_rows):
        fields = [row[c] for c in order]
        writer.writerow(fields[:-1] if i == ragged else fields)
    return out.getvalue()


def _outcome(path, engine):
    try:
        return read_codes(path, SCHEMA, engine=engine).tolist()
    except Exception as err:   # noqa: BLE001 - compared, not swallowed
        return type(err).__name__, str(err), getattr(err, "row", None)


@settings(max_examples=150, deadline=None)
@given(rows, st.permutations(["c", "k", "n", "f"]),
       st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]), st.sampled_from(["\n", "\r\n"]),
       st.integers(-1, 12))
def test_block_and_pandas_readers_agree(draw_rows, order, quoting, newline, ragged):
    text = _text(draw_rows, order, quoting, newline, ragged)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_bytes(text.encode("utf-8"))
        slow = _outcome(path, "pandas")
        assert _outcome(path, "auto") == slow
        for engine in ("compiled", "pyarrow"):   # the two block parsers, where they read it
            fast = _outcome(path, engine)
            if not (isinstance(fast, tuple) and "without quotes" in fast[1]):
                assert fast == slow


@pytest.mark.parametrize("block", [1 << 20, 8])
@pytest.mark.parametrize("before", [0, 20])
def test_a_byte_order_mark_in_the_data_is_not_dropped(tmp_path, monkeypatch, block, before):
    # audit 16 F6: pyarrow drops a byte-order mark at the start of each block it parses (the
    # file's first data row, and with small blocks any row): it read "a" where pandas refuses
    import dpcore.csvblocks as csvblocks
    monkeypatch.setattr(csvblocks, "CSV_BLOCK_BYTES", block)
    path = tmp_path / "bom.csv"
    path.write_bytes(b"c,k,n,f\n" + b"a,u,1,0\n" * before + b"\xef\xbb\xbfa,u,1,0\nb,v,2,0\n")
    slow = _outcome(path, "pandas")
    assert slow[0] == "EncodingError" and slow[2] == before + 1
    assert _outcome(path, "auto") == slow
    for engine in ("compiled", "pyarrow"):
        fast = _outcome(path, engine)
        assert fast == slow or (engine == "pyarrow" and "byte-order marks" in fast[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet=st.sampled_from(list("0123456789+-.eE _\n١")),
                                  max_size=6),
                          st.floats(allow_nan=True), st.none()), max_size=8))
def test_a_column_of_numbers_is_read_as_one_value_at_a_time(values):
    """The one-regex-run conversion of a column's distinct texts gives what the per-value
    grammar gives (NaN for what is not a plain decimal)."""
    import numpy as np
    from dpcore.encoding import _number_of, _numbers_of
    got = _numbers_of(np.array(values, dtype=object))
    want = np.array([_number_of(v) for v in values], dtype=np.float64)
    assert np.array_equal(got, want, equal_nan=True)
