"""Table I/O through pyarrow (the ``parquet`` extra): a Parquet file written chunk by chunk,
and pyarrow's parser for the blocks of a plain CSV.

:func:`parse_block` parses one block of whole lines of a plain CSV (:mod:`dpcore.csvblocks`,
the ``pyarrow`` engine of :func:`dpcore.encoding.read_codes`), every column typed as a
dictionary of strings, into a DataFrame of ``category`` columns.

:func:`write_parquet_chunks` streams DataFrames (the chunks a synthesizer decodes) into one
Parquet file with ``pyarrow.parquet.ParquetWriter``, one row group per chunk, so the decoded
table is never held whole; the file reads back as ``pd.concat(chunks)`` would have been
written by ``DataFrame.to_parquet`` (tested): the same values, column types and pandas dtypes.

Two details make chunks agree on one file schema. A column that is all missing in the first
chunks has Arrow type ``null``; the writer waits (holding those few chunks' Arrow tables) until
every column has a type, or the end. And a chunk's pandas dtype can differ from the table's
(an integer column is ``int64`` in a chunk without a missing value, ``Int64`` in one with);
the pandas metadata is therefore that of the concatenated dtypes, written in the footer at
the end (the Arrow schema itself is not stored: its types are Parquet's own here).

pyarrow is imported here and by callers that chose Parquet, lazily.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import pandas as pd

__all__ = ["have_pyarrow", "parse_block", "write_parquet_chunks"]


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None, None
    return pa, pq


def have_pyarrow() -> bool:
    return _pyarrow()[0] is not None


#: Chunks held (as Arrow tables) at most while a column is still all missing (type null).
_MAX_PENDING = 8


def write_parquet_chunks(frames: Iterable[pd.DataFrame], path: Any) -> int:
    """Write the chunks (DataFrames with the same columns) to one Parquet file at ``path``,
    a row group per chunk; returns the rows written. ``path`` is written in place: the
    caller makes it a temporary file and renames it (:func:`dpcore.encoding.write_table`)."""
    pa, pq = _pyarrow()
    writer = None
    pending: list[Any] = []        # Arrow tables held while some column is still type null
    heads: list[pd.DataFrame] = []  # each chunk's first row: the dtypes of the whole table
    schema = None
    rows = 0
    try:
        for part in frames:
            table = pa.Table.from_pandas(part, preserve_index=False)
            heads.append(part.iloc[:1].copy())   # a copy: a slice would keep the chunk alive
            rows += len(part)
            if writer is None:
                pending.append(table)
                schema = pa.unify_schemas([t.schema.remove_metadata() for t in pending])
                if any(pa.types.is_null(f.type) for f in schema):
                    if len(pending) < _MAX_PENDING:
                        continue
                    # still all missing after many chunks: a decoded object column holds
                    # text, so it is a string column (with the nulls so far)
                    schema = pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type)
                                        else f for f in schema])
                writer = pq.ParquetWriter(path, schema, store_schema=False)
                for t in pending:
                    writer.write_table(t.cast(schema))
                pending = []
            else:
                writer.write_table(table.cast(schema))
        if writer is None:          # no chunk, or every chunk had a null-typed column
            if not pending:
                raise ValueError("write_parquet_chunks needs at least one DataFrame")
            schema = pa.unify_schemas([t.schema.remove_metadata() for t in pending])
            writer = pq.ParquetWriter(path, schema, store_schema=False)
            for t in pending:
                writer.write_table(t.cast(schema))
        whole = pd.concat(heads, ignore_index=True)
        meta = pa.Schema.from_pandas(whole.iloc[:0], preserve_index=False).metadata
        if meta and hasattr(writer, "add_key_value_metadata"):   # pyarrow >= 13
            writer.add_key_value_metadata(meta)
    finally:
        if writer is not None:
            writer.close()
    return rows


def _plain(lines: bytes) -> bool:
    """No double quote, no blank line, and every CR ends a line (CRLF) in ``lines`` (whole
    lines). pyarrow would read a blank line as a row of empty fields, where the pandas reader
    (the reference) refuses it; such files go to pandas."""
    if b'"' in lines or lines.startswith((b"\n", b"\r\n")) or b"\n\n" in lines \
            or b"\n\r\n" in lines:
        return False
    return b"\r" not in lines or lines.count(b"\r") == lines.count(b"\r\n")


def parse_block(data: bytes, sep: str, header: list[str]) -> pd.DataFrame:
    """One block of whole lines (:mod:`dpcore.csvblocks`) parsed by ``pyarrow.csv.read_csv``
    with quoting off, every column a dictionary of strings: a DataFrame of ``category``
    columns of the raw texts (no NA tokens, no trimming, an empty field is ""). Raises
    :class:`~dpcore.csvblocks.NotPlainText` for a block with a quote, a bare CR or a blank
    line, :class:`~dpcore.csvblocks.CsvBlockError` with pyarrow's message for what it cannot
    parse."""
    from dpcore.csvblocks import CsvBlockError, NotPlainText
    pa, _ = _pyarrow()
    import pyarrow.csv as pcsv
    if not _plain(data):
        raise NotPlainText()
    text = pa.dictionary(pa.int32(), pa.string())
    parse = pcsv.ParseOptions(delimiter=sep, quote_char=False, escape_char=False,
                              ignore_empty_lines=False)
    convert = pcsv.ConvertOptions(column_types={n: text for n in header}, null_values=[],
                                  strings_can_be_null=False, check_utf8=True)
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data), parse_options=parse, convert_options=convert,
            read_options=pcsv.ReadOptions(column_names=header, use_threads=False,
                                          block_size=len(data) + 1))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise CsvBlockError(str(err).splitlines()[0][:200]) from None
    return table.to_pandas()
