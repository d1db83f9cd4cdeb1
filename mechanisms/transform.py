"""NIST-MST's transform of wide integer attributes (Alg. 3) and its reverse (Alg. 9, 10), made
general: a :class:`Transform` rewrites some integer columns of a public schema into smaller
ones, chosen from a *public* (provisional) table, before the curator sees the data.

Two patterns, one per attribute of the paper:

* :class:`Grid` (VALUEH): ``v -> v // step`` for ``v <= cutoff`` (shifted to start at 0), and
  each special code its own code after the grid. Reverse: ``step * code``, specials back.
  A special code is a frequent public value (at least ``special_share`` of the rows) far above
  the cutoff (over 10 times as far from the lower bound): a sentinel such as VALUEH's 9999998.
* :class:`Split` (INCWAGE): one column becomes ``NAME_A = v // width`` (coarse, specials after
  it) and ``NAME_B`` = the index of the first modulus of ``moduli`` (Alg. 10's
  ``m = [100, 20, 50, 25, 10, 5, 2, 1]``) dividing ``v mod width`` (classes left empty by
  ``width`` are dropped). The original column is never measured, only A and B. Reverse:
  ``width * A`` plus a residue drawn uniformly from class B's residues (Alg. 10), seeded.

Values the transform does not cover are changed, never refused: a value off the grid is
rounded down onto it, a value above the cutoff that is not a special code is top-coded to the
cutoff (``cutoff``, ``step`` and the specials are chosen so that at least ``coverage`` of the
public values are covered exactly, the paper's 99.7 % for VALUEH, 99.95 % for INCWAGE).

Privacy: a Transform is a function of the public schema and the public table only; it never
reads the sensitive records. Applied to the sensitive table it is a fixed record-by-record map,
so tables that differ in one record still differ in one record and every marginal of the
transformed table keeps L2 sensitivity 1 (NIST-MST Sec. 5, Step 1: "the data transformations
... do not affect the privacy analysis"); Split turns one attribute into two, and one record
still adds one count to every marginal. :meth:`Transform.reverse` reads only synthetic records:
post-processing, no budget.

>>> import pandas as pd
>>> from dpcore.schema import Schema
>>> s = Schema.from_dict({"columns": {"v": {"type": "numeric", "lower": 0,
...     "upper": 9999999, "bins": 10, "integer": True}}})
>>> public = pd.DataFrame({"v": [0, 5, 10, 25, 9999999] * 20 + [3]})
>>> t = Transform.from_public(public, s, {"v": "grid"}, coverage=0.99)
>>> t.maps["v"]
Grid(column='v', lower=0, step=5, cutoff=25, specials=(9999999,))
>>> t.apply(pd.DataFrame({"v": [10, 9999999, 7]}))["v"].tolist()
[2, 6, 1]
>>> t.reverse(t.apply(pd.DataFrame({"v": [10, 9999999]})))["v"].tolist()
[10, 9999999]
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from dpcore.encoding import check_columns
from dpcore.errors import InvalidArgumentError
from dpcore.schema import NumericColumn, Schema, equal_width_edges

STEPS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)   # grid steps tried, finest first
MODULI = (100, 20, 50, 25, 10, 5, 2, 1)                         # Alg. 10's m
COVERAGE = 0.995          # share of public values a chosen transform covers exactly
SPECIAL_SHARE = 0.001     # a value above the cutoff holding this share of the public rows is special
WIDE = 1000               # "auto" transforms integer columns with more values than this
_FAR = 10                 # a special code lies this many times further from the lower bound than the cutoff


@dataclass(frozen=True)
class Grid:
    """Alg. 3 (1) / Alg. 9 for VALUEH: codes ``v // step - lower // step`` up to the cutoff's,
    then one code per special value."""

    column: str
    lower: int
    step: int
    cutoff: int
    specials: tuple[int, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def grid_size(self) -> int:
        return self.cutoff // self.step - self.lower // self.step + 1

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.grid_size + len(self.specials),)

    def forward(self, v: np.ndarray) -> tuple[np.ndarray, ...]:
        code = np.floor_divide(np.minimum(v, self.cutoff), self.step) - self.lower // self.step
        for i, s in enumerate(self.specials):
            code = np.where(v == s, self.grid_size + i, code)
        return (code,)                                   # NaN (missing) stays NaN

    def backward(self, codes: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        (k,) = codes
        v = (k + self.lower // self.step) * self.step
        v = np.maximum(v, self.lower)   # the first grid cell may start below the lower bound
        for i, s in enumerate(self.specials):
            v = np.where(k == self.grid_size + i, s, v)
        return v


@dataclass(frozen=True)
class Split:
    """Alg. 3 (2) / Alg. 9-10 for INCWAGE: ``NAME_A`` = ``v // width`` (shifted to start at 0;
    specials after it), ``NAME_B`` = the residue class of ``v mod width`` (0 for specials and
    missing values, where it carries nothing)."""

    column: str
    lower: int
    upper: int
    width: int
    cutoff: int
    specials: tuple[int, ...] = ()
    moduli: tuple[int, ...] = MODULI

    def __post_init__(self) -> None:
        if self.width < 2:
            raise InvalidArgumentError(f"transform of {self.column!r}: width must be >= 2, "
                                       f"got {self.width}")
        if not self.moduli or self.moduli[-1] != 1 or min(self.moduli) < 1:
            raise InvalidArgumentError(f"transform of {self.column!r}: moduli must be positive "
                                       f"and end with 1 (every residue needs a class), got "
                                       f"{list(self.moduli)}")

    @property
    def names(self) -> tuple[str, ...]:
        return (f"{self.column}_A", f"{self.column}_B")

    @property
    def coarse_size(self) -> int:
        return self.cutoff // self.width - self.lower // self.width + 1

    def classes(self) -> list[np.ndarray]:
        """Alg. 10: the residues of each class, the classes that ``width`` leaves empty dropped."""
        residues = np.arange(self.width)
        first = np.full(self.width, len(self.moduli))
        for i, m in reversed(list(enumerate(self.moduli))):
            first = np.where(residues % m == 0, i, first)
        return [residues[first == i] for i in range(len(self.moduli)) if (first == i).any()]

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.coarse_size + len(self.specials), len(self.classes()))

    def forward(self, v: np.ndarray) -> tuple[np.ndarray, ...]:
        c = np.minimum(v, self.cutoff)
        a = np.floor_divide(c, self.width) - self.lower // self.width
        label = np.zeros(self.width, dtype=np.int64)
        for j, residues in enumerate(self.classes()):
            label[residues] = j
        b = label[np.mod(np.nan_to_num(c), self.width).astype(np.int64)]
        for i, s in enumerate(self.specials):
            is_s = v == s
            a, b = np.where(is_s, self.coarse_size + i, a), np.where(is_s, 0, b)
        return a, np.where(np.isnan(v), 0, b)

    def backward(self, codes: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        a, b = codes
        base = (a + self.lower // self.width) * self.width
        residue = np.zeros(len(a))
        b = np.nan_to_num(b).astype(np.int64)
        for j, residues in enumerate(self.classes()):
            hit = b == j
            residue[hit] = residues[rng.integers(0, residues.size, int(hit.sum()))]
        v = np.clip(base + residue, self.lower, self.upper)
        for i, s in enumerate(self.specials):
            v = np.where(a == self.coarse_size + i, s, v)
        return np.where(np.isnan(a), np.nan, v)


Map = Union[Grid, Split]
PATTERNS = ("grid", "split")


class Transform:
    """A public map from a schema's raw values to a smaller schema's raw values, and back.

    ``Transform(schema, maps)`` takes the maps as given (fully public, no data needed);
    :meth:`from_public` chooses them from a public table. ``schema`` is the transformed schema,
    ``original`` the one the maps start from.
    """

    def __init__(self, original: Schema, maps: Mapping[str, Map]) -> None:
        self.original, self.maps = original, dict(maps)
        # the schema's rules carry over to the transformed schema (they hold on its codes) as
        # long as no map changes a column they name
        clash = sorted(_ruled_columns(original) & set(self.maps))
        if clash:
            raise InvalidArgumentError(f"transform of {clash}: a schema rule names "
                                       f"{'it' if len(clash) == 1 else 'them'}, so it must stay "
                                       f"as it is (leave it out of the transform)")
        columns = []
        for col in original.columns:
            m = self.maps.get(col.name)
            if m is None:
                columns.append(col)
                continue
            _integer_column(original, col.name)
            for j, (name, size) in enumerate(zip(m.names, m.sizes)):
                if name != col.name and name in original.names:
                    raise InvalidArgumentError(f"transform of {col.name!r}: its new column "
                                               f"{name!r} is already in the schema")
                if size < 2:
                    raise InvalidArgumentError(f"transform of {col.name!r}: column {name!r} "
                                               f"would hold {size} value (needs >= 2)")
                missing = col.missing if j == 0 else "error"   # Split's B is never missing
                columns.append(NumericColumn(name, equal_width_edges(0, size - 1, size, True),
                                             True, "error", missing, "uniform"))
        self.schema = Schema(columns, missing_values=original.missing_values,
                             constraints=[dict(r.spec) for r in original.constraints] or None)

    @classmethod
    def from_public(cls, public: pd.DataFrame, schema: Schema,
                    columns: Union[str, Sequence[str], Mapping[str, Any]] = "auto", *,
                    coverage: float = COVERAGE, special_share: float = SPECIAL_SHARE,
                    wide: int = WIDE, width: int = 100) -> "Transform":
        """Choose the maps from the public table ``public`` (never the sensitive one).

        ``columns``: "auto" (every integer column with more than ``wide`` values gets the
        pattern whose largest new column is smaller, Split only if it maps at least half of the
        public values back exactly), a list of names (the same choice for those), or
        ``{name: "grid" | "split" | {"pattern": ..., "step"/"width", "cutoff", "specials"}}``
        (keys left out are chosen from the public data). ``coverage``: the share of public
        values the cutoff, step and specials must cover exactly; ``special_share``: the share
        of public rows a value above the cutoff needs to get its own code.
        """
        if not isinstance(public, pd.DataFrame):
            raise InvalidArgumentError(f"public must be a pandas DataFrame, got "
                                       f"{type(public).__name__}")
        if not 0 < coverage <= 1:
            raise InvalidArgumentError(f"coverage must be in (0, 1], got {coverage!r}")
        if not 0 < special_share <= 1:
            raise InvalidArgumentError(f"special_share must be in (0, 1], got {special_share!r}")
        check_columns(list(public.columns), schema)
        specs = _specs(schema, columns, wide)
        maps: dict[str, Map] = {}
        for name, spec in specs.items():
            col = _integer_column(schema, name)
            values = _parse(public[name], col, schema.missing_values, "public data")
            values = values[~np.isnan(values)]
            if values.size == 0:
                raise InvalidArgumentError(f"transform of {name!r}: the public data has no "
                                           f"values in this column to choose it from")
            options = dict(spec)
            pattern = options.pop("pattern", "auto")
            if pattern not in PATTERNS + ("auto",):
                raise InvalidArgumentError(f"transform of {name!r}: pattern must be one of "
                                           f"{list(PATTERNS)}, got {pattern!r}")
            found = {p: _choose(p, col, values, options, coverage, special_share, width)
                     for p in (PATTERNS if pattern == "auto" else (pattern,))}
            if pattern == "auto" and _pinned(found["split"], values) < 0.5:
                del found["split"]     # not periodic: the residue draws would blur most values
            maps[name] = min(found.values(), key=lambda m: max(m.sizes))
        return cls(schema, maps)

    def to_dict(self) -> dict[str, Any]:
        """The maps as plain data (public: recorded in the ledger's run parameters)."""
        return {name: {"pattern": "grid" if isinstance(m, Grid) else "split",
                       **{k: list(v) if isinstance(v, tuple) else v
                          for k, v in asdict(m).items() if k != "column"}}
                for name, m in self.maps.items()}

    def apply(self, frame: pd.DataFrame, *, where: str = "data", row_offset: int = 0
              ) -> pd.DataFrame:
        """Raw values of the original schema -> raw values of :attr:`schema` (sensitive and
        public tables alike). Bad values are errors naming ``where``, the column and the row."""
        check_columns(list(frame.columns), self.original)
        out: dict[str, Any] = {}
        for col in self.original.columns:
            m = self.maps.get(col.name)
            if m is None:
                out[col.name] = frame[col.name].reset_index(drop=True)
                continue
            values = _parse(frame[col.name], col, self.original.missing_values, where, row_offset)
            for name, codes in zip(m.names, m.forward(values)):
                out[name] = _ints(codes)
        return pd.DataFrame(out)

    def reverse(self, frame: pd.DataFrame, *, seed: Any = None) -> pd.DataFrame:
        """Alg. 9: raw values of :attr:`schema` (e.g. decoded synthetic records) -> raw values
        of the original schema. Post-processing; ``seed`` (anything ``numpy.random.default_rng``
        takes) fixes Split's residue draws."""
        check_columns(list(frame.columns), self.schema)
        rng = np.random.default_rng(seed)
        out: dict[str, Any] = {}
        for col in self.original.columns:
            m = self.maps.get(col.name)
            if m is None:
                out[col.name] = frame[col.name].reset_index(drop=True)
                continue
            codes = [pd.to_numeric(frame[n]).to_numpy(dtype=np.float64, na_value=np.nan)
                     for n in m.names]
            out[col.name] = _ints(m.backward(codes, rng))
        return pd.DataFrame(out)


def _ints(values: np.ndarray) -> pd.Series:
    s = pd.Series(np.nan_to_num(values).astype(np.int64))
    missing = np.isnan(values)
    return s.astype("Int64").mask(missing) if missing.any() else s


def _pinned(split: Split, values: np.ndarray) -> float:
    """The share of ``values`` that Split maps back exactly: up to the cutoff, with a residue
    alone in its class (0 and 50 for width 100: the round numbers of INCWAGE)."""
    alone = np.concatenate([c for c in split.classes() if c.size == 1])
    return float(np.mean((values <= split.cutoff) & np.isin(np.mod(values, split.width), alone)))


def _integer_column(schema: Schema, name: str) -> NumericColumn:
    try:
        col = schema[name]
    except KeyError:
        raise InvalidArgumentError(f"transform: column {name!r} is not in the schema") from None
    if not (isinstance(col, NumericColumn) and col.integer):
        raise InvalidArgumentError(f"transform: column {name!r} must be numeric with "
                                   f"integer: true (Alg. 3 maps integer values)")
    return col


def _ruled_columns(schema: Schema) -> set[str]:
    """The columns the schema's rules name (a derived column and its parent, a forbidden
    rule's columns)."""
    return {c for r in schema.constraints
            for c in (r.masks if hasattr(r, "masks") else (r.column, r.parent))}


def _specs(schema: Schema, columns: Any, wide: int) -> dict[str, dict]:
    if isinstance(columns, str):
        if columns != "auto":
            raise InvalidArgumentError(f"transform must be 'auto', a list of columns or a "
                                       f"{{column: pattern}} mapping, got {columns!r}")
        ruled = _ruled_columns(schema)     # a rule's columns stay as they are
        return {c.name: {} for c in schema.columns if isinstance(c, NumericColumn) and c.integer
                and c.upper - c.lower + 1 > wide and c.name not in ruled}
    if isinstance(columns, Mapping):
        out = {}
        for name, spec in columns.items():
            if isinstance(spec, str):
                spec = {"pattern": spec}
            if not isinstance(spec, Mapping):
                raise InvalidArgumentError(f"transform of {name!r}: spec must be a pattern "
                                           f"name or an object, got {spec!r}")
            out[str(name)] = dict(spec)
        return out
    return {str(name): {} for name in columns}


def _parse(series: pd.Series, col: NumericColumn, tokens: Sequence[str], where: str,
           row_offset: int = 0) -> np.ndarray:
    """The column's numbers as floats, NaN where missing; the schema's bound and integer rules
    hold (values are not shown: they may be sensitive)."""
    series = series.reset_index(drop=True)
    missing = series.isna().to_numpy().copy()
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        missing |= series.isin(list(tokens)).to_numpy()
    values = pd.to_numeric(series.where(~missing), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = ~missing & ~np.isfinite(values)
    rules = ((bad, "is not a finite number"),
             (missing & (col.missing != "code"), "is missing, and the schema says missing: error"),
             (~bad & ~missing & (values != np.floor(np.nan_to_num(values))), "is not an integer"))
    if col.out_of_bounds == "error":
        rules += ((~missing & ((values < col.lower) | (values > col.upper)),
                   f"is outside the bounds [{int(col.lower)}, {int(col.upper)}]"),)
    for mask, rule in rules:
        if mask.any():
            row = row_offset + int(np.flatnonzero(mask)[0]) + 1
            raise InvalidArgumentError(f"{where}, column {col.name!r}, row {row}: the value {rule}")
    return np.where(missing, np.nan, np.clip(values, col.lower, col.upper))


def _choose(pattern: str, col: NumericColumn, values: np.ndarray, options: dict,
            coverage: float, special_share: float, width: int) -> Map:
    """The smallest map of ``pattern`` covering ``coverage`` of the public ``values`` exactly
    (options given explicitly are kept as given)."""
    lower, upper = int(col.lower), int(col.upper)
    allowed = {"grid": {"step", "cutoff", "specials"},
               "split": {"width", "cutoff", "specials", "moduli"}}[pattern]
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidArgumentError(f"transform of {col.name!r}: unknown {pattern} option(s) "
                                   f"{unknown} (allowed: {sorted(allowed)})")
    uniq, counts = np.unique(values.astype(np.int64), return_counts=True)
    frequent = np.where(counts >= special_share * values.size, counts, 0)
    above = np.concatenate([np.cumsum(frequent[::-1])[::-1], [0]])   # frequent counts from i on
    n_above = np.concatenate([np.cumsum(frequent[::-1] > 0)[::-1], [0]])
    if pattern == "grid":
        steps = [options["step"]] if "step" in options else [g for g in STEPS if lower + g <= upper]
    else:
        steps = [1]                        # Split covers every value up to the cutoff exactly
    best: Map | None = None
    for g in steps:
        g = int(g)
        unit = g if pattern == "grid" else int(options.get("width", width))
        cutoffs = np.array([int(options["cutoff"])]) if "cutoff" in options else uniq
        cutoffs = np.clip(np.maximum(cutoffs, lower + unit), None, upper)   # >= 2 codes
        # specials: frequent values far above the cutoff (sentinels sit orders of magnitude
        # above the real values, as VALUEH's 9999998 does)
        first = np.searchsorted(uniq, lower + _FAR * (cutoffs - lower), side="right")
        covered = np.concatenate([[0], np.cumsum(np.where(uniq % g == 0, counts, 0))])
        covered = covered[np.searchsorted(uniq, cutoffs, side="right")] + above[first]
        sizes = (cutoffs // unit - lower // unit + 1) + n_above[first]
        ok = np.flatnonzero(covered >= coverage * values.size)
        if ok.size == 0:
            continue
        i = int(ok[np.argmin(sizes[ok])])
        cutoff = int(cutoffs[i])
        specials = tuple(int(s) for s in options.get("specials", uniq[first[i]:][frequent[first[i]:] > 0]))
        if pattern == "grid":
            m: Map = Grid(col.name, lower, g, cutoff, specials)
        else:
            m = Split(col.name, lower, upper, unit, cutoff, specials,
                      tuple(options.get("moduli", MODULI)))
        if best is None or max(m.sizes) < max(best.sizes):
            best = m
    if best is None:
        raise InvalidArgumentError(f"transform of {col.name!r}: step {options.get('step')} "
                                   f"cannot cover {coverage:g} of the public values")
    return best
