"""Tables in and out: encode values to integer codes under a :class:`~dpcore.schema.Schema`,
decode codes back to values, read and write CSV/Parquet in chunks.

Encoding validates every value: an unknown category, a number outside the public bounds, a
non-number in a numeric column or a missing value the schema does not allow is an
:class:`EncodingError` naming the column, the row (1-based, counting data rows after the
header) and the rule — unless the schema asks for clipping or an "other" bucket. The value
itself is sensitive data: it appears in the message (and in ``EncodingError.value``) only when
the caller passes ``debug=True``. Every message is one line of at most 300 characters.

Parsing is strict, so a file means one thing: a CSV row must have as many fields as the header
(a trailing delimiter is an extra, empty field), header names are unique and non-empty, and a
number is a plain ASCII decimal literal (:func:`parse_decimal`; no ``1_000``, no other
scripts' digits). Categories match numbers by value, so ``"32"``, ``"32.0"`` and the float
32.0 of a DataFrame or Parquet file are the same category.
Decoding is post-processing of released codes (no privacy cost): labels for categories, a
value inside the bin for numbers (uniform or midpoint; integer columns stay integers).

>>> import pandas as pd
>>> from dpcore.schema import Schema
>>> s = Schema.from_dict({"columns": {
...     "sex": {"type": "categorical", "categories": ["F", "M"]},
...     "age": {"type": "numeric", "lower": 0, "upper": 100, "bins": 10, "integer": True,
...             "decode": "midpoint"}}})
>>> codes = encode_frame(pd.DataFrame({"sex": ["M", "F"], "age": [37, 100]}), s)
>>> codes.tolist()
[[1, 3], [0, 9]]
>>> decode_codes(codes, s).values.tolist()
[['M', 34], ['F', 95]]
"""
from __future__ import annotations

import contextlib
import csv
import functools
import itertools
import math
import os
import re
import tempfile
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from dpcore.counted import open_input
from dpcore.datetimes import DatetimeColumn, from_units, to_units
from dpcore.errors import InvalidArgumentError
from dpcore.files import replace_into
from dpcore.jsonio import cap
from dpcore.schema import (
    INFER_WARNING, PLAIN_DECIMAL, CategoricalColumn, CodeColumn, Column, NumericColumn, Schema,
    category_key, default_file_mode, equal_width_edges, integer_bin_range, with_points,
)

DEFAULT_CHUNK_ROWS = 500_000
SNIFF_DELIMITERS = ",;\t|"
"""The delimiters :func:`sniff_delimiter` chooses among (and :func:`infer_schema` looks for
inside values, as a sign of the wrong delimiter)."""


class EncodingError(InvalidArgumentError):
    """A value in the data breaks the schema. ``column`` and ``row`` (1-based) say where;
    ``value`` holds the offending value only when the caller asked for ``debug=True``."""

    def __init__(self, message: str, *, column: str | None = None, row: int | None = None,
                 value: Any = None) -> None:
        super().__init__(cap(message))
        self.column, self.row, self.value = column, row, value


def _bad(col: Column, row: int, value: Any, rule: str, debug: bool) -> EncodingError:
    if debug:
        value = value.item() if isinstance(value, np.generic) else value
        return EncodingError(f"column {col.name!r}, row {row}: value {cap(repr(value), 80)} "
                             f"{rule}", column=col.name, row=row, value=value)
    return EncodingError(f"column {col.name!r}, row {row}: the value {rule} [value withheld; "
                         f"debug shows it]", column=col.name, row=row)


def check_delimiter(sep: Any) -> str:
    r"""``sep`` if it is a usable CSV delimiter: one printable ASCII character that is not a
    letter, a digit or the quote ``"``, or a tab (the character, or the two characters
    ``\t`` as typed in a shell).

    >>> check_delimiter(";"), check_delimiter("\\t"), check_delimiter("\t")
    (';', '\t', '\t')
    """
    if sep == "\\t":
        return "\t"
    if not isinstance(sep, str) or len(sep) != 1 or not (
            sep == "\t" or (sep.isascii() and sep.isprintable())) or sep.isalnum() or sep == '"':
        raise InvalidArgumentError(cap(
            f"the delimiter must be one printable ASCII character that is not a letter, a digit "
            f"or '\"' (or a tab, '\\t'), got {sep!r}"))
    return sep


def parse_decimal(text: str, *, what: str = "value") -> float:
    """A plain decimal or scientific literal in ASCII (``12``, ``-0.5``, ``2e-3``) as a finite
    float. Text Python would also read (``1_0``, ``inf``, ``١٢``, `` 5``) is an error.

    >>> parse_decimal("2.5e-1")
    0.25
    >>> parse_decimal("1_0", what="--epsilon")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpcore.errors.InvalidArgumentError: --epsilon must be a plain decimal number (...), got '1_0'
    """
    if not isinstance(text, str) or not PLAIN_DECIMAL.fullmatch(text):
        raise InvalidArgumentError(cap(
            f"{what} must be a plain decimal number (ASCII digits, optional sign, point and "
            f"exponent, e.g. 1.5 or 2e-3), got {cap(repr(text), 40)}"))
    value = float(text)
    if not math.isfinite(value):
        raise InvalidArgumentError(cap(f"{what} = {text} overflows a 64-bit float"))
    return value


def _missing_mask(series: pd.Series, tokens: Sequence[str]) -> np.ndarray:
    mask = series.isna().to_numpy().copy()
    if tokens and (series.dtype == object or pd.api.types.is_string_dtype(series.dtype)):
        mask |= series.isin(list(tokens)).to_numpy()
    return mask


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _number_of(value: Any) -> float:
    """A value as a float: numbers as they are, text only in the plain decimal grammar; NaN
    for anything else."""
    if isinstance(value, str):
        return float(value) if PLAIN_DECIMAL.fullmatch(value) else math.nan
    return float(value) if _is_number(value) else math.nan


#: Lines of plain decimals: one regex run checks a whole column of distinct texts.
_PLAIN_LINES = re.compile(f"(?:{PLAIN_DECIMAL.pattern})(?:\n(?:{PLAIN_DECIMAL.pattern}))*")


def _numbers_of(values: np.ndarray) -> np.ndarray:
    """:func:`_number_of` of each value. When every value is a text in the plain grammar (the
    usual numeric column) one regex run over the joined texts checks them and NumPy converts
    them with Python's float(), the same values without a Python call a value."""
    values = np.asarray(values, dtype=object)
    if len(values) and pd.api.types.infer_dtype(values, skipna=False) == "string":
        joined = "\n".join(values.tolist())   # a text with a line break is not a number
        if joined.count("\n") == len(values) - 1 and _PLAIN_LINES.fullmatch(joined):
            return values.astype(np.float64)
    return np.array([_number_of(v) for v in values.tolist()], dtype=np.float64)


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return str(value)


def _factorize(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per-row indices into the distinct values (-1 for NA), so per-value Python work is paid
    once per distinct value, not per row. pandas hashes True as 1 and False as 0, so where a
    boolean and such a number may have merged, the booleans stand as their texts ("True", how
    they encode) and the values are factorized again."""
    values = series.to_numpy(dtype=object)
    try:
        index, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:       # unhashable values (lists, dicts) stand as their texts, as others
        values = np.array([_hashable(v) for v in values], dtype=object)
        index, uniques = pd.factorize(values, use_na_sentinel=True)
    if any(isinstance(u, (bool, np.bool_)) or (_is_number(u) and u in (0, 1))
           for u in uniques):
        kinds = np.fromiter((isinstance(v, (bool, np.bool_)) for v in values), bool,
                            len(values))
        if kinds.any() and not kinds.all():
            values = values.copy()
            values[kinds] = [str(bool(v)) for v in values[kinds]]
            index, uniques = pd.factorize(values, use_na_sentinel=True)
    return index, np.asarray(uniques, dtype=object)


@functools.lru_cache(maxsize=16)
def _category_lookup(col: CategoricalColumn) -> tuple[pd.Index, dict[Decimal, int]]:
    numbers = {}
    for code, label in enumerate(col.categories):
        key = category_key(label)
        if isinstance(key, Decimal):
            numbers[key] = code
    return pd.Index(list(col.categories), dtype=object), numbers


def _category_code(value: Any, labels: pd.Index, numbers: dict[Decimal, int]) -> int:
    """The code of a value without an exact text match: numbers match by value (32.0 is the
    category "32"); other non-text values (e.g. booleans) by their text."""
    if isinstance(value, str):
        key = category_key(value)
        return numbers.get(key, -1) if isinstance(key, Decimal) else -1
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return numbers.get(Decimal(int(value)), -1)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return numbers.get(Decimal(repr(x)), -1) if math.isfinite(x) else -1
    return int(labels.get_indexer([str(value)])[0])


def _encode_categorical(col: CategoricalColumn, series: pd.Series, missing: np.ndarray,
                        offset: int, debug: bool) -> np.ndarray:
    labels, numbers = _category_lookup(col)
    index, uniques = _factorize(series)
    for k, u in enumerate(uniques):      # a lone surrogate (a bad decode) is no text at all
        if isinstance(u, str) and not _is_unicode(u):
            i = int(np.flatnonzero(index == k)[0])
            raise _bad(col, offset + i + 1, series.iloc[i], "is not valid Unicode text (it "
                       "holds a lone surrogate, e.g. from a bad decode)", debug)
    table = np.append(labels.get_indexer(uniques).astype(np.int64), -1)
    for i in np.flatnonzero(table[:-1] < 0):
        table[i] = _category_code(uniques[i], labels, numbers)
    # Index -1 (NA) picks the trailing -1. Missing rows may get any code here; the caller
    # overwrites them.
    codes = table[index]
    unknown = (codes < 0) & ~missing
    if unknown.any():
        if col.other_code is None:
            i = _first(unknown)
            raise _bad(col, offset + i + 1, series.iloc[i],
                       f"is not one of the schema's {len(col.categories)} categories "
                       f"(add it, or give the column an 'other' bucket)", debug)
        codes[unknown] = col.other_code
    return codes


#: Doubles hold every integer of magnitude below 2^53, no integer beside one beyond it.
_EXACT_BELOW = 2.0 ** 53


def _exact_integers(col: Column, raws: Sequence[Any], parsed: np.ndarray) -> None:
    """An integer or code column judged on the integers and texts given, not on the doubles
    they round to (``parsed``, changed in place so that the checks that follow refuse or clip
    them): a text whose fraction its double lost (``2^52 + 0.5``, ``1.0000000000000001``)
    becomes a non-integer, and an integer past a bound its double lands on (``2^53 + 1`` onto
    an upper bound of ``2^53``) is moved past the bound."""
    whole = np.isfinite(parsed) & (parsed == np.floor(np.nan_to_num(parsed)))
    large = whole & (np.abs(parsed) >= _EXACT_BELOW)
    # texts with a point or an exponent can hide a fraction
    if getattr(raws, "dtype", None) == object:
        large |= whole & np.fromiter((isinstance(u, str) and ("." in u or "e" in u or "E" in u)
                                      for u in raws), bool, len(raws))
    lower, upper = (0, col.size - 1) if isinstance(col, CodeColumn) else (col.lower, col.upper)
    for k in np.flatnonzero(large).tolist():
        raw = raws[k]
        if isinstance(raw, str):
            try:
                exact = Decimal(raw)  # the plain decimal grammar (parsed is finite): exact
            except InvalidOperation:  # an exponent of 19 digits or more (the double is 0)
                mantissa = Decimal(raw.lower().partition("e")[0])
                exact = Decimal(0) if mantissa == 0 else Decimal("0.5")   # 0, or a fraction
        elif isinstance(raw, (int, np.integer)) and not isinstance(raw, (bool, np.bool_)):
            exact = Decimal(int(raw))
        else:
            continue                   # a double is the value it holds
        if exact != exact.to_integral_value():
            parsed[k] = 0.5
        elif exact > Decimal(upper):   # the next integer double past the bound
            parsed[k] = max(float(upper) + 1, np.nextafter(float(upper), math.inf))
        elif exact < Decimal(lower):
            parsed[k] = min(float(lower) - 1, np.nextafter(float(lower), -math.inf))


def _parse_numbers(col: Column, series: pd.Series, missing: np.ndarray, offset: int,
                   debug: bool) -> np.ndarray:
    integral = isinstance(col, CodeColumn) or getattr(col, "integer", False)
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(
            series.dtype) and not pd.api.types.is_complex_dtype(series.dtype):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        if integral and series.dtype.kind in "iu" and (np.abs(values) >= _EXACT_BELOW).any():
            _exact_integers(col, series.array, values)   # the integers (NA where missing)
    else:       # texts, objects, and complex numbers (each then not a number: refused)
        index, uniques = _factorize(series)
        parsed = _numbers_of(uniques)
        if integral:
            _exact_integers(col, uniques, parsed)
        values = np.append(parsed, math.nan)[index]  # index -1 (NA) picks the trailing NaN
    bad = ~missing & ~np.isfinite(values)
    if bad.any():
        i = _first(bad)
        raise _bad(col, offset + i + 1, series.iloc[i],
                   "is not a finite plain decimal number (ASCII digits, optional sign, point "
                   "and exponent)", debug)
    return values


def _encode_numeric(col: NumericColumn, series: pd.Series, missing: np.ndarray,
                    offset: int, debug: bool) -> np.ndarray:
    if isinstance(col, DatetimeColumn):
        values = to_units(series.where(~missing), col)
        bad = ~missing & ~np.isfinite(values)
        if bad.any():
            i = _first(bad)
            how = f"the format {col.format!r}" if col.format else "ISO 8601"
            raise _bad(col, offset + i + 1, series.iloc[i],
                       f"is not a timestamp in {how} at the resolution {col.resolution}", debug)
    else:
        values = _parse_numbers(col, series, missing, offset, debug)
    if col.integer:
        frac = ~missing & (values != np.floor(np.where(missing, 0.0, values)))
        if frac.any():
            i = _first(frac)
            raise _bad(col, offset + i + 1, series.iloc[i],
                       "is not an integer (the schema says integer: true)", debug)
    for side, out in (("below the lower", values < col.lower),
                      ("above the upper", values > col.upper)):
        out &= ~missing
        if out.any() and col.out_of_bounds == "error":
            i = _first(out)
            bound = col.lower if side.startswith("below") else col.upper
            raise _bad(col, offset + i + 1, series.iloc[i],
                       f"is {side} bound {bound:g} (set out_of_bounds: clip to clip it)", debug)
    safe = np.clip(np.where(missing, col.lower, values), col.lower, col.upper)
    return bin_codes(col.edges, safe)


def bin_codes(edges: Sequence[float], values: np.ndarray) -> np.ndarray:
    """The numeric bin of each value; a value equal to a point mass (a repeated edge pair) gets
    the point's own bin, not the bin after it."""
    e = np.asarray(edges, dtype=np.float64)
    bins = len(e) - 1
    codes = np.clip(np.searchsorted(e, values, side="right") - 1, 0, bins - 1)
    first = np.searchsorted(e, values, side="left")            # first edge >= value
    idx = np.minimum(first, bins - 1)
    point = (first < bins) & (e[idx] == values) & (e[idx + 1] == values)
    return np.where(point, idx, codes)


def _encode_code(col: CodeColumn, series: pd.Series, missing: np.ndarray, offset: int,
                 debug: bool) -> np.ndarray:
    values = _parse_numbers(col, series, missing, offset, debug)
    bad = missing | (values != np.floor(np.nan_to_num(values))) | (values < 0) | (
        values >= col.size)
    if bad.any():
        i = _first(bad)
        raise _bad(col, offset + i + 1, series.iloc[i],
                   f"is not an integer code in 0..{col.size - 1} (domain size {col.size})", debug)
    return values.astype(np.int64)


def _encode_column(col: Column, series: pd.Series, tokens: Sequence[str], row_offset: int,
                   debug: bool) -> np.ndarray:
    """One column's codes (int64); errors name the column, the row and the rule."""
    missing = _missing_mask(series, tokens)
    if isinstance(col, CodeColumn):
        return _encode_code(col, series, missing, row_offset, debug)
    if isinstance(col, CategoricalColumn):
        codes = _encode_categorical(col, series, missing, row_offset, debug)
    else:
        codes = _encode_numeric(col, series, missing, row_offset, debug)
    if missing.any():
        if col.missing_code is None:
            i = _first(missing)
            raise _bad(col, row_offset + i + 1, series.iloc[i],
                       "is missing, and the schema says missing: error", debug)
        codes[missing] = col.missing_code
    return codes


def _encode_dictionary(col: Column, series: pd.Series, tokens: Sequence[str], row_offset: int,
                       debug: bool) -> np.ndarray:
    """A pandas categorical column (what the typed reader yields): each distinct text is
    encoded once, then the rows pick their code, so a 10^7-row column costs one table lookup.
    Encoding is value by value, so the codes are those of the plain path; when a value is bad
    (or a cell is NA), the plain path runs on the column to raise its exact error."""
    index = series.cat.codes.to_numpy()
    try:
        if (index < 0).any():
            raise EncodingError("NA cell")
        uniques = pd.Series(np.asarray(series.cat.categories, dtype=object), dtype=object)
        table = _encode_column(col, uniques, tokens, 0, False)
    except EncodingError:
        return _encode_column(col, series.astype(object), tokens, row_offset, debug)
    return table[index]


def _encode_integers(col: Column, series: pd.Series, tokens: Sequence[str], row_offset: int,
                     debug: bool) -> np.ndarray:
    """A column of machine integers (a Parquet file's, a DataFrame's): each distinct value is
    encoded once (found by counting over the values' range), then the rows pick their code,
    as :func:`_encode_dictionary` does for texts; the plain path when the range is sparse,
    or to raise a bad value's exact error."""
    values = series.to_numpy()
    if not len(values):
        return _encode_column(col, series, tokens, row_offset, debug)
    lo, hi = int(values.min()), int(values.max())
    # dense only where every value is an int64 (a uint64 >= 2^63 would wrap in the index)
    dense = hi < 2 ** 63 and hi - lo < max(1 << 16, len(values))
    if dense:                                      # count over the values' range
        index = (values.astype(np.int64) - lo) if lo else values.astype(np.int64, copy=False)
        present = np.flatnonzero(np.bincount(index, minlength=hi - lo + 1))
        uniques = (present + lo).astype(values.dtype)
    else:                                          # sparse: hash the values
        index, uniques = pd.factorize(values)
    try:
        table = _encode_column(col, pd.Series(uniques), tokens, 0, False)
    except EncodingError:
        return _encode_column(col, series, tokens, row_offset, debug)
    if dense:
        lookup = np.zeros(hi - lo + 1, dtype=table.dtype)
        lookup[present] = table
        return lookup[index]
    return table[index]


def _encoder(series: pd.Series):
    """How a column is encoded: once per distinct value where that is cheap (categories,
    integers), else value by value; the codes and errors are the same."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return _encode_dictionary
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iu" and len(series) > 4096:
        return _encode_integers
    return _encode_column


def encode_frame(frame: pd.DataFrame, schema: Schema, *, row_offset: int = 0,
                 debug: bool = False) -> np.ndarray:
    """Encode a DataFrame holding the schema's columns (any order, no others) to an
    ``N x d`` code array in schema order, of dtype ``schema.code_dtype()``. Errors name the
    column, row and rule; ``debug=True`` adds the offending value (sensitive data). A column
    of pandas ``category`` dtype (the typed reader's) is encoded once per distinct value."""
    check_columns(list(frame.columns), schema)
    if not all(isinstance(c, str) for c in frame.columns):   # 0 is the schema's column "0"
        frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
    out = np.empty((len(frame), len(schema)), dtype=schema.code_dtype())
    first: EncodingError | None = None   # the error of the earliest bad row (then column)
    failed = []
    for j, col in enumerate(schema.columns):
        series = frame[col.name]
        try:
            out[:, j] = _encoder(series)(col, series, schema.missing_values, row_offset, debug)
        except EncodingError as err:
            failed.append(j)
            if first is None or (err.row or 0) < (first.row or 0):
                first = err
    # The earliest bad row is reported whatever the chunking (a reader's chunks are cut
    # differently): rows before it are whole, so a broken rule there comes first.
    keep = len(out) if first is None or first.row is None else first.row - 1 - row_offset
    if schema.constraints and failed and keep > 0:
        # a failed column's codes were never written: encode its rows before the error (all
        # good) so that the rule check below reads codes, not uninitialised memory (audit 17)
        for j in failed:
            col = schema.columns[j]
            head = frame[col.name].iloc[:keep]
            out[:keep, j] = _encoder(head)(col, head, schema.missing_values, row_offset, debug)
    if schema.constraints:   # real rows must keep the public rules (or be re-derived)
        from dpcore.constraints import check_derived
        check_derived(out[:keep], schema, row_offset=row_offset)
    if first is not None:
        raise first
    return out


def check_columns(header: Sequence[Any], schema: Schema) -> None:
    """The header must hold exactly the schema's columns, each once."""
    names = [str(h) for h in header]
    dup = [h for h, k in Counter(names).items() if k > 1]
    if dup:
        raise EncodingError(f"column {dup[0]!r} appears more than once in the header "
                            f"(column names must be unique)", column=dup[0])
    present, wanted = set(names), set(schema.names)
    missing = [n for n in schema.names if n not in present]
    extra = [h for h in names if h not in wanted]
    if missing:
        hint = ""
        if len(names) == 1 and any(d in names[0] for d in SNIFF_DELIMITERS):
            hint = f" (the header is one field {names[0]!r}: wrong delimiter?)"
        elif names and names[0].startswith("\ufeff"):
            hint = " (the file starts with a byte-order mark: save it as UTF-8 without one)"
        raise EncodingError(f"the data lacks schema column(s) {missing}{hint}",
                            column=missing[0])
    if extra:
        raise EncodingError(f"the data has column(s) {extra} that are not in the schema "
                            f"(drop them or add them to the schema)", column=extra[0])


def _read_header(path: Path, sep: str) -> list[str]:
    """The header row, read by the csv module (pandas would rename a repeated name "x.1")."""
    try:
        with open_input(path, "r", newline="", encoding="utf-8") as fh:
            row = next(csv.reader(fh, delimiter=sep), None)
    except UnicodeDecodeError:
        raise EncodingError(f"{path}: not a UTF-8 text file") from None
    except csv.Error as err:
        raise EncodingError(f"{path}: malformed CSV header: {err}") from None
    if not row:
        raise EncodingError(f"{path}: the file is empty (no header row)")
    for k, name in enumerate(row):
        if not name:
            raise EncodingError(f"{path}: header field {k + 1} is empty (a trailing delimiter? "
                                f"every column needs a name)")
    dup = [h for h, k in Counter(row).items() if k > 1]
    if dup:
        raise EncodingError(f"{path}: column {dup[0]!r} appears more than once in the header "
                            f"(column names must be unique)", column=dup[0])
    return row


def _check_rows(path: Path, sep: str, width: int) -> None:
    """Every data row has ``width`` fields. pandas pads a short row and, when every row has
    one field too many (a trailing delimiter), takes the first as the index."""
    if _check_rows_fast(path, sep, width):
        return
    block = 1 << 16
    try:
        with open_input(path, "r", newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh, delimiter=sep)
            next(reader, None)
            for start in itertools.count(0, block):
                counts = np.fromiter(map(len, itertools.islice(reader, block)), dtype=np.int64)
                counts[counts == 0] = 1  # a blank line is one empty field
                bad = np.flatnonzero(counts != width)
                if bad.size:
                    k = int(bad[0])
                    raise EncodingError(
                        f"{path}: row {start + k + 1} has {counts[k]} fields but the header "
                        f"has {width} (a missing or trailing delimiter?)", row=start + k + 1)
                if len(counts) < block:
                    return
    except UnicodeDecodeError:
        raise EncodingError(f"{path}: not a UTF-8 text file") from None
    except csv.Error as err:
        raise EncodingError(f"{path}: malformed CSV near line {reader.line_num}: "
                            f"{err}") from None


_FAST_BLOCK = 1 << 24


def _check_rows_fast(path: Path, sep: str, width: int) -> bool:
    """:func:`_check_rows` by counting delimiters per line with NumPy, 16 MiB at a time, for
    files without quotes or bare carriage returns (there a line is a row and a field ends at
    a delimiter, so the counts are the csv module's). Returns False, having checked nothing
    it can vouch for, at the first quote or bare CR: the csv module then reads the file."""
    delim, newline = ord(sep), ord("\n")
    row = 0
    try:
        with open_input(path) as fh:
            if b'"' in fh.readline():           # the header: _read_header parsed it already
                return False
            carry = b""
            while True:
                block = fh.read(_FAST_BLOCK)
                data = carry + block
                if not block:                   # the last line, without a newline
                    if not data:
                        return True
                    data += b"\n"
                cut = data.rfind(b"\n") + 1
                data, carry = data[:cut], data[cut:]
                if b'"' in data or data.count(b"\r") != data.count(b"\r\n"):
                    return False
                data.decode("utf-8")            # the csv module's UTF-8 check, as strict
                arr = np.frombuffer(data, dtype=np.uint8)
                ends = np.flatnonzero(arr == newline)
                seps = np.searchsorted(np.flatnonzero(arr == delim), ends)
                counts = np.diff(seps, prepend=0) + 1
                bad = np.flatnonzero(counts != width)
                if bad.size:
                    k = int(bad[0])               # (a blank line is one field, as in csv)
                    raise EncodingError(
                        f"{path}: row {row + k + 1} has {counts[k]} fields but the header "
                        f"has {width} (a missing or trailing delimiter?)", row=row + k + 1)
                row += len(ends)
                if not block:
                    return True
    except UnicodeDecodeError:
        raise EncodingError(f"{path}: not a UTF-8 text file") from None


def iter_csv_chunks(path: str | os.PathLike, *, sep: str = ",",
                    chunk_rows: int = DEFAULT_CHUNK_ROWS, typed: bool = False
                    ) -> Iterator[pd.DataFrame]:
    """Yield the CSV in DataFrames of raw strings (no value interpretation), after checking
    the header (unique, non-empty names) and that every row has the header's field count.
    ``typed=True`` yields each column as a pandas ``category`` of the raw strings instead,
    in chunks of at most 250,000 rows: the same texts, held once per distinct value (a
    500,000-row chunk of Adult is 9 MB rather than ~470 MB of Python strings), which
    :func:`encode_frame` encodes per value."""
    sep = check_delimiter(sep)
    p = Path(path)
    header = _read_header(p, sep)
    _check_rows(p, sep, len(header))
    return _csv_chunks(p, sep, header, chunk_rows, "category" if typed else object)


#: Rows of Python strings the typed reader holds at once before making them categories.
_TYPED_ROWS = 250_000


def _as_categories(chunk: pd.DataFrame) -> pd.DataFrame:
    """Each column of raw strings as a ``category`` of those very strings (in order of first
    appearance). pandas' own ``dtype="category"`` is not used: when every text of a chunk's
    column looks like a number it makes the categories numbers (" 5" and "05" become 5.0),
    which the strict encoder must not accept, and which would depend on the chunking."""
    out = {}
    for name in chunk.columns:
        codes, uniques = pd.factorize(chunk[name].to_numpy(), use_na_sentinel=True)
        out[name] = pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object),
                                              validate=False)
    return pd.DataFrame(out, index=chunk.index)


def _csv_chunks(path: Path, sep: str, header: list[str], chunk_rows: int, dtype: Any = object
                ) -> Iterator[pd.DataFrame]:
    typed = dtype == "category"
    if typed:      # at most _TYPED_ROWS rows of Python strings (~235 MB for Adult) at once
        chunk_rows = min(chunk_rows, _TYPED_ROWS)
    try:
        # through one checked descriptor (open_input), not the path: see read_and_hash
        with open_input(path) as fh, pd.read_csv(
                fh, sep=sep, header=0, names=header, index_col=False, dtype=object,
                keep_default_na=False, na_filter=False, skip_blank_lines=False,
                chunksize=chunk_rows, engine="c", encoding="utf-8") as reader:
            for chunk in reader:
                yield _as_categories(chunk) if typed else chunk
    except pd.errors.ParserError as err:
        raise EncodingError(f"{path}: malformed CSV: {str(err).strip()}") from None
    except pd.errors.EmptyDataError:
        raise EncodingError(f"{path}: the file is empty (no header row)") from None
    except UnicodeDecodeError:
        raise EncodingError(f"{path}: not a UTF-8 text file") from None


def _iter_parquet(path: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise EncodingError("reading Parquet needs pyarrow: pip install 'dpcore[parquet]'") from None
    import pyarrow as pa
    # Text columns read as dictionaries (Parquet usually stores them so): pandas categories,
    # which the encoder encodes once per distinct value, instead of a Python string a cell
    # (measured, 10^7 Adult rows: 23.5 CPU-s to read, 2.7 M page faults)
    with open_input(path) as fh:            # one checked descriptor: see read_and_hash
        try:
            arrow = pq.read_schema(fh)
            texts = [f.name for f in arrow
                     if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
            fh.seek(0)
            pf = pq.ParquetFile(fh, read_dictionary=texts)
            batches = pf.iter_batches(batch_size=chunk_rows)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                # an integer column with a null stays integers (a float64 column would round
                # values past 2^53 before the schema checks them)
                frame = batch.to_pandas(integer_object_nulls=True)
                yield frame
        except (pa.ArrowException, OSError) as err:
            raise EncodingError(parquet_error(path, err)) from None


def parquet_error(path: Any, err: BaseException) -> str:
    """What a Parquet reader's failure says: the file and the error's class, not its text
    (Arrow's messages can quote the file's values, and a failed run's reason reaches the
    public ledger)."""
    return (f"{path}: not a readable Parquet file ({type(err).__name__}: a truncated or "
            f"corrupt file, or another format under a Parquet name?)")


def iter_table_chunks(path: str | os.PathLike, *, sep: str = ",",
                      chunk_rows: int = DEFAULT_CHUNK_ROWS, typed: bool = False
                      ) -> Iterator[pd.DataFrame]:
    """Chunks of a CSV or (by extension) Parquet file (``typed``: see iter_csv_chunks)."""
    p = Path(path)
    if not p.is_file():
        raise EncodingError(f"{path}: no such file")
    if is_parquet(p):
        return _iter_parquet(p, chunk_rows)
    return iter_csv_chunks(p, sep=sep, chunk_rows=chunk_rows, typed=typed)


def sniff_delimiter(path: str | os.PathLike) -> str:
    """The delimiter of a CSV file, guessed by :class:`csv.Sniffer` from its first lines among
    :data:`SNIFF_DELIMITERS`; ``","`` when the guess fails (e.g. a one-column file)."""
    try:
        with open_input(path, "r", newline="", encoding="utf-8") as fh:
            sample = fh.read(1 << 16)
    except UnicodeDecodeError:
        raise EncodingError(f"{path}: not a UTF-8 text file") from None
    except OSError as err:
        raise EncodingError(f"{path}: cannot read it: {err.strerror or err}") from None
    if len(sample) == 1 << 16 and "\n" in sample:
        sample = sample[:sample.rindex("\n")]  # whole lines only
    try:
        return csv.Sniffer().sniff(sample, delimiters=SNIFF_DELIMITERS).delimiter
    except csv.Error:
        return ","


READ_ENGINES = ("auto", "compiled", "pyarrow", "pandas")


def _block_codes(path: Path, sep: str, engine: str, schema: Schema, debug: bool
                 ) -> Iterator[np.ndarray] | None:
    """The plain-CSV block reader's codes (:mod:`dpcore.csvblocks`; ``engine`` "pyarrow"
    parses blocks with pyarrow, any other with the compiled splitter, which encodes each
    distinct text once a file) for :func:`read_codes`, or None where the pandas reader must
    read it (not a CSV, no pyarrow for that engine, a quoted header)."""
    from dpcore import arrowio, csvblocks
    if is_parquet(path) or not path.is_file():
        return None
    if engine == "pyarrow" and not arrowio.have_pyarrow():
        return None
    with open_input(path) as fh:
        header = fh.readline()
    # a quoted header, or one ended by a bare CR (readline would swallow the first row with
    # it): the pandas reader
    if b'"' in header or header.count(b"\r") != header.count(b"\r\n"):
        return None
    sep = check_delimiter(sep)
    names = _read_header(path, sep)
    if engine == "pyarrow":
        return _encode_each(path, schema, csvblocks.iter_csv_blocks(
            path, sep, names, parse=arrowio.parse_block), debug)
    return _named_errors(path, csvblocks.iter_block_codes(path, sep, names, schema,
                                                          debug=debug))


class RestartRead(Exception):
    """:func:`iter_codes` (engine ``"auto"``) met text the block reader does not read (a
    quote, a bare carriage return, a blank line) after it had yielded chunks of the file:
    the consumer discards every chunk it got and reads the file again with
    ``engine="pandas"`` (:func:`read_codes` and :class:`dpcore.counted.FileTable` do)."""


def iter_codes(path: str | os.PathLike, schema: Schema, *, sep: str = ",",
               chunk_rows: int = DEFAULT_CHUNK_ROWS, debug: bool = False,
               engine: str = "auto") -> Iterator[np.ndarray]:
    """Read and encode a table chunk by chunk: yields ``k x d`` code arrays (dtype
    ``schema.code_dtype()``, schema order) whose concatenation is :func:`read_codes`' array.
    Memory: one chunk, its columns held as pandas categories (each distinct text once), and
    its codes. ``debug=True`` puts the offending value in an error (sensitive data).

    ``engine``: ``"auto"`` splits a CSV that holds no quote, no blank line and no bare
    carriage return with the compiled splitter (:mod:`dpcore.csvblocks`; blocks of 32 MiB of
    lines, not ``chunk_rows``), and reads any other file (and Parquet) with pandas;
    ``"compiled"`` and ``"pyarrow"`` (pyarrow's parser, where installed) split plain CSVs only
    and refuse other files; ``"pandas"`` reads every file with pandas. All give the same
    codes and, for a bad file, the same error: with a block reader, the row check runs when
    splitting or encoding fails, so a ragged row is still reported before a bad value, and
    within a chunk the earliest bad row is reported (:func:`encode_frame`), so the chunking
    does not matter. A block reader finds a quote only when it reaches it: before the first
    chunk ``"auto"`` turns to pandas itself; after, it raises :class:`RestartRead` (the
    chunks so far are the file's, but the rest must come from the pandas reader, which
    checks every row's field count before it yields anything)."""
    if engine not in READ_ENGINES:
        raise InvalidArgumentError(f"engine must be one of {READ_ENGINES}, got {engine!r}")
    chunks = _block_codes(Path(path), sep, engine, schema, debug) if engine != "pandas" \
        else None
    if engine in ("pyarrow", "compiled") and chunks is None:
        raise InvalidArgumentError(f"{path}: the {engine} reader needs "
                                   f"{'pyarrow and ' if engine == 'pyarrow' else ''}a CSV "
                                   f"(without quotes, bare carriage returns or blank lines)")
    return _iter_codes(path, schema, sep, chunk_rows, debug, engine, chunks)


def _iter_codes(path: Any, schema: Schema, sep: str, chunk_rows: int, debug: bool,
                engine: str, chunks: Iterator[np.ndarray] | None) -> Iterator[np.ndarray]:
    if chunks is not None:
        from dpcore.csvblocks import CsvBlockError, NotPlainText
        sep = check_delimiter(sep)
        yielded = False
        try:
            for codes in chunks:
                yielded = True
                yield codes
            return
        except NotPlainText:            # quoted text, or a bare CR: pandas reads it
            if engine in ("pyarrow", "compiled"):
                bom = ", byte-order marks in the data" if engine == "pyarrow" else ""
                raise InvalidArgumentError(f"{path}: the {engine} reader reads CSVs without "
                                           f"quotes, bare carriage returns{bom} or blank "
                                           f"lines") from None
            if yielded:
                raise RestartRead(f"{path}: read it again with engine='pandas'") from None
        # The pandas path checks every row's field count before it encodes anything; here
        # the check runs only when something fails, and raises first if it finds a ragged
        # row (or bad UTF-8), so the error is the same.
        except CsvBlockError as err:
            _check_rows(Path(path), sep, len(_read_header(Path(path), sep)))
            raise EncodingError(f"{path}: malformed CSV: {err}") from None
        except EncodingError:
            _check_rows(Path(path), sep, len(_read_header(Path(path), sep)))
            raise
    yield from _encode_each(path, schema, iter_table_chunks(path, sep=sep, chunk_rows=chunk_rows,
                                                             typed=True), debug)


def read_codes(path: str | os.PathLike, schema: Schema, *, sep: str = ",",
               chunk_rows: int = DEFAULT_CHUNK_ROWS, debug: bool = False,
               engine: str = "auto") -> np.ndarray:
    """The whole table's ``N x d`` code array: :func:`iter_codes`' chunks, concatenated (the
    readers, rules and errors are its). Memory: one chunk plus the compact code array
    (10 M rows x 15 columns of uint8 is 150 MB)."""
    options = {"sep": sep, "chunk_rows": chunk_rows, "debug": debug}
    try:
        return _gathered(iter_codes(path, schema, engine=engine, **options), path)
    except RestartRead:
        return _gathered(iter_codes(path, schema, engine="pandas", **options), path)


#: Bytes of a file sampled to guess its row count (:func:`_gathered`).
_SAMPLE_BYTES = 1 << 20


def _row_guess(path: Any, columns: int) -> int:
    """About 10% more than the lines of the file at ``path`` (from the line length of its
    first MiB), 0 when it cannot tell (not a plain file, Parquet, unreadable); at most the
    rows a file of that size can hold (a row of ``columns`` fields takes at least ``columns``
    bytes: its delimiters and line end)."""
    try:
        if is_parquet(path) or not os.path.isfile(path):
            return 0
        size = os.path.getsize(path)
        with open_input(path) as fh:
            head = fh.read(_SAMPLE_BYTES)
    except OSError:
        return 0
    lines = head.count(b"\n")
    if not head or lines == 0:
        return 0
    # a file whose first MiB has short lines and the rest long ones is guessed high
    return min(int(size / len(head) * lines * 1.1) + 1024, size // max(columns, 1) + 1)


def _gathered(parts: Iterator[np.ndarray], path: Any) -> np.ndarray:
    """The chunks in one array. They are copied into one array sized from a guess of the
    row count (:func:`_row_guess`), not collected and concatenated: that held the table
    twice (the chunks, then the copy) and made the kernel zero the copy's pages afresh
    (300 MB of fresh pages at 10^7 Adult rows instead of 150). The guess costs nothing when
    too large (pages never written are never mapped: the result is the filled rows' view);
    rows past it go to a list, concatenated at the end."""
    first = next(parts, None)
    if first is None:       # the readers raise first (a table needs rows): cannot happen
        raise EncodingError(f"{path}: the table has a header but no data rows")
    guess = max(_row_guess(path, first.shape[1]), len(first))
    out = np.empty((guess, first.shape[1]), dtype=first.dtype)
    out[:len(first)] = first
    rows, extra = len(first), []
    for part in parts:
        if extra or rows + len(part) > guess:
            extra.append(part)
            continue
        out[rows:rows + len(part)] = part
        rows += len(part)
    if extra:
        return np.concatenate([out[:rows], *extra])
    if rows == guess:
        return out
    # the filled rows (a view: the pages of the rest were never touched). A small table
    # (under the guess's slack) gets its own copy, so no large untouched block is held.
    return out[:rows] if rows > 1 << 16 else out[:rows].copy()


def _named_errors(path: Any, parts: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """Code chunks whose encoding errors name the file; a table without rows is an error."""
    rows = 0
    try:
        for codes in parts:
            rows += len(codes)
            yield codes
    except EncodingError as err:
        raise EncodingError(f"{path}: {err}", column=err.column, row=err.row,
                            value=err.value) from None
    if rows == 0:
        raise EncodingError(f"{path}: the table has a header but no data rows")


def _encode_each(path: Any, schema: Schema, chunks: Iterable[pd.DataFrame], debug: bool
                 ) -> Iterator[np.ndarray]:
    """Each chunk's codes; errors name the file, and a table without rows is an error."""
    rows = 0
    for chunk in chunks:
        try:
            codes = encode_frame(chunk, schema, row_offset=rows, debug=debug)
        except EncodingError as err:
            raise EncodingError(f"{path}: {err}", column=err.column, row=err.row,
                                value=err.value) from None
        rows += len(chunk)
        yield codes
    if rows == 0:
        raise EncodingError(f"{path}: the table has a header but no data rows")


def _bin_integer_range(col: NumericColumn, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised schema.integer_bin_range: the integers a..b of each bin k."""
    ranges = np.array([integer_bin_range(col.edges, j) for j in range(col.bins)], dtype=np.float64)
    return ranges[k, 0], ranges[k, 1]


def _decode_numeric(col: NumericColumn, k: np.ndarray, rng: np.random.Generator,
                    method: str) -> np.ndarray:
    edges = np.asarray(col.edges)
    if col.integer:
        a, b = _bin_integer_range(col, k)
        if method == "midpoint":
            return np.floor((a + b) / 2)
        return a + np.floor(rng.random(len(k)) * (b - a + 1))
    lo, hi = edges[k], edges[k + 1]
    if method == "midpoint":
        return (lo + hi) / 2
    x = lo + (hi - lo) * rng.random(len(k))
    # The half-open bins must not decode onto their right edge (float rounding can land there).
    return np.where(k == col.bins - 1, np.minimum(x, hi), np.minimum(x, np.nextafter(hi, lo)))


def decode_codes(codes: np.ndarray, schema: Schema, *, seed: Any = None,
                 method: str | None = None, debug: bool = False, start: int = 0,
                 total: int | None = None, categorical: bool = False) -> pd.DataFrame:
    """Map an ``N x d`` code array back to a DataFrame of values. ``method`` overrides each
    numeric column's ``decode`` ("uniform" or "midpoint"); ``seed`` fixes the uniform draws;
    ``debug=True`` puts an out-of-range code in the error.

    Chunks: ``codes`` may be rows ``start .. start + N`` of a table of ``total`` rows. The
    whole table's uniform draws come from one generator, ``default_rng(seed)``, column after
    column (``total`` doubles per uniform column, one per row); a chunk skips to its own
    draws with ``advance``, so decoding a table chunk by chunk, with any chunk size, gives
    the rows the whole-table call gives (tested). Without a seed the draws are fresh anyway.

    ``categorical=True`` returns the categorical columns as pandas ``category`` columns (each
    label held once: what the table writers want) instead of ``object`` columns of labels;
    the values are the same."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != len(schema):
        raise InvalidArgumentError(f"codes must be N x {len(schema)}, got shape {codes.shape}")
    if method not in (None, "uniform", "midpoint"):
        raise InvalidArgumentError(f"method must be 'uniform' or 'midpoint', got {method!r}")
    total = len(codes) if total is None else int(total)
    if not 0 <= start <= total - len(codes):
        raise InvalidArgumentError(f"rows {start}..{start + len(codes)} must lie in a table "
                                   f"of {total} rows")
    chunked = (start, total) != (0, len(codes))
    if chunked and (seed is None or isinstance(seed, np.random.Generator)):
        seed = None   # fresh draws: nothing to reproduce
    rng = np.random.default_rng(seed)
    used = 0          # uniform draws the whole table's earlier columns take
    if schema.constraints:   # derived columns follow their parents, whatever produced the codes
        from dpcore.constraints import derive
        codes = derive(codes.copy(), schema)
    data: dict[str, Any] = {}
    for j, col in enumerate(schema.columns):
        k = codes[:, j].astype(np.int64)
        outside = (k < 0) | (k >= col.size)
        if outside.any():
            i = _first(outside)
            shown = f" (it is {int(k[i])})" if debug else ""
            raise InvalidArgumentError(f"column {col.name!r}, row {i + 1}: codes must lie in "
                                       f"0..{col.size - 1}, and this one does not{shown}")
        if isinstance(col, CodeColumn):
            data[col.name] = k
            continue
        miss = k == col.missing_code if col.missing_code is not None else np.zeros(len(k), bool)
        if isinstance(col, CategoricalColumn):
            labels = list(col.categories) + ([col.other] if col.other is not None else [])
            if categorical:
                data[col.name] = pd.Categorical.from_codes(
                    np.where(miss, -1, k), categories=pd.Index(labels, dtype=object),
                    validate=False)
            else:
                table = np.array(labels + [None], dtype=object)
                data[col.name] = pd.Series(table[np.where(miss, len(labels), k)], dtype=object)
            continue
        how = method or col.decode
        col_rng = rng
        if chunked and seed is not None and how == "uniform":
            col_rng = np.random.default_rng(seed)
            col_rng.bit_generator.advance(used + start)
        used += total if how == "uniform" else 0
        values = _decode_numeric(col, np.where(miss, 0, k), col_rng, how)
        if isinstance(col, DatetimeColumn):
            data[col.name] = pd.Series(np.where(miss, None, from_units(values, col)), dtype=object)
        elif col.integer:
            s = pd.Series(values.astype(np.int64))
            data[col.name] = s.astype("Int64").mask(miss) if miss.any() else s
        else:
            data[col.name] = pd.Series(np.where(miss, np.nan, values))
    # every column is a fresh array: no copy, and no consolidation of the integer columns
    # into one 2-d block (a copy the table writers undo, taking each column back out)
    return pd.DataFrame(data, copy=False)


_TEXT_ROWS = 100_000


def _csv_column(series: pd.Series, special: tuple[str, ...]) -> tuple | None:
    """One column for :func:`dpcore._core.format_csv`: (values, None, mask) for integers,
    (positions, labels, None) for texts; None when pandas must format it (floats, dates,
    texts that need quoting)."""
    dtype = series.dtype
    if dtype == np.int64:
        return series.to_numpy(), None, None
    if isinstance(dtype, pd.Int64Dtype):
        missing = series.isna().to_numpy()
        return series.to_numpy(dtype=np.int64, na_value=0), None, missing if missing.any() else None
    if isinstance(dtype, pd.CategoricalDtype):
        index, uniques = series.cat.codes.to_numpy(), list(dtype.categories)
    elif dtype == object:
        index, uniques = pd.factorize(series.to_numpy(), use_na_sentinel=True)
        uniques = list(uniques)
    else:
        return None
    if not all(type(u) is str and not any(x in u for x in special) for u in uniques):
        return None              # a number, a timestamp, a quoted field: pandas formats it
    try:
        "".join(uniques).encode("utf-8")
    except UnicodeEncodeError:
        return None              # a lone surrogate: pandas' writer raises its own error
    return index, uniques, None  # position -1 (None / NaN) is the missing token


def _has_cr(frame: pd.DataFrame, missing_token: str = "") -> bool:
    """Whether a text of the frame (a label of a categorical column, else a value), its header
    or the missing token holds a carriage return. Categorical columns are judged by their
    labels, so every chunk of one decoded table is judged alike."""
    def texts(series):
        if isinstance(series.dtype, pd.CategoricalDtype):
            return series.dtype.categories
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            return series.to_numpy(dtype=object)
        return ()
    return "\r" in missing_token or any(isinstance(c, str) and "\r" in c
                                         for c in frame.columns) or any(
        isinstance(t, str) and "\r" in t for name in frame.columns for t in texts(frame[name]))


def _plain_csv(frame: pd.DataFrame, missing_token: str, sep: str, *, header: bool
               ) -> bytes | None:
    """``frame.to_csv(index=False, na_rep=missing_token, sep=sep)``'s UTF-8 bytes, formatted
    by the compiled writer (:func:`dpcore._core.format_csv`) for the frames decoding makes
    (at least two columns of integers, or of texts that need no quoting); None for any other
    frame, which pandas then writes. What pandas' QUOTE_MINIMAL writer gives when no field
    holds the delimiter, a quote or a line break (tested byte for byte)."""
    from dpcore import _core
    special = (sep, '"', "\n", "\r")
    if frame.shape[1] < 2 or any(not isinstance(c, str) or any(x in c for x in special)
                                 for c in frame.columns):
        return None
    if any(x in missing_token for x in special):
        return None
    columns = []
    for name in frame.columns:
        column = _csv_column(frame[name], special)
        if column is None:
            return None
        columns.append(column)
    end = os.linesep                             # pandas' line terminator
    head = (sep.join(frame.columns) + end).encode("utf-8") if header else b""
    return head + _core.format_csv(columns, sep, end, missing_token)


def is_parquet(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a Parquet file (by its extension), as every reader and writer
    here decides it."""
    return Path(path).suffix.lower() in (".parquet", ".pq")


def write_table(frame: pd.DataFrame | Iterable[pd.DataFrame], path: str | os.PathLike, *,
                missing_token: str = "", sep: str = ",", schema: Schema | None = None) -> int:
    """Write CSV (or Parquet by extension) to a temporary file beside ``path``, then rename:
    a failed write leaves no partial file. ``frame`` may be an iterable of DataFrames with the
    same columns (chunks): the file is then written chunk by chunk, never held whole; a CSV
    has the bytes of the concatenated table, a Parquet file (with pyarrow: a row group per
    chunk, :mod:`dpcore.arrowio`; another engine concatenates first) reads back as it.
    ``schema``: the public schema the frames were decoded under; a Parquet file then has
    the column types it fixes (:func:`dpcore.arrowio.public_layout`: the same in every part of
    a partitioned dataset), not those its chunks happen to show. Returns the rows written."""
    frames = [frame] if isinstance(frame, pd.DataFrame) else frame
    sep = check_delimiter(sep)
    target = Path(path)
    with temporary_output(path) as tmp:
        rows = 0
        if is_parquet(target):
            from dpcore.arrowio import have_pyarrow, public_layout, write_parquet_chunks
            if have_pyarrow():       # a row group per chunk, never the whole table
                rows = write_parquet_chunks(frames, tmp, None if schema is None
                                            else public_layout(schema))
            else:                    # another engine (fastparquet): the table whole
                from dpcore.arrowio import as_object_columns
                whole = as_object_columns(pd.concat(list(frames), ignore_index=True))
                whole.to_parquet(tmp, index=False)
                rows = len(whole)
        else:
            with open(tmp, "wb") as fh:
                for k, part in enumerate(frames):
                    # slices of _TEXT_ROWS: the text is several times the frame's size, so it
                    # is built (and freed) a slice at a time
                    for start in range(0, max(len(part), 1), _TEXT_ROWS):
                        piece = part.iloc[start:start + _TEXT_ROWS]
                        header = k == 0 and start == 0
                        data = _plain_csv(piece, missing_token, sep, header=header)
                        if data is None:
                            # QUOTE_MINIMAL leaves a bare "\r" unquoted (it is not in the
                            # line terminator): such a table quotes every text instead
                            quoting = csv.QUOTE_NONNUMERIC if _has_cr(piece, missing_token) else \
                                csv.QUOTE_MINIMAL
                            data = piece.to_csv(None, index=False, header=header,
                                                na_rep=missing_token, sep=sep,
                                                quoting=quoting).encode("utf-8")
                        fh.write(data)
                    rows += len(part)
    return rows


@contextlib.contextmanager
def temporary_output(path: str | os.PathLike) -> Iterator[str]:
    """A temporary file beside ``path`` (mode :func:`default_file_mode`) for the caller to
    write, renamed over ``path`` when the block ends and removed if it fails: a failed
    write leaves no partial file."""
    target = Path(path)
    if not target.parent.is_dir():
        raise InvalidArgumentError(f"cannot write {str(path)!r}: directory "
                                   f"{str(target.parent)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise InvalidArgumentError(f"cannot write {str(path)!r}: {err.strerror}") from None
    os.close(fd)
    try:
        os.chmod(tmp, default_file_mode())
        yield tmp
        replace_into(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


FEW_VALUES = 12            # a numeric column with at most this many values is drafted categorical
POINT_MASS_SHARE = 0.05   # a value holding this share of the rows is drafted as its own bin
_MAX_TRACKED = 1000


def _count_values(st: dict[str, Any], values: np.ndarray, counts: np.ndarray) -> None:
    """Running value counts (the heaviest _MAX_TRACKED values: enough to find point masses);
    ``counts[i]`` rows hold ``values[i]``."""
    merged = st["counts"]
    for v, c in zip(values.tolist(), counts.tolist()):
        merged[v] = merged.get(v, 0) + c
    if len(merged) > _MAX_TRACKED:
        keep = sorted(merged.items(), key=lambda kv: -kv[1])[:_MAX_TRACKED]
        st["counts"] = dict(keep)
        st["counts"][float("nan")] = 0          # marks "more values than tracked"
    st["rows"] += int(counts.sum())


def _point_masses(st: dict[str, Any]) -> list[float]:
    rows = max(st["rows"], 1)
    return sorted(v for v, c in st["counts"].items()
                  if np.isfinite(v) and c / rows >= POINT_MASS_SHARE)[:8]


def _number_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def infer_schema(chunks: pd.DataFrame | Iterable[pd.DataFrame], *,
                 bounds: Mapping[str, tuple[float, float]] | None = None,
                 categories: Mapping[str, Sequence[str]] | None = None,
                 bins: int = 32, max_categories: int = 1000,
                 missing_values: Sequence[str] = ("",)) -> Schema:
    """Draft a schema. NOT PRIVATE for every column not covered by ``bounds`` (numeric,
    ``(lower, upper)``; integer when both are ints) or ``categories``: those columns are read
    from the data, and the schema's ``warning`` names them. A drafted categorical column whose
    every value holds the same delimiter (one of :data:`SNIFF_DELIMITERS`) is refused: those are
    whole records read with the wrong delimiter, and drafting them would copy the data into the
    schema.

    A numeric column with at most FEW_VALUES distinct values is drafted as categorical, and a
    value holding at least POINT_MASS_SHARE of the rows gets its own bin (a point mass).

    >>> df = pd.DataFrame({"x": [str(v) for v in range(40)] + ["0"] * 10, "c": ["a", "b"] * 25})
    >>> s = infer_schema(df, categories={"c": ["a", "b", "z"]}, bins=4)
    >>> s["x"].edges, s["c"].categories, "x" in s.warning
    ((0.0, 1.0, 10.0, 20.0, 30.0, 39.0), ('a', 'b', 'z'), True)
    >>> infer_schema(pd.DataFrame({"age": ["22.0", "27.0", "32.0"] * 5}))["age"].categories
    ('22', '27', '32')
    """
    bounds, categories = dict(bounds or {}), dict(categories or {})
    if isinstance(chunks, pd.DataFrame):
        chunks = [chunks]
    order: list[str] | None = None
    stats: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        if not all(isinstance(c, str) for c in chunk.columns):  # 0 drafts column "0"
            chunk = chunk.set_axis([str(c) for c in chunk.columns], axis=1)
        if order is None:
            order = [str(c) for c in chunk.columns]
            unknown = sorted((set(bounds) | set(categories)) - set(order))
            if unknown:
                raise InvalidArgumentError(f"--bounds/--categories name column(s) {unknown} "
                                           f"that are not in the data")
            stats = {c: {"values": set(), "numeric": True, "integer": True, "lo": np.inf,
                         "hi": -np.inf, "missing": False, "seps": set(SNIFF_DELIMITERS),
                         "counts": {}, "rows": 0}
                     for c in order if c not in bounds and c not in categories}
        for name, st in stats.items():
            series = chunk[name]
            missing = _missing_mask(series, missing_values)
            st["missing"] |= bool(missing.any())
            present = series[~missing]
            index, uniques = _factorize(present)
            texts = [str(u) for u in uniques]
            st["seps"] = {d for d in st["seps"] if all(d in t for t in texts)}
            if len(st["values"]) <= max_categories:
                st["values"].update(texts)
            if st["numeric"]:
                nums = np.array([_number_of(u) for u in uniques], dtype=np.float64)
                if len(nums) and not np.isfinite(nums).all():
                    st["numeric"] = False
                elif len(nums):
                    st["lo"], st["hi"] = min(st["lo"], nums.min()), max(st["hi"], nums.max())
                    st["integer"] &= bool((nums == np.floor(nums)).all())
                    _count_values(st, nums, np.bincount(index[index >= 0],
                                                        minlength=len(uniques)))
    if order is None:
        raise InvalidArgumentError("the data has no header")
    columns: list[Column] = []
    for name in order:
        if name in bounds:
            lo, hi = bounds[name]
            integer = isinstance(lo, int) and isinstance(hi, int)
            nb = min(bins, int(hi - lo + 1)) if integer else bins
            columns.append(NumericColumn(name, equal_width_edges(lo, hi, nb, integer), integer))
        elif name in categories:
            columns.append(CategoricalColumn(name, tuple(str(c) for c in categories[name])))
        else:
            st = stats[name]
            miss = "code" if st["missing"] else "error"
            if st["numeric"] and np.isfinite(st["lo"]) and len(st["counts"]) <= FEW_VALUES:
                # A few-valued number (a 6-valued age, a 1-5 rating) is a category: bins would
                # decode it to values that never occur.
                cats = tuple(_number_text(v) for v in sorted(st["counts"]))
                columns.append(CategoricalColumn(name, cats, missing=miss))  # type: ignore
            elif st["numeric"] and np.isfinite(st["lo"]):
                lo, hi, integer = st["lo"], st["hi"], st["integer"]
                nb = min(bins, int(hi - lo + 1)) if integer else bins
                edges = with_points(equal_width_edges(lo, hi, nb, integer), _point_masses(st),
                                    integer)
                columns.append(NumericColumn(name, edges, integer, missing=miss))  # type: ignore
            else:
                if st["values"] and st["seps"]:
                    raise InvalidArgumentError(
                        f"column {name!r}: every value contains {min(st['seps'])!r}, so these "
                        f"look like whole records read with the wrong delimiter; give the right "
                        f"delimiter (refusing to copy the records into a schema)")
                if len(st["values"]) > max_categories:
                    raise InvalidArgumentError(
                        f"column {name!r} has more than {max_categories} distinct values: "
                        f"drop it, bin it, or list its public categories with --categories")
                cats = tuple(sorted(st["values"])) or ("",)
                columns.append(CategoricalColumn(name, cats, missing=miss))  # type: ignore
    derived = [n for n in order if n in stats]
    warning = f"{INFER_WARNING} Data-derived columns: {derived}." if derived else None
    return Schema(columns, missing_values=missing_values, warning=warning)
