"""Datetime columns: public bounds and a resolution, binned as integers, decoded to timestamps.

A datetime column counts time in whole units of its resolution (years, months, days, hours,
minutes or seconds since 1970) and is binned like an integer numeric column over its public
bounds, so synthetic values are always valid timestamps at that resolution (a YYYYMMDD column
read as a number came back as 19629302; read as a date it comes back as a date)::

    {"type": "datetime", "lower": "2019-01-01", "upper": "2019-12-31", "resolution": "day",
     "bins": 12, "format": "%Y%m%d"}

``format`` (strftime codes) is how the column is written in the data, for reading and writing;
without it values are read as ISO 8601 and written as ISO 8601 at the resolution.

>>> col = datetime_column_from_dict("d", {"type": "datetime", "lower": "2019-01-01",
...                                       "upper": "2019-01-31", "resolution": "day", "bins": 3})
>>> col.edges
(17897.0, 17907.0, 17917.0, 17927.0)
>>> list(from_units(to_units(pd.Series(["2019-01-05", "2019-01-31"]), col), col))
['2019-01-05', '2019-01-31']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dpcore.errors import InvalidArgumentError
from dpcore.schema import NumericColumn, SchemaError, equal_width_edges

RESOLUTIONS = {"year": "Y", "month": "M", "day": "D", "hour": "h", "minute": "m", "second": "s"}
MAX_BINS = 1 << 20


@dataclass(frozen=True)
class DatetimeColumn(NumericColumn):
    """A numeric column of whole ``resolution`` units since 1970 (edges in those units)."""

    resolution: str = "day"
    format: str | None = None

    def text(self, units: float) -> str:
        return str(from_units(np.array([units]), self)[0])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "datetime", "lower": self.text(self.lower),
                               "upper": self.text(self.upper), "resolution": self.resolution,
                               "bins": [self.text(e) for e in self.edges],
                               "out_of_bounds": self.out_of_bounds, "missing": self.missing}
        if self.format is not None:
            out["format"] = self.format
        return out


def _fail(column: str, message: str) -> SchemaError:
    return SchemaError(f"schema column {column!r}: {message}")


def _parse(column: str, key: str, text: Any, resolution: str, fmt: str | None) -> float:
    if not isinstance(text, str):
        raise _fail(column, f"{key!r} must be a timestamp string, got {text!r}")
    units = _units(pd.Series([text]), resolution, fmt)[0]
    if not np.isfinite(units):
        raise _fail(column, f"{key!r} = {text!r} is not a timestamp"
                            f"{' in the format ' + repr(fmt) if fmt else ' (ISO 8601)'}")
    return float(units)


def token_units(col: DatetimeColumn, token: str) -> float:
    """``token`` as whole units of ``col``'s resolution (NaN when it is no timestamp in the
    column's format): what a cell holding it would encode from."""
    return float(_units(pd.Series([token], dtype=object), col.resolution, col.format)[0])


def datetime_column_from_dict(name: str, spec: Mapping[str, Any]) -> DatetimeColumn:
    resolution = spec.get("resolution", "day")
    if not isinstance(resolution, str) or resolution not in RESOLUTIONS:
        raise _fail(name, f"'resolution' must be one of {list(RESOLUTIONS)}, got {resolution!r}")
    fmt = spec.get("format")
    if fmt is not None and (not isinstance(fmt, str) or "%" not in fmt):
        raise _fail(name, f"'format' must be a strftime pattern such as '%Y%m%d', got {fmt!r}")
    bins = spec.get("bins")
    if isinstance(bins, list):
        edges = tuple(_parse(name, "bins", b, resolution, fmt) for b in bins)
        if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
            raise _fail(name, "'bins' must list at least 2 increasing timestamps")
    elif isinstance(bins, int) and not isinstance(bins, bool):
        lower = _parse(name, "lower", spec.get("lower"), resolution, fmt)
        upper = _parse(name, "upper", spec.get("upper"), resolution, fmt)
        if not lower < upper:
            raise _fail(name, f"'lower' must be before 'upper' at the resolution {resolution}")
        if not 1 <= bins <= MAX_BINS:
            raise _fail(name, f"'bins' must be in [1, {MAX_BINS}], got {bins}")
        try:
            edges = equal_width_edges(lower, upper, bins, True)
        except InvalidArgumentError as err:
            raise _fail(name, str(err)) from None
    else:
        raise _fail(name, f"'bins' must be a count or a list of timestamps, got {bins!r}")
    choice = {key: spec.get(key, "error") for key in ("out_of_bounds", "missing")}
    for key, allowed in (("out_of_bounds", ("error", "clip")), ("missing", ("error", "code"))):
        if choice[key] not in allowed:
            raise _fail(name, f"{key!r} must be one of {list(allowed)}, got {choice[key]!r}")
    return DatetimeColumn(name, edges, True, choice["out_of_bounds"], choice["missing"],
                          "uniform", resolution, fmt)


def _units(series: pd.Series, resolution: str, fmt: str | None) -> np.ndarray:
    """Whole units since 1970 as floats (NaN where a value is not a timestamp)."""
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        stamps = pd.to_datetime(series)
    else:
        stamps = _parsed(series, fmt)
        if stamps is None:
            # pandas refuses a batch that mixes UTC offsets (or offsets and none) even when
            # told to coerce (pandas 3 raises, 2.x returns objects): the values are parsed a
            # group of one offset at a time, so that which values share a batch (a reader's
            # chunks and blocks) never decides whether a file reads
            return _units_by_offset(series, resolution, fmt)
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    values = stamps.to_numpy(dtype="datetime64[ns]")
    code = RESOLUTIONS[resolution]
    whole = values.astype(f"datetime64[{code}]")
    exact = whole.astype("datetime64[ns]") == values      # a finer value is not a whole unit
    out = whole.astype(np.int64).astype(np.float64)
    out[np.isnat(values) | ~exact] = np.nan
    return out


_OFFSET = r"(Z|[+-]\d\d(?::?\d\d)?)$"


def _parsed(series: pd.Series, fmt: str | None) -> pd.Series | None:
    """The texts as timestamps (NaT where not one), or None where pandas cannot put them in
    one column (mixed UTC offsets)."""
    try:
        stamps = pd.to_datetime(series.astype(object), format=fmt or "ISO8601", errors="coerce")
    except (ValueError, TypeError):
        return None
    return stamps if pd.api.types.is_datetime64_any_dtype(stamps.dtype) else None


def _units_by_offset(series: pd.Series, resolution: str, fmt: str | None) -> np.ndarray:
    """:func:`_units` of a batch with mixed UTC offsets: each group of values with one offset
    (or none) in one call; a group pandas still cannot parse whole, value by value (a value
    it cannot parse alone is not a timestamp: NaN)."""
    texts = series.astype(object).reset_index(drop=True)
    offsets = texts.astype(str).str.extract(_OFFSET, expand=False).fillna("")
    out = np.full(len(texts), np.nan)
    for _, where in offsets.groupby(offsets).groups.items():
        group = texts.iloc[where].reset_index(drop=True)
        if _parsed(group, fmt) is not None:
            out[where] = _units(group, resolution, fmt)
            continue
        for i, value in zip(where, group):
            one = pd.Series([value], dtype=object)
            if _parsed(one, fmt) is not None:
                out[i] = _units(one, resolution, fmt)[0]
    return out


def to_units(series: pd.Series, col: DatetimeColumn) -> np.ndarray:
    return _units(series, col.resolution, col.format)


def from_units(units: np.ndarray, col: DatetimeColumn) -> np.ndarray:
    """Timestamps (text) for whole units since 1970."""
    code = RESOLUTIONS[col.resolution]
    stamps = np.asarray(units, dtype=np.int64).astype(f"datetime64[{code}]")
    if col.format is not None:
        return pd.Series(stamps.astype("datetime64[s]")).dt.strftime(col.format).to_numpy(object)
    return np.datetime_as_string(stamps, unit=code).astype(object)
