"""The compiled splitter's integer path (issue 21, session 16): a numeric column's integer
texts get their code from a step table (dpcore.csvblocks.integer_steps, read by
dpcore._core.CsvSplitter) instead of a text lookup. Checked against brute force: the step
table against the encoder on every integer of a random column's range, and whole files read
by the compiled reader against the same reader without the integer path (the text path of
session 15: same codes, or the same typed error: class, message, row, column), on random
schemas and random, also malformed, cells. (Not against the pandas reader: it already
differs from the compiled one on some malformed files, e.g. "007" in a column with
out-of-bounds rows, which of two bad rows it names.)"""
from __future__ import annotations

import bisect
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from dpcore import _core, csvblocks
from dpcore.encoding import EncodingError, _encode_column, read_codes
from dpcore.schema import Schema, SchemaError


@st.composite
def numeric_columns(draw):
    """A numeric column's dict: integer or fractional edges (point masses too) in a range small
    enough to check every integer of it."""
    lower = draw(st.integers(-300, 300))
    width = draw(st.integers(0, 600))
    integer = draw(st.booleans())
    inner = draw(st.lists(st.integers(lower, lower + width) if integer else
                          st.floats(lower, lower + width, allow_nan=False),
                          min_size=0, max_size=8))
    edges = sorted({float(lower), float(lower + width), *map(float, inner)})
    if len(edges) < 2:
        edges = [edges[0], edges[0]]                        # one point mass
    if integer and draw(st.booleans()) and len(edges) > 2:  # a repeated pair: a point mass
        k = draw(st.integers(1, len(edges) - 2))
        edges.insert(k, edges[k])
    return {"type": "numeric", "lower": edges[0], "upper": edges[-1], "bins": edges,
            "integer": integer, "out_of_bounds": draw(st.sampled_from(["error", "clip"])),
            "missing": draw(st.sampled_from(["error", "code"]))}


TOKENS = st.lists(st.sampled_from(["", "NA", "?", "-1", "0", "007"]), max_size=3, unique=True)


def _schema(columns: dict, tokens: list[str]) -> Schema:
    try:   # a drawn integer bin may hold no integer (e.g. [1, 1, 2] makes (1, 2) empty)
        return Schema.from_dict({"missing_values": tokens, "columns": columns})
    except SchemaError:
        reject()


def _step_code(steps, x):
    starts, codes, last = steps
    if x < starts[0] or x > last:
        return None
    return codes[bisect.bisect_right(starts, x) - 1]


@settings(max_examples=150, deadline=None)
@given(numeric_columns(), TOKENS)
def test_steps_are_the_encoders_codes_on_every_integer(column, tokens):
    schema = _schema({"n": column}, tokens)
    col = schema.columns[0]
    steps = csvblocks.integer_steps(col, schema.missing_values)
    if steps is None:      # allowed only for an integer-like missing token
        assert any(t.lstrip("-").isdigit() for t in tokens)
        return
    lo, hi = int(np.ceil(col.lower)), int(np.floor(col.upper))
    xs = list(range(lo - 2, hi + 3))
    for x in xs:
        got = _step_code(steps, x)
        if lo <= x <= hi:
            want = int(_encode_column(col, pd.Series([str(x)], dtype=object),
                                      schema.missing_values, 0, False)[0])
            assert got == want, (x, steps)
        else:
            assert got is None


# cells of a numeric column: integers in and out of the range, texts the integer path must
# leave to the encoder ("007", "-0", "+5", " 5", "5.0", "1e2", 19 digits), junk, tokens
INT_CELLS = st.one_of(
    st.integers(-400, 1000).map(str),
    st.sampled_from(["007", "-0", "0", "+5", " 5", "5 ", "5.0", "1e2", "-", "", "NA", "?",
                     "-1", "1" * 19, "9" * 18, "-" + "9" * 18, "x", "1_0", "½"]))
CAT_CELLS = st.sampled_from(["a", "b", "c", "", "NA", "zz", "12"])
_STEPS = csvblocks.integer_steps


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(numeric_columns(), min_size=1, max_size=3), TOKENS, st.data(),
       st.sampled_from([8, 40, 1 << 20]), st.booleans())
def test_compiled_reader_is_the_text_path(numeric, tokens, data, block_bytes, debug):
    columns = {f"n{i}": c for i, c in enumerate(numeric)}
    columns["c"] = {"type": "categorical", "categories": ["a", "b", "12"], "missing": "code"}
    schema = _schema(columns, tokens)
    names = list(columns)
    rows = data.draw(st.lists(st.tuples(*[INT_CELLS] * len(numeric), CAT_CELLS),
                              min_size=0, max_size=30))
    # mostly good rows: draw integers inside each range too, so a file often reads whole,
    # often next to a bin edge (where a step table one off would show)
    def cell(i, c):
        lo, hi = int(np.ceil(c["lower"])), int(np.floor(c["upper"]))
        if lo > hi:
            return "0"
        edges = schema.columns[names.index(f"n{i}")].edges
        near = sorted({int(np.floor(e)) + d for e in edges for d in (-1, 0, 1, 2)
                       if lo <= int(np.floor(e)) + d <= hi}) or [lo]
        return str(data.draw(st.one_of(st.integers(lo, hi), st.sampled_from(near))))
    good = [tuple([cell(i, c) for i, c in enumerate(numeric)] + ["a"])
            for _ in range(data.draw(st.integers(0, 30)))]
    mixed = data.draw(st.permutations(rows + good))
    text = ",".join(names) + "\n" + "".join(",".join(r) + "\n" for r in mixed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_text(text, encoding="utf-8")
        old = csvblocks.CSV_BLOCK_BYTES
        csvblocks.CSV_BLOCK_BYTES = block_bytes
        try:
            got = _outcome(lambda: read_codes(path, schema, engine="compiled", debug=debug))
            csvblocks.integer_steps = lambda col, tokens: None    # every field a text
            want = _outcome(lambda: read_codes(path, schema, engine="compiled", debug=debug))
        finally:
            csvblocks.CSV_BLOCK_BYTES = old
            csvblocks.integer_steps = _STEPS
    assert got == want


def _outcome(read):
    try:
        return read().tolist()
    except EncodingError as err:
        return type(err).__name__, str(err), err.row, err.column


def test_splitter_takes_only_integers_written_the_one_way():
    """The parse itself: a text that is not the canonical integer of its value keeps its text
    (position marked negative), so the encoder decides about it."""
    sp = _core.CsvSplitter(",", 2, 1 << 10)
    sp.set_integer_steps(0, [-5, 0, 10], [7, 8, 9], 20)
    cells = ["-5", "-1", "0", "9", "10", "20", "21", "-6", "007", "-0", "+5", " 5", "5.0",
             "", "-", "1" * 19, "x"]
    status, rows, parts = sp.split("".join(f"{c},z\n" for c in cells).encode())
    assert status == "plain" and rows == len(cells)
    positions, texts, _ = parts[0]
    assert positions[:6].tolist() == [7, 7, 8, 8, 9, 9]
    assert (positions[6:] < 0).all()
    assert [texts[~p] for p in positions[6:]] == cells[6:]


def test_no_steps_past_the_bin_cap():
    """A column of more bins than MAX_STEP_BINS keeps the text path: its steps would cost the
    encoder thousands of texts before the first block."""
    edges = list(range(csvblocks.MAX_STEP_BINS + 2))
    many = _schema({"n": {"type": "numeric", "lower": 0, "upper": edges[-1], "bins": edges,
                          "integer": True}}, [])
    assert csvblocks.integer_steps(many.columns[0], ()) is None
    few = _schema({"n": {"type": "numeric", "lower": 0, "upper": 10, "bins": [0, 5, 10],
                         "integer": True}}, [])
    assert csvblocks.integer_steps(few.columns[0], ()) == ([0, 5], [0, 1], 10)
