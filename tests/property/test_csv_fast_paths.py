"""The compiled CSV paths tuned in session 17 against plain Python, on random inputs:

* the splitter's field lookup (a field's first 16 bytes masked by its size from a table, no
  branch on the size) against a Python split that numbers each column's texts in order of
  first sight -- texts of every size around the 8- and 16-byte head boundaries, sharing
  prefixes, and fields close to the block's end (where the head is copied, not loaded);
* CodeCsvFormat's drawn values (``lo + floor(u * width)`` computed by truncation, and in
  integers where that is exact) against NumPy's ``np.floor`` arithmetic, for bounds and
  widths up to 2^62 and draws at the ends of [0, 1).
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from dpcore import _core

# few letters: many texts share prefixes, so a wrong mask would merge or split them; and a
# stem with one byte changed at any index 0..40 (review 17c: a head keeping 15 of 16 bytes
# merged texts differing at byte 15, which random letters almost never reached)
_STEM = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"
_TEXT = st.one_of(
    st.text(alphabet="ab-é", min_size=0, max_size=40),
    st.tuples(st.integers(1, 41), st.integers(0, 40)).map(
        lambda t: _STEM[:t[0]][:t[1]] + "_" + _STEM[:t[0]][t[1] + 1:]))


def _python_split(lines: list[list[str]]) -> list[tuple[list[int], list[str]]]:
    out = []
    for j in range(len(lines[0])):
        seen: dict[str, int] = {}
        positions = [seen.setdefault(row[j], len(seen)) for row in lines]
        out.append((positions, list(seen)))
    return out


@settings(max_examples=300, deadline=None)
@given(columns=st.integers(1, 4), data=st.data(), crlf=st.booleans(), last_end=st.booleans())
def test_split_numbers_texts_as_python_does(columns, data, crlf, last_end):
    rows = data.draw(st.lists(st.lists(_TEXT, min_size=columns, max_size=columns),
                              min_size=1, max_size=30))
    # an empty line (one column, empty text) is not plain: give such a row a letter
    rows = [r if columns > 1 or r[0] else ["a"] for r in rows]
    eol = "\r\n" if crlf else "\n"
    text = eol.join(",".join(r) for r in rows) + (eol if last_end else "")
    status, count, parts = _core.split_csv(text.encode(), ",", columns)
    assert (status, count) == ("plain", len(rows))
    assert [(p.tolist(), t) for p, t in parts] == _python_split(rows)
    # the splitter of a file, the same text in two blocks: the second block finds every text
    splitter = _core.CsvSplitter(",", columns, 1 << 16)
    block = (eol.join(",".join(r) for r in rows) + eol).encode()
    splitter.split(block)
    status, count, again = splitter.split(block)
    assert status == "plain"
    assert [(p.tolist(), t) for p, t, _ in again] == [(p, []) for p, _ in _python_split(rows)]


def _reference(lo, width, codes, u):
    """Each row's field: NumPy's lo + floor(u * width) where drawn, the text 'm' otherwise."""
    out = []
    for c, x in zip(codes.tolist(), u.tolist()):
        if c < len(lo):
            out.append(str(int(np.float64(lo[c]) + np.floor(np.float64(x) * width[c]))))
        else:
            out.append("m")
    return out


# integer bounds within 2^53 (the writer's exact path: the sum in integers), integers just
# past it (the double path: review 17c found the |lo| <= 2^53 condition untested), and any
# doubles up to 2^62 (the sum in doubles, as NumPy's)
_BOUND = st.one_of(st.integers(-(2 ** 53), 2 ** 53).map(float),
                   st.sampled_from([-(2.0 ** 53) - 2, 2.0 ** 53 + 2, -(2.0 ** 54), 2.0 ** 54]),
                   st.floats(-(2.0 ** 62) + 2 ** 11, 2.0 ** 62 - 2 ** 11, allow_nan=False))
_WIDTH = st.one_of(st.integers(1, 2 ** 40).map(float), st.floats(1.0, 2.0 ** 62))


@settings(max_examples=400, deadline=None)
@given(bins=st.lists(st.tuples(_BOUND, _WIDTH), min_size=1, max_size=4),
       data=st.data())
def test_drawn_values_are_numpys_floor(bins, data):
    bins = [(lo, w) for lo, w in bins if abs(lo + w) < 2.0 ** 62] or [(0.0, 1.0)]
    lo = np.array([b[0] for b in bins])
    width = np.array([b[1] for b in bins])
    n = data.draw(st.integers(1, 40))
    codes = np.array(data.draw(st.lists(st.integers(0, len(bins)), min_size=n, max_size=n)),
                     dtype=np.uint8)
    edges = st.sampled_from([0.0, 2.0 ** -53, 0.5, 1.0 - 2.0 ** -53])
    u = np.array(data.draw(st.lists(st.one_of(edges, st.floats(0.0, 1.0, exclude_max=True)),
                                    min_size=n, max_size=n)))
    fmt = _core.CodeCsvFormat([([""] * len(bins) + ["m"], lo, width), (["x"], None, None)],
                              ",", "\n")
    buffer = bytearray(n * fmt.max_row_bytes + fmt.slack)
    rows = np.stack([codes, np.zeros(n, dtype=np.uint8)], axis=1)
    size = fmt.format(rows, [u], buffer)
    got = bytes(buffer[:size]).decode().splitlines()
    assert got == [f + ",x" for f in _reference(lo, width, codes, u)]


@settings(max_examples=100, deadline=None)
@given(rows=st.integers(1, 1100), columns=st.integers(1, 5), data=st.data())
def test_gather_codes_is_numpys_take(rows, columns, data):
    """gather_codes works in tiles of 256 rows (review 17c: a tile dropping its last row was
    caught only indirectly): every row and column, around the tile edges, against NumPy."""
    sizes = data.draw(st.lists(st.integers(1, 300), min_size=columns, max_size=columns))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    positions = [rng.integers(0, k, rows).astype(np.int32) for k in sizes]
    tables = [rng.integers(0, 250, k).astype(np.int64) for k in sizes]
    out = np.zeros((rows, columns), dtype=np.uint8)
    _core.gather_codes(positions, tables, [False] * columns, out)
    want = np.stack([t[p] for t, p in zip(tables, positions)], axis=1)
    assert np.array_equal(out, want)
