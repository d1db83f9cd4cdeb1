"""Public structural constraints: derived columns and forbidden combinations (issue 23).

A schema may carry a top-level ``"constraints"`` list. Like the rest of the schema it is public
knowledge (a code book, a data dictionary), never read from the records; ``schema infer`` never
drafts one. Two rule types, each with a ``"name"``:

* ``{"type": "derived", "name", "column", "from", "map": {parent value: child value}}`` or
  ``"ranges": [[lo, hi, child value], ...]`` (inclusive, over a numeric parent's raw values).
  The child is a function of its parent, so it is *not measured*: mechanisms run on the schema
  without it (:func:`measured_schema`, a smaller public domain) and it is regenerated from the
  parent's code (:func:`derive`). On real data :func:`check_derived` makes a row that breaks the
  rule an error (``"on_violation": "error"``, the default: a broken rule means the data or the
  rule is wrong, and silently rewriting real records would hide it) or, with
  ``"on_violation": "derive"``, overwrites the child from the parent.
* ``{"type": "forbidden", "name", "when": {column: predicate, ...}}``: every cell where all
  predicates hold must have zero mass. Predicates over raw values: ``{"range": [lo, hi]}``,
  ``{"in": [...]}``, ``{"not_in": [...]}`` (``null`` in a list means the missing value). Each
  compiles to a boolean mask over its column's codes; a code is forbidden only if *every* value
  it stands for satisfies the predicate, so a bin straddling a boundary is a schema error.

Forbidden rules are structural zeros of the model (:func:`structural_zeros`): AIM, MST and
MWEM fit Private-PGM with -inf log-potentials on the forbidden cells of a clique over each rule's
columns (the columns are forced into one clique: public, so free; AIM counts it in its model
size), so the fitted model has zero mass there and its measured marginals are fitted within
the allowed set. Conditioning the unconstrained model after the fact (rejection) moved every
marginal touching a rule's columns; a structural zero does not (bench/results/constraints.md).
Rejection (``Synthesizer.sample_codes``) stays as the fallback for what the model cannot hold:
mechanisms without zeros (independent, FEM, the histogram families, NIST-MST), and MST's
compressed cells that merge allowed and forbidden values (its reverse transform may place a row
in a forbidden cell). When rejection fails (the model's mass is almost all forbidden) the
model's law on the allowed cells is drawn exactly where that is cheap
(:mod:`mechanisms.conditioned`). The rule cliques are sized before any charge
(:func:`zero_cliques`, in the plan). Every rule is public and both steps read only the released measurements or
model, so no release's sensitivity changes (proofs/structural_constraints.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from dpcore.schema import Schema

ON_VIOLATION = ("error", "derive")


def _err(rule: str | None, message: str):
    from dpcore.schema import SchemaError
    return SchemaError(f"schema constraint {rule!r}: {message}" if rule is not None
                       else f"schema constraints: {message}")


@dataclass(frozen=True)
class DerivedRule:
    """``column`` is a function of ``parent``: ``table[parent code] = column code``."""

    name: str
    column: str
    parent: str
    table: tuple[int, ...]
    on_violation: str
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class ForbiddenRule:
    """Cells where ``masks[c][code of c]`` holds for every column c have zero mass."""

    name: str
    masks: Mapping[str, np.ndarray]
    spec: Mapping[str, Any]

    def holds(self, codes: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """Which rows of an ``N x d`` code array (columns ``names``) are forbidden."""
        out = np.ones(len(codes), dtype=bool)
        for col, mask in self.masks.items():
            out &= mask[codes[:, list(names).index(col)].astype(np.int64)]
        return out


Rule = DerivedRule | ForbiddenRule


# ---------------------------------------------------------------- what each code stands for
def _values(col: Any) -> list[tuple[str, Any]]:
    """Per code: ("labels", label) / ("other", None) / ("missing", None) / ("range", (a, b,
    integer, closed_hi, open_lo)): a float bin is [a, b), [a, b] when last or a point, and
    (a, b) when it follows a point a (the point's own bin holds a)."""
    from dpcore.schema import CategoricalColumn, CodeColumn, NumericColumn, integer_bin_range
    if isinstance(col, CodeColumn):
        return [("range", (k, k, True, True, False)) for k in range(col.size)]
    out: list[tuple[str, Any]] = []
    if isinstance(col, CategoricalColumn):
        out += [("label", c) for c in col.categories]
        if col.other is not None:
            out.append(("other", None))
    elif isinstance(col, NumericColumn) and type(col) is NumericColumn:
        e = col.edges
        for k in range(col.bins):
            if col.integer:
                a, b = integer_bin_range(e, k)
                out.append(("range", (a, b, True, True, False)))
            else:
                closed = e[k] == e[k + 1] or k == col.bins - 1
                open_lo = k > 0 and e[k - 1] == e[k] and e[k] != e[k + 1]
                out.append(("range", (e[k], e[k + 1], False, closed, open_lo)))
    else:
        raise _err(None, f"column {col.name!r}: constraints support categorical, numeric and "
                         f"code columns, not {type(col).__name__}")
    if col.missing_code is not None:
        out.append(("missing", None))
    return out


def _same(a: Any, b: Any) -> bool:
    """Raw-value equality: labels as text, and numbers by value (32 = 32.0 = '32')."""
    if a is None or b is None:
        return a is None and b is None
    if str(a) == str(b):
        return True
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def _number(rule: str, what: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _err(rule, f"{what} must be a finite number, got {v!r}")
    return float(v)


def _satisfies(rule: str, col: Any, pred: Any) -> np.ndarray:
    """The boolean mask over ``col``'s codes; a code only partly inside is an error."""
    from dpcore.schema import CategoricalColumn
    if not isinstance(pred, Mapping) or len(pred) != 1 or next(iter(pred)) not in (
            "range", "in", "not_in"):
        raise _err(rule, f"predicate on {col.name!r} must be one of {{'range': [lo, hi]}}, "
                         f"{{'in': [...]}}, {{'not_in': [...]}}, got {pred!r}")
    (kind, arg), = pred.items()
    out = np.zeros(col.size, dtype=bool)
    if kind == "range":
        if not isinstance(arg, list) or len(arg) != 2:
            raise _err(rule, f"'range' on {col.name!r} must be [lo, hi], got {arg!r}")
        lo, hi = (_number(rule, f"'range' on {col.name!r}", v) for v in arg)
        if lo > hi:
            raise _err(rule, f"'range' on {col.name!r} needs lo <= hi, got [{lo:g}, {hi:g}]")
        for code, (tag, v) in enumerate(_values(col)):
            if tag == "missing":
                continue
            if tag != "range":
                raise _err(rule, f"'range' needs a numeric column, {col.name!r} is categorical")
            a, b, integer, closed, open_lo = v
            if a > b:
                continue
            inside = lo <= a and b <= hi
            outside = a > hi or b < lo or (not closed and not integer and b <= lo) \
                or (open_lo and a >= hi)
            if not inside and not outside:
                raise _err(rule, f"'range' [{lo:g}, {hi:g}] on {col.name!r} cuts bin {code} "
                                 f"({a:g}..{b:g}): codes cannot enforce it; put a point or a "
                                 f"bin edge at the boundary")
            out[code] = inside
        return out
    if not isinstance(arg, list):
        raise _err(rule, f"{kind!r} on {col.name!r} must be a list of values, got {arg!r}")
    if isinstance(col, CategoricalColumn) and col.other is None:   # catch a mistyped label
        unknown = [x for x in arg if x is not None
                   and not any(_same(c, x) for c in col.categories)]
        if unknown:
            raise _err(rule, f"{kind!r} on {col.name!r} names {unknown[0]!r}, which is not "
                             f"one of its categories")
    for code, (tag, v) in enumerate(_values(col)):
        if tag == "missing":
            hit = any(x is None for x in arg)
        elif tag == "label":
            hit = any(_same(v, x) for x in arg if x is not None)
        elif tag == "other":   # the bucket holds every label not listed: it is never all in
            named = [x for x in arg if x is not None
                     and not any(_same(c, x) for c in col.categories)]
            if named:
                raise _err(rule, f"{kind!r} on {col.name!r} names {named[0]!r}, which falls in "
                                 f"the 'other' bucket with other labels: codes cannot enforce it")
            hit = False
        else:
            a, b, integer, closed, open_lo = v
            nums = [float(x) for x in arg if isinstance(x, (int, float))
                    and not isinstance(x, bool)]
            some = any((a < x if open_lo else a <= x) and (x <= b if closed else x < b)
                       for x in nums)
            hit = some and a == b
            if some and a != b:
                raise _err(rule, f"{kind!r} on {col.name!r} names a value inside bin {code} "
                                 f"({a:g}..{b:g}) holding other values: make it a point")
        out[code] = hit
    return ~out if kind == "not_in" else out


# ---------------------------------------------------------------- parsing
def _derived(spec: Mapping[str, Any], name: str, schema_cols: Mapping[str, Any]) -> DerivedRule:
    from dpcore.schema import CategoricalColumn
    child_name, parent_name = spec.get("column"), spec.get("from")
    for key, value in (("column", child_name), ("from", parent_name)):
        if not isinstance(value, str) or value not in schema_cols:
            raise _err(name, f"{key!r} must name a schema column, got {value!r}")
    if child_name == parent_name:
        raise _err(name, f"column {child_name!r} cannot derive from itself")
    on_violation = spec.get("on_violation", "error")
    if on_violation not in ON_VIOLATION:
        raise _err(name, f"'on_violation' must be one of {list(ON_VIOLATION)}, "
                         f"got {on_violation!r}")
    child, parent = schema_cols[child_name], schema_cols[parent_name]
    child_values = _values(child)

    def child_code(value: Any) -> int:
        for code, (tag, v) in enumerate(child_values):
            if (tag == "label" and _same(v, value)) or (
                    tag == "range" and isinstance(value, (int, float)) and v[0] == v[1] == value):
                return code
            if tag == "other" and isinstance(child, CategoricalColumn) and value == child.other:
                return code
        raise _err(name, f"value {value!r} is not a category (or point) of {child_name!r}")

    table: list[int] = []
    has_map, has_ranges = "map" in spec, "ranges" in spec
    if has_map == has_ranges:
        raise _err(name, "a derived rule needs exactly one of 'map' and 'ranges'")
    if has_map:
        mapping = spec["map"]
        if not isinstance(mapping, Mapping) or not mapping:
            raise _err(name, f"'map' must be a non-empty object, got {mapping!r}")
    else:
        ranges = spec["ranges"]
        if not isinstance(ranges, list) or not all(isinstance(r, list) and len(r) == 3
                                                   for r in ranges):
            raise _err(name, f"'ranges' must be a list of [lo, hi, value], got {ranges!r}")
        ranges = [(_number(name, "a range bound", lo), _number(name, "a range bound", hi), v)
                  for lo, hi, v in ranges]
    for code, (tag, v) in enumerate(_values(parent)):
        if tag == "missing":
            if child.missing_code is None:
                raise _err(name, f"a missing {parent_name!r} must map to a missing "
                                 f"{child_name!r}, which has no missing code")
            table.append(child.missing_code)
            continue
        if has_map:
            key = parent.other if tag == "other" else v
            hits = [val for k, val in mapping.items() if
                    (tag == "range" and v[0] == v[1] and _same(k, v[0])) or
                    (tag != "range" and _same(k, key))]
            if not hits:
                shown = key if tag != "range" else f"{v[0]:g}..{v[1]:g}"
                raise _err(name, f"'map' misses the {parent_name!r} value {shown!r}")
            table.append(child_code(hits[0]))
        else:
            if tag != "range":
                raise _err(name, f"'ranges' needs a numeric parent, {parent_name!r} is not")
            a, b = v[0], v[1]
            hits = [val for lo, hi, val in ranges if lo <= a and b <= hi]
            if not hits:
                raise _err(name, f"no range holds the whole {parent_name!r} bin {code} "
                                 f"({a:g}..{b:g}): put a bin edge at each range boundary")
            table.append(child_code(hits[0]))
    return DerivedRule(name, child_name, parent_name, tuple(table), on_violation, dict(spec))


def parse_constraints(specs: Any, columns: Sequence[Any]) -> tuple[Rule, ...]:
    """Validate the schema's ``"constraints"`` list against its columns (at schema load,
    before any charge). Raises SchemaError naming the rule."""
    if specs is None:
        return ()
    if not isinstance(specs, list):
        raise _err(None, f"'constraints' must be a list of rules, got {type(specs).__name__}")
    cols = {c.name: c for c in columns}
    rules: list[Rule] = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, Mapping):
            raise _err(None, f"rule {i} must be an object, got {spec!r}")
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise _err(None, f"rule {i} needs a non-empty 'name'")
        if any(r.name == name for r in rules):
            raise _err(name, "rule names must be unique")
        kind = spec.get("type")
        if kind == "derived":
            rules.append(_derived(spec, name, cols))
        elif kind == "forbidden":
            when = spec.get("when")
            if not isinstance(when, Mapping) or not when:
                raise _err(name, f"'when' must be a non-empty object of predicates, got {when!r}")
            masks = {}
            for col, pred in when.items():
                if col not in cols:
                    raise _err(name, f"'when' names an unknown column {col!r}")
                masks[col] = _satisfies(name, cols[col], pred)
            if all(m.all() for m in masks.values()):
                raise _err(name, "forbids every cell: nothing could be generated")
            rules.append(ForbiddenRule(name, masks, dict(spec)))
        else:
            raise _err(name, f"'type' must be 'derived' or 'forbidden', got {kind!r}")
    derived = [r for r in rules if isinstance(r, DerivedRule)]
    children = [r.column for r in derived]
    for r in derived:
        if children.count(r.column) > 1:
            raise _err(r.name, f"column {r.column!r} is derived by more than one rule")
        if r.parent in children:   # also rules out cycles: a chain needs a derived parent
            raise _err(r.name, f"parent {r.parent!r} is itself derived: derive from a "
                               f"measured column")
    return tuple(rules)


# ---------------------------------------------------------------- using rules
def derived_rules(schema: "Schema") -> list[DerivedRule]:
    return [r for r in schema.constraints if isinstance(r, DerivedRule)]


def forbidden_rules(schema: "Schema") -> list[ForbiddenRule]:
    return [r for r in schema.constraints if isinstance(r, ForbiddenRule)]


def measured_schema(schema: "Schema") -> "Schema":
    """The schema the mechanisms run on: the columns that are not derived, no constraints."""
    from dpcore.schema import Schema
    derived = {r.column for r in derived_rules(schema)}
    if not schema.constraints:
        return schema
    return Schema([c for c in schema.columns if c.name not in derived],
                  missing_values=schema.missing_values, warning=schema.warning)


def unconstrained(schema: "Schema") -> "Schema":
    """The same columns without rules (to read a table that may break them)."""
    from dpcore.schema import Schema
    return Schema(schema.columns, missing_values=schema.missing_values, warning=schema.warning)


def expand(measured: np.ndarray, schema: "Schema") -> np.ndarray:
    """Codes of the measured columns (``measured_schema`` order) -> codes of every column,
    derived ones regenerated from their parents."""
    names = schema.names
    kept = measured_schema(schema).names
    out = np.zeros((len(measured), len(names)), dtype=schema.code_dtype())
    for j, n in enumerate(kept):
        out[:, names.index(n)] = measured[:, j]
    return derive(out, schema)


def derive(codes: np.ndarray, schema: "Schema") -> np.ndarray:
    """Overwrite every derived column of a full code array from its parent (in place)."""
    names = schema.names
    for r in derived_rules(schema):
        table = np.asarray(r.table, dtype=np.int64)
        codes[:, names.index(r.column)] = table[codes[:, names.index(r.parent)].astype(np.int64)]
    return codes


def check_derived(codes: np.ndarray, schema: "Schema", *, row_offset: int = 0) -> np.ndarray:
    """Encode-time check on real data: a row whose derived column disagrees with its parent is
    an error naming the rule and the row (not the values: they are the sensitive records), or
    is overwritten when the rule says ``"on_violation": "derive"``."""
    from dpcore.encoding import EncodingError
    names = schema.names
    for r in derived_rules(schema):
        want = np.asarray(r.table)[codes[:, names.index(r.parent)].astype(np.int64)]
        j = names.index(r.column)
        bad = codes[:, j] != want
        if bad.any():
            if r.on_violation == "derive":
                codes[:, j] = want
                continue
            row = row_offset + int(np.argmax(bad)) + 1
            raise EncodingError(f"row {row} breaks the derived-column rule {r.name!r} "
                                f"({r.column} from {r.parent}); set \"on_violation\": \"derive\" "
                                f"to overwrite it", column=r.column, row=row)
    return codes


def forbidden_rows(codes: np.ndarray, schema: "Schema") -> np.ndarray:
    """Which rows of a full code array fall in a forbidden cell."""
    out = np.zeros(len(codes), dtype=bool)
    for r in forbidden_rules(schema):
        out |= r.holds(codes, schema.names)
    return out


def violations(codes: np.ndarray, schema: "Schema") -> list[dict[str, Any]]:
    """Per rule: rows of a full code array that break it (count and share)."""
    names = schema.names
    n = len(codes)
    out = []
    for r in schema.constraints:
        if isinstance(r, DerivedRule):
            want = np.asarray(r.table)[codes[:, names.index(r.parent)].astype(np.int64)]
            count = int((codes[:, names.index(r.column)] != want).sum())
        else:
            count = int(r.holds(codes, names).sum())
        out.append({"rule": r.name, "type": "derived" if isinstance(r, DerivedRule)
                    else "forbidden", "rows": count, "share": count / n if n else 0.0})
    return out


def zero_masks(schema: "Schema") -> list[tuple[str, dict[str, np.ndarray]]]:
    """Per forbidden rule: its per-column masks over the measured columns (a predicate on a
    derived column becomes one on its parent, predicates on one column AND-ed); rules left
    forbidding nothing are dropped. Cheap (no product over the columns is built)."""
    parents = {r.column: r for r in derived_rules(schema)}
    out = []
    for r in forbidden_rules(schema):
        masks: dict[str, np.ndarray] = {}
        for col, mask in r.masks.items():
            if col in parents:
                d = parents[col]
                col, mask = d.parent, mask[np.asarray(d.table, dtype=np.int64)]
            masks[col] = masks[col] & mask if col in masks else mask
        if not all(m.any() for m in masks.values()):
            continue
        if all(m.all() for m in masks.values()):
            raise _err(r.name, "forbids every cell of its measured columns: nothing could be "
                               "generated")
        out.append((r.name, masks))
    _check_some_cell_allowed(out)
    return out


# rules sharing columns are checked together up to this many cells (a bool table)
_UNION_CHECK_CELLS = 1 << 24


def rule_groups(rules: Sequence[Any], columns: Any = lambda rule: rule) -> list[list[Any]]:
    """``rules`` grouped by shared columns, transitively: no two groups share a column.
    ``columns(rule)``: the column names a rule names (default: the rule itself, e.g. a
    ``{column: mask}`` mapping)."""
    groups: list[tuple[set, list]] = []
    for rule in rules:
        names = set(columns(rule))
        joined = [g for g in groups if g[0] & names]
        merged = (names.union(*(g[0] for g in joined)), [r for g in joined for r in g[1]] + [rule])
        groups = [g for g in groups if not any(g is j for j in joined)] + [merged]
    return [group for _, group in groups]


# the most subproblems the table-free check explores (beyond: the group is not checked)
_COVER_NODES = 1 << 16


def _check_some_cell_allowed(rules: list[tuple[str, dict[str, np.ndarray]]]) -> None:
    """Rules that together forbid every cell of their columns (``a in [x]`` and ``a in [y]``
    on a two-value column) leave nothing to generate, which each rule alone does not show:
    checked per group of rules joined by shared columns, on its table where that is small
    enough, else by :func:`_covers` (audit 17: two rules over a 2^26-cell table passed, and
    every mechanism spent its budget before finding no allowed cell)."""
    for group in rule_groups(rules, lambda rule: rule[1]):
        names = [name for name, _ in group]
        if len(names) < 2:
            continue
        masks = [m for _, m in group]
        columns = list(dict.fromkeys(c for m in masks for c in m))
        shape = [len(next(m[c] for m in masks if c in m)) for c in columns]
        if math.prod(shape) <= _UNION_CHECK_CELLS:
            every = forbidden_table(columns, shape, masks).all()
        else:
            every = _covers([{c: np.asarray(v, dtype=bool) for c, v in m.items()} for m in masks],
                            columns, [_COVER_NODES])
        if every:
            raise _err(None, f"rules {names} together forbid every cell of {columns}: "
                             f"nothing could be generated")


def _covers(rules: list[dict[str, np.ndarray]], columns: list[str], budget: list[int]) -> bool:
    """Whether the rules (each forbidding the cells where all its column masks hold; a column
    a rule does not name is free) forbid every cell, without the table: split on one column
    into classes of values that the same rules hold, and recurse per class on the rules that
    hold there, without that column. A rule with no column left forbids everything left. False
    (not shown) when the budget of subproblems runs out."""
    if any(not r for r in rules):
        return True
    if not rules or budget[0] <= 0:
        return False
    budget[0] -= 1
    col = max((c for c in columns if any(c in r for r in rules)),
              key=lambda c: sum(c in r for r in rules))
    rest = [c for c in columns if c != col]
    named = [r for r in rules if col in r]
    free = [r for r in rules if col not in r]
    classes = np.unique(np.stack([r[col] for r in named]).T, axis=0)   # one row a class
    for holds in classes:
        kept = free + [{c: m for c, m in r.items() if c != col}
                       for r, h in zip(named, holds) if h]
        if not _covers(kept, rest, budget):
            return False
    return True


def forbidden_table(columns: list[str], shape: list[int],
                    masks: list[dict[str, np.ndarray]]) -> np.ndarray:
    """The cells of the table over ``columns`` (sizes ``shape``) that some rule forbids (each
    rule: column -> boolean mask over its codes, forbidden where every mask holds)."""
    forbidden = np.zeros(shape, dtype=bool)
    for rule in masks:
        hit = np.ones([1] * len(columns), dtype=bool)
        for col, mask in rule.items():
            axes = [1] * len(columns)
            axes[columns.index(col)] = -1
            hit = hit & np.asarray(mask, dtype=bool).reshape(axes)
        forbidden |= hit
    return forbidden


def zero_cliques(schema: "Schema", *, max_cells: int | None = None) -> list[tuple[str, ...]]:
    """The model cliques the forbidden rules force (:func:`structural_zeros`'s attributes, one
    per attribute set), from public information only and without building a mask: what the
    plan sizes before any charge. ``max_cells``: refuse (SchemaError naming the rule) a rule
    whose clique has more cells than that (its mask, and a model table over it, are built
    whole)."""
    out: dict[frozenset, tuple[str, ...]] = {}
    for name, masks in zero_masks(schema):
        cells = math.prod(len(m) for m in masks.values())
        if max_cells is not None and cells > max_cells:
            raise _err(name, f"spans {list(masks)}: a model clique of {cells} cells, above the "
                             f"cell cap {max_cells} (8 bytes a cell); coarsen these columns "
                             f"(fewer categories or bins) or split the rule")
        out.setdefault(frozenset(masks), tuple(masks))
    return list(out.values())


def structural_zeros(schema: "Schema", *, max_cells: int | None = None) -> list:
    """The forbidden rules as :class:`~dpcore.inference.StructuralZero` masks over the measured
    columns (:func:`measured_schema`), for estimation to hold at zero mass. A predicate on a
    derived column becomes one on its parent (the parent codes whose child code satisfies it);
    predicates on one column are AND-ed; a rule left forbidding nothing is dropped.
    ``max_cells``: as :func:`zero_cliques`, checked before any mask is allocated."""
    from dpcore.inference.zeros import StructuralZero
    zero_cliques(schema, max_cells=max_cells)
    out = []
    for _, masks in zero_masks(schema):
        cols = list(masks)
        cells = np.ones([len(masks[c]) for c in cols], dtype=bool)
        for axis, c in enumerate(cols):
            shape = [1] * len(cols)
            shape[axis] = -1
            cells = cells & masks[c].reshape(shape)
        out.append(StructuralZero(tuple(cols), cells))
    return out
