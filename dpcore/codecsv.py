"""Synthetic codes straight to CSV text: decoding and formatting in one compiled pass.

:meth:`mechanisms.synthesizer.Synthesizer.write` used to turn each chunk of codes into a
DataFrame (:func:`dpcore.encoding.decode_codes`: an int64 copy, masks and NumPy temporaries
a column) and format that (:func:`dpcore.encoding.write_table`: int64 casts, a sizing pass,
a fresh ``bytes`` a slice). Here a column's codes map to prepared texts — a label, a code in
decimal, a bin's midpoint, the missing token — or, for an integer column decoded uniformly,
to ``a + floor(u * (b - a + 1))`` for the code's bin ``[a, b]`` and the row's uniform draw
``u`` (:class:`dpcore._core.CodeCsvFormat`), written into one buffer reused from chunk to
chunk. The bytes are those of ``write_table(decode_codes(...))`` (tested byte for byte):

* the draws are decode_codes': column ``q`` of the uniformly decoded columns (in schema
  order) takes draws ``q * total + start ...`` of ``default_rng(seed)``, as its chunked
  decoding skips to them (:meth:`numpy.random.PCG64.advance`: one 64-bit output a double);
* the arithmetic is NumPy's, in IEEE doubles: ``lo + floor(u * width)`` with ``lo = a`` and
  ``width = b - a + 1`` computed by NumPy, then truncated to an integer.

Only what the compiled writer formats without pandas takes this path (:func:`csv_plan`
returns None otherwise, and the caller decodes as before): at least two columns, each a
:class:`~dpcore.schema.CategoricalColumn` or :class:`~dpcore.schema.CodeColumn`, or an
integer :class:`~dpcore.schema.NumericColumn` (not a float or a date, which pandas
formats), no text holding the delimiter, a quote or a line break, and no schema rules.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np

from dpcore.schema import CategoricalColumn, CodeColumn, NumericColumn, Schema, integer_bin_range

__all__ = ["CsvPlan", "csv_plan", "write_codes_csv"]

#: Texts all columns together may hold (a code column of 2^53 values is not tabulated).
MAX_TEXTS = 1 << 20

#: Bytes of CSV text formatted a call, into one reused buffer (fits a large cache).
BUFFER_BYTES = 4 << 20


@dataclass(frozen=True)
class CsvPlan:
    """A schema's columns prepared for :func:`write_codes_csv`."""
    format: Any               # dpcore._core.CodeCsvFormat
    header: bytes


def _plain(text: Any, special: tuple[str, ...]) -> bool:
    if type(text) is not str or any(x in text for x in special):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _column(col: Any, missing: str, special: tuple[str, ...]) -> tuple | None:
    """(texts, lo, width) of one column for CodeCsvFormat, or None where pandas formats it."""
    if type(col) is CodeColumn:
        return ([str(c) for c in range(col.size)], None, None) if col.size <= MAX_TEXTS else None
    if type(col) is CategoricalColumn:
        labels = list(col.categories) + ([col.other] if col.other is not None else [])
        if not all(_plain(label, special) for label in labels):
            return None
        texts = labels + ([missing] if col.missing_code is not None else [])
        return (texts, None, None) if len(texts) == col.size else None
    if type(col) is not NumericColumn or not col.integer:
        return None
    ranges = np.array([integer_bin_range(col.edges, j) for j in range(col.bins)],
                      dtype=np.float64).reshape(col.bins, 2)
    a, b = ranges[:, 0], ranges[:, 1]
    tail = [missing] if col.missing_code is not None else []
    if col.decode == "midpoint":     # decode_codes' np.floor((a + b) / 2), one text a bin
        return [str(v) for v in np.floor((a + b) / 2).astype(np.int64).tolist()] + tail, \
            None, None
    if col.decode != "uniform" or not (np.abs(ranges) < 2.0 ** 62).all():
        return None
    return [""] * col.bins + tail, a, b - a + 1      # codes below bins are drawn


def csv_plan(schema: Schema, missing_token: str, sep: str) -> CsvPlan | None:
    """The compiled plan for writing ``schema``'s decoded codes as CSV, or None where the
    table needs pandas' formatting or schema rules (see the module docstring)."""
    from dpcore import _core
    from dpcore.encoding import check_delimiter
    sep = check_delimiter(sep)
    special = (sep, '"', "\n", "\r")
    names = list(schema.names)
    if len(names) < 2 or schema.constraints or not _plain(missing_token, special) \
            or not all(_plain(n, special) for n in names):
        return None
    columns = [_column(col, missing_token, special) for col in schema.columns]
    if any(c is None for c in columns) or sum(len(c[0]) for c in columns) > MAX_TEXTS:
        return None
    end = os.linesep                              # pandas' line terminator, as write_table
    return CsvPlan(_core.CodeCsvFormat(columns, sep, end), (sep.join(names) + end).encode())


def write_codes_csv(plan: CsvPlan, chunks: Iterable[np.ndarray], fh: Any, *, seed: Any,
                    total: int, start: int = 0) -> int:
    """Write the header and the rows of ``chunks`` (rows ``start, start + 1, ...`` of a
    table of ``total`` rows, in order), decoded with ``seed`` as
    :func:`dpcore.encoding.decode_codes` decodes them, to the binary file ``fh``. Returns
    the rows written."""
    fmt = plan.format
    step = max(1, BUFFER_BYTES // max(fmt.max_row_bytes, 1))
    buffer = bytearray(step * fmt.max_row_bytes + fmt.slack)
    view = memoryview(buffer)
    draws = [np.empty(step) for _ in range(fmt.drawn_columns)]
    streams = list(_uniform_streams(seed, total, start, fmt.drawn_columns))
    rows = 0
    try:
        for k, codes in enumerate(chunks):
            if k == 0:     # no chunk, no header: write_table's file of no frames is empty
                fh.write(plan.header)
            codes = np.asarray(codes)
            if codes.dtype.kind == "i" and codes.dtype.itemsize < 8:   # the kernel takes int64
                codes = codes.astype(np.int64)
            for start in range(0, len(codes), step):
                part = codes[start:start + step]
                m = len(part)
                for stream, out in zip(streams, draws):
                    stream.random(out=out[:m])
                fh.write(view[:fmt.format(part, [u[:m] for u in draws], buffer)])
            rows += len(codes)
    finally:
        view.release()
    return rows


def _uniform_streams(seed: Any, total: int, start: int, count: int
                     ) -> Iterator[np.random.Generator]:
    """The generators of the drawn columns' uniforms: column q's skips to draw
    q * total + start of ``default_rng(seed)`` (decode_codes' layout); without a seed, one
    fresh generator."""
    if seed is None:
        rng = np.random.default_rng()
        yield from (rng for _ in range(count))
        return
    for q in range(count):
        rng = np.random.default_rng(seed)
        rng.bit_generator.advance(q * total + start)
        yield rng
