"""Plain CSV files read in blocks of whole lines: the fast readers behind
:func:`dpcore.encoding.read_codes`.

A *plain* CSV holds no double quote, no blank line and no carriage return except in CRLF line
ends. There a line is a row and a field ends at the delimiter, so splitting the bytes gives
pandas' fields, text for text (tested against the pandas reader). Each block of whole lines
(:data:`CSV_BLOCK_BYTES`) becomes a DataFrame of ``category`` columns of the raw texts (each
distinct text once; nothing trimmed, no NA tokens, an empty field is ""), which
:func:`dpcore.encoding.encode_frame` encodes per distinct value. Two parsers split a block:
the compiled one (:func:`dpcore._core.split_csv`, the default) and pyarrow's
(:func:`dpcore.arrowio.parse_block`, the ``pyarrow`` engine).

A block that is not plain raises :class:`NotPlainText` (the caller turns to the pandas reader,
which knows quoting and refuses blank lines; nothing yielded before may be used). A ragged line
or bad UTF-8 raises :class:`CsvBlockError`; the caller then runs its own row check for the
exact error.
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

__all__ = ["CSV_BLOCK_BYTES", "CsvBlockError", "KEEP_TEXTS", "NotPlainText", "integer_steps",
           "iter_block_codes", "iter_csv_blocks", "split_block"]

#: Bytes of CSV text split into one DataFrame (Adult: about 300,000 rows).
CSV_BLOCK_BYTES = 32 * 2 ** 20

#: Distinct texts all columns together keep from block to block in :func:`iter_block_codes`,
#: shared evenly (at most 2^16 a column): a column with more, e.g. a continuous one, starts
#: afresh at the next block, so memory stays bounded however many columns the file has.
KEEP_TEXTS = 1 << 20


class NotPlainText(Exception):
    """The CSV holds a double quote, a bare carriage return or a blank line: read it with
    another reader."""


class CsvBlockError(Exception):
    """A block could not be split (a ragged line, bad UTF-8); the message says which."""


def _line_blocks(path: Any, block_bytes: int) -> Iterator[memoryview]:
    """The data lines (after the header line) in blocks of whole lines; the file's last line
    gets the line end it may lack (a final CR then ends it, as in CRLF).

    Each block is a read-only view into one buffer that is read into (``readinto``) and
    reused: no per-block copy of the text. A view is released when the next block is asked
    for; the parser must copy what it keeps (both parsers do). The partial line at a
    block's end moves to the buffer's front (a line's bytes, not a block's); a line longer
    than the buffer doubles it. The file is read, not mapped: a file truncated under a
    mapping would kill the process (SIGBUS) instead of failing the run's input check
    (:func:`dpcore.counted.read_and_hash`)."""
    from dpcore.counted import digest_for, open_input
    size = max(int(block_bytes), 1)
    buf = bytearray(size + 1)                       # + 1: room for a missing last line end
    held = 0                                        # bytes of the carried partial line
    with open_input(path) as fh:
        # the input's hash, fed with the bytes as read (read_and_hash: no second pass)
        digest = digest_for(fh)
        header = fh.readline()                      # the header (read by the caller)
        if digest is not None:
            digest.update(header)
        while True:
            if held == len(buf) - 1:                # a line longer than the buffer
                grown = bytearray(2 * len(buf))     # new (a view of the old may be alive)
                grown[:held] = buf[:held]
                buf = grown
            view = memoryview(buf)
            got = fh.readinto(view[held:len(buf) - 1])
            if digest is not None:
                if got:
                    digest.update(view[held:held + got])
                else:
                    digest.finish()
            if not got:
                if held:
                    buf[held] = 0x0A
                    block = view[:held + 1].toreadonly()
                    yield block
                    block.release()
                return
            end = held + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:                            # no line end yet: read on
                held = end
                continue
            block = view[:cut].toreadonly()
            yield block
            # a parser that kept the view (or a buffer of it) fails loudly here or when it
            # uses it, rather than reading the next block's bytes
            block.release()
            held = end - cut
            buf[:held] = buf[cut:end]               # the partial line (a copy of it first)


def _checked(status: str, rows: int, header: list[str]) -> None:
    if status == "not utf-8":
        raise CsvBlockError(f"column {header[rows]!r} holds text that is not UTF-8")
    if status == "not plain":
        raise NotPlainText()
    if status == "ragged":
        raise CsvBlockError(f"line {rows + 1} of a block has a field count other than the "
                            f"header's {len(header)}")


def split_block(data: bytes | memoryview, sep: str, header: list[str]) -> pd.DataFrame:
    """One block of whole lines as a DataFrame of ``category`` columns (compiled splitter;
    the texts and positions are copied out of ``data``)."""
    from dpcore import _core
    status, rows, columns = _core.split_csv(data, sep, len(header))
    _checked(status, rows, header)
    return pd.DataFrame({name: pd.Categorical.from_codes(
        positions, categories=pd.Index(texts, dtype=object), validate=False)
        for name, (positions, texts) in zip(header, columns)}, index=pd.RangeIndex(rows))


def iter_csv_blocks(path: str | os.PathLike, sep: str, header: list[str], *,
                    block_bytes: int | None = None,
                    parse: Callable[[memoryview, str, list[str]], pd.DataFrame] | None = None
                    ) -> Iterator[pd.DataFrame]:
    """The data rows of a plain CSV as DataFrames of ``category`` columns of the raw texts,
    a block of lines at a time (``parse``: the block parser, default :func:`split_block`; it
    gets a view into a reused buffer and must not keep it). Memory: one block and its
    DataFrame."""
    parse = parse or split_block
    for data in _line_blocks(path, block_bytes or CSV_BLOCK_BYTES):
        yield parse(data, sep, header)


#: A text the splitter may read as an integer (a missing token like this turns its path off).
_INTEGER_TEXT = re.compile(r"-?[0-9]+")

#: Integers a float holds exactly: the encoder parses floats, the splitter integers.
_EXACT = 2 ** 53

#: The most bins a column's integer path takes: its steps cost the encoder ~8 texts a bin
#: once a pass (a column of 2^20 bins would cost seconds before the first block).
MAX_STEP_BINS = 4096


def integer_steps(col: Any, tokens: Any) -> tuple[list[int], list[int], int] | None:
    """The steps for :meth:`dpcore._core.CsvSplitter.set_integer_steps`: ``(starts, codes,
    last)`` such that the integer text of x (``str(x)``, lower <= x <= upper) encodes to the
    code of the last start <= x, or None for a column without that path (not numeric, a
    datetime, more than :data:`MAX_STEP_BINS` bins, an integer-like missing token, no
    integer in its bounds).

    The codes are the encoder's own (:func:`dpcore.encoding._encode_column` on the texts), not
    recomputed here. A numeric column's code is a non-decreasing function of the value (bins
    between sorted edges), so it can change only at an integer next to an edge: the function
    is sampled at both ends of every stretch between those candidates, and a stretch whose
    ends disagree turns the path off rather than guess."""
    from dpcore.encoding import EncodingError, _encode_column
    from dpcore.schema import NumericColumn
    from dpcore.datetimes import DatetimeColumn
    if not isinstance(col, NumericColumn) or isinstance(col, DatetimeColumn) \
            or col.bins > MAX_STEP_BINS:
        return None
    if any(isinstance(t, str) and _INTEGER_TEXT.fullmatch(t) for t in tokens):
        return None
    if not (math.isfinite(col.lower) and math.isfinite(col.upper)):
        return None
    lo, hi = max(math.ceil(col.lower), -_EXACT), min(math.floor(col.upper), _EXACT)
    if lo > hi:
        return None
    cand = {lo, hi + 1}
    for e in col.edges:
        if math.isfinite(e) and -_EXACT <= e <= _EXACT:
            cand.update(math.floor(e) + d for d in (-1, 0, 1, 2))
    starts = sorted(c for c in cand if lo <= c <= hi + 1)   # hi + 1: the end, not a stretch
    probes = sorted({c for c in starts[:-1]} | {c - 1 for c in starts[1:]})
    try:
        got = _encode_column(col, pd.Series([str(x) for x in probes], dtype=object), tokens,
                             0, False)
    except EncodingError:
        return None
    code = dict(zip(probes, got.tolist()))
    out_starts: list[int] = []
    out_codes: list[int] = []
    for a, b in zip(starts, starts[1:]):
        if code[a] != code[b - 1] or code[a] < 0 or code[a] >= 2 ** 31:
            return None
        if not out_codes or out_codes[-1] != code[a]:
            out_starts.append(a)
            out_codes.append(code[a])
    return out_starts, out_codes, hi


def iter_block_codes(path: str | os.PathLike, sep: str, header: list[str], schema: Any, *,
                     debug: bool = False, block_bytes: int | None = None
                     ) -> Iterator[np.ndarray]:
    """The data rows' codes (``schema.code_dtype()``, schema order), a block of lines at a
    time: what :func:`dpcore.encoding.encode_frame` makes of :func:`iter_csv_blocks`' frames,
    and the same errors, with each distinct text of a column encoded once a file rather than
    once a block. The compiled splitter (:class:`dpcore._core.CsvSplitter`) keeps each
    column's texts from block to block (its share of :data:`KEEP_TEXTS`), so a block brings few new
    texts; they are encoded, and each row picks its text's code (no DataFrame). A block with
    a new text that does not encode goes to ``encode_frame`` whole, which raises the exact
    error (the earliest bad row; rows count from the file's first data row)."""
    from dpcore import _core
    from dpcore.encoding import EncodingError, _encode_column, check_columns, encode_frame
    splitter = _core.CsvSplitter(sep, len(header), min(1 << 16, KEEP_TEXTS // len(header)))
    where = [header.index(c.name) if c.name in header else -1 for c in schema.columns]
    # numeric columns: an integer text's code comes from the splitter's steps (no text);
    # the column's other texts as any column's, their rows marked -(position + 1)
    direct = set()
    for col, k in zip(schema.columns, where):
        steps = integer_steps(col, schema.missing_values) if k >= 0 else None
        if steps is not None:
            splitter.set_integer_steps(k, *steps)
            direct.add(k)
    kept: list[list[str]] = [[] for _ in header]        # each column's texts so far
    tables = [np.empty(0, dtype=np.int64) for _ in header]   # and their codes
    offset = 0
    for data in _line_blocks(path, block_bytes or CSV_BLOCK_BYTES):
        status, rows, parts = splitter.split(data)
        _checked(status, rows, header)
        if offset == 0:
            check_columns(header, schema)
        for k, (_, new, first) in enumerate(parts):
            if first == 0:                   # the splitter started this column afresh
                kept[k], tables[k] = [], np.empty(0, dtype=np.int64)
        codes = None
        try:
            fresh = {k: _encode_column(col, pd.Series(parts[k][1], dtype=object),
                                       schema.missing_values, 0, False)
                     for col, k in zip(schema.columns, where) if parts[k][1]}
        except EncodingError:
            # the whole block's texts, encoded as a frame: the exact error (earliest bad row)
            codes = encode_frame(split_block(data, sep, header), schema, row_offset=offset,
                                 debug=debug)
            # (it raises; were it to pass, its codes are the block's, and the texts this
            # block added have no codes: every column starts afresh)
            splitter.reset()
            kept = [[] for _ in header]
            tables = [np.empty(0, dtype=np.int64) for _ in header]
            fresh = {}
        for k, table in fresh.items():
            kept[k].extend(parts[k][1])
            tables[k] = np.concatenate([tables[k], table])
        if codes is None:
            # each row's codes from its texts' (a numeric column's integers: the code itself)
            codes = np.empty((rows, len(schema.columns)), dtype=schema.code_dtype())
            _core.gather_codes([parts[k][0] for k in where],
                               [np.ascontiguousarray(tables[k], dtype=np.int64) for k in where],
                               [k in direct for k in where], codes)
            if schema.constraints:           # real rows must keep the public rules
                from dpcore.constraints import check_derived
                check_derived(codes, schema, row_offset=offset)
        offset += rows
        yield codes
