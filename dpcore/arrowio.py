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

__all__ = ["as_object_columns", "have_pyarrow", "parse_block", "public_layout", "write_parquet_chunks"]


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


def public_layout(schema: Any) -> tuple[Any, pd.DataFrame]:
    """The Arrow schema and pandas dtypes (an empty DataFrame) of rows decoded under the
    public ``schema``: texts (categories, timestamps) are strings, integers int64 (pandas
    ``Int64`` where the column can be missing), other numbers float64. Fixed by the schema,
    not by the rows, so every part of a partitioned dataset has the same types."""
    from dpcore.datetimes import DatetimeColumn
    from dpcore.schema import CodeColumn, NumericColumn
    pa, _ = _pyarrow()
    fields, dtypes = [], {}
    for col in schema.columns:
        if isinstance(col, DatetimeColumn):      # a NumericColumn that decodes to text
            kind, dtype = pa.string(), "object"
        elif isinstance(col, CodeColumn):
            kind, dtype = pa.int64(), "int64"
        elif isinstance(col, NumericColumn) and col.integer:
            kind = pa.int64()
            dtype = "Int64" if col.missing_code is not None else "int64"
        elif isinstance(col, NumericColumn):
            kind, dtype = pa.float64(), "float64"
        else:        # categorical columns decode to text
            kind, dtype = pa.string(), "object"
        fields.append(pa.field(col.name, kind))
        dtypes[col.name] = pd.Series([], dtype=dtype)
    return pa.schema(fields), pd.DataFrame(dtypes)


def write_parquet_chunks(frames: Iterable[pd.DataFrame], path: Any,
                         layout: tuple[Any, pd.DataFrame] | None = None) -> int:
    """Write the chunks (DataFrames with the same columns) to one Parquet file at ``path``,
    a row group per chunk; returns the rows written. ``path`` is written in place: the
    caller makes it a temporary file and renames it (:func:`dpcore.encoding.write_table`).
    ``layout`` (:func:`public_layout`) fixes the column types; without it they are those
    of the concatenated chunks."""
    pa, pq = _pyarrow()
    if layout is not None:
        return _write_laid_out(frames, path, *layout)
    writer = None
    pending: list[Any] = []        # Arrow tables held while some column is still type null
    heads: list[pd.DataFrame] = []  # each chunk's first row: the dtypes of the whole table
    schema = None
    rows = 0
    try:
        for part in frames:
            table = pa.Table.from_pandas(part, preserve_index=False)
            heads.append(as_object_columns(part.iloc[:1]))   # a copy: not a view into the chunk
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


def as_object_columns(head: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``head`` with ``category`` columns as ``object``: what the file's pandas
    metadata records (the table reads back with text columns, as sample() returns them)."""
    cats = [c for c in head.columns if isinstance(head[c].dtype, pd.CategoricalDtype)]
    return head.astype({c: object for c in cats}) if cats else head.copy()


def _write_laid_out(frames: Iterable[pd.DataFrame], path: Any, schema: Any,
                    template: pd.DataFrame) -> int:
    pa, pq = _pyarrow()
    rows = 0
    # Text columns go in as dictionaries (a chunk's category columns as they are, no string
    # a cell): Parquet stores both alike, and without the Arrow schema in the file they read
    # back as the plain strings of the layout.
    texts = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type))
                       if pa.types.is_string(f.type) else f for f in schema])
    with pq.ParquetWriter(path, texts, store_schema=False) as writer:
        for part in frames:
            writer.write_table(pa.Table.from_pandas(part, schema=texts, preserve_index=False))
            rows += len(part)
        meta = pa.Schema.from_pandas(template, preserve_index=False).metadata
        if meta and hasattr(writer, "add_key_value_metadata"):   # pyarrow >= 13
            writer.add_key_value_metadata(meta)
    return rows


def _plain(lines: bytes) -> bool:
    """No double quote, no blank line, and every CR ends a line (CRLF) in ``lines`` (whole
    lines). pyarrow would read a blank line as a row of empty fields, where the pandas reader
    (the reference) refuses it, and drops a byte-order mark that starts a block (the pandas
    reader keeps it in the value); such files go to pandas."""
    if b'"' in lines or lines.startswith((b"\n", b"\r\n", b"\xef\xbb\xbf")) \
            or b"\n\n" in lines or b"\n\r\n" in lines:
        return False
    return b"\r" not in lines or lines.count(b"\r") == lines.count(b"\r\n")


def parse_block(data: bytes | memoryview, sep: str, header: list[str]) -> pd.DataFrame:
    """One block of whole lines (:mod:`dpcore.csvblocks`) parsed by ``pyarrow.csv.read_csv``
    with quoting off, every column a dictionary of strings: a DataFrame of ``category``
    columns of the raw texts (no NA tokens, no trimming, an empty field is ""). Raises
    :class:`~dpcore.csvblocks.NotPlainText` for a block with a quote, a bare CR or a blank
    line, :class:`~dpcore.csvblocks.CsvBlockError` with pyarrow's message for what it cannot
    parse. A view (the block reader's reused buffer) is copied first: nothing Arrow builds
    may point into a buffer that is about to be overwritten."""
    from dpcore.csvblocks import CsvBlockError, NotPlainText
    pa, _ = _pyarrow()
    data = bytes(data)
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
