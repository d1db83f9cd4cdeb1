"""Exact sampling from a released model conditioned on a schema's allowed cells, for when
rejection fails (audit 14, item 3).

Rejection (:meth:`mechanisms.synthesizer.Synthesizer._draw_allowed`) draws from the model and
drops rows in forbidden cells; when the model puts almost all its mass there (a mechanism without
structural zeros, a tiny budget, a huge column: the noise spreads the mass over the whole
domain), it cannot find allowed rows. That happened after the whole budget was spent, so
refusing lost the budget. This module draws the conditional law directly where it is cheap and
exact:

For a graphical model P(x) ∝ exp(Σ_C θ_C(x_C)), the law conditioned on the allowed cells is
the same model times each rule's allowed indicator, a factor over the rule's columns (log 0 on
its forbidden cells): ``P(x | allowed) ∝ exp(Σ_C θ_C(x_C)) Π_r 1[x_{R_r} allowed by r]``, a
graphical model with the rules' columns as extra cliques (:func:`masked_model`), drawn with the
junction-tree sampler like the model itself. This needs the junction tree of the model's and the
rules' cliques within the cell cap, not a table over every column a rule touches: for the
independent model (1-way cliques) it is the rules' own tree, which the plan sizes before any
charge (``Synthesizer._rule_options``). If the model gives the allowed cells no mass at all (its
log-potentials' floor underflowed), the allowed cells are drawn uniformly: the conditional is
then undefined, and uniform is its limit under any smoothing. The same conditioning for the
other released models (:func:`conditioned_draw`):

* a product mixture (RAP-softmax, GEM: B product distributions mixed uniformly): component j,
  masked as above, has mass Z_j on the allowed cells (its log-partition on the rules' tree),
  so the component is drawn with probability proportional to Z_j and the row from that
  component's masked model (exact: P(j, x | allowed) ∝ P_j(x) 1[x allowed]);
* a mixture of records (FEM, DQRS, PrivPGD's particles: the uniform law on a table of records):
  the allowed records uniformly; none allowed refuses (None).

The histogram families (PEP, MWEM-explicit) release a one-clique graphical model over the whole
(capped) domain. MST's model lives on a compressed domain whose merged codes are spread
uniformly over the values they merged, and a merged code can hold allowed and forbidden values,
so no factor on the compressed domain masks it: there S is the union of the connected
components of the model's clique graph holding a rule's columns, P(x) = P(x_S) P(x_rest), and
the block's marginal is expanded to the original codes on the rules' own columns with that
spread (the law MST's sampler follows), conditioned, and drawn as one table; its other columns
are spread back after the draw as the sampler does (:func:`conditioned_rows`).

Everything here reads only the released model and the public rules: post-processing, no budget
(proofs/structural_constraints.py).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dpcore.constraints import forbidden_table, rule_groups


_CELL_BYTES, _MB = 8, 1 << 20


def conditioned_cells() -> int:
    """The most cells a conditioned draw may use (its tree, or MST's block table): an eighth
    of the cell cap, since the draw holds a few float64 copies of it."""
    from .plan import cell_cap
    return cell_cap() // 8


def check_conditioned_fits(domain: Any, masks: list[dict[str, np.ndarray]], *,
                           whole_domain: bool = False) -> None:
    """Before any charge, for a mechanism whose released model is a product (the independent
    model, RAP-softmax's and GEM's mixtures): the forbidden rules (``zero_masks``) that share
    a column with another rule must make a junction tree within :func:`conditioned_cells`,
    so that when rejection fails after the spend the law on the allowed cells can still be
    drawn exactly (:func:`masked_model`, :func:`mixture_rows`; a rule alone needs no table,
    :func:`outside_rows`). ``whole_domain``: a histogram model (one clique over the domain),
    whose masked tree is the domain itself. SchemaError naming the columns otherwise."""
    from dpcore.junction_tree import JunctionTree
    from dpcore.schema import SchemaError
    cap = conditioned_cells()
    if whole_domain:
        cells = math.prod(domain.size((a,)) for a in domain.attrs)
        if masks and cells > cap:
            raise SchemaError(
                f"schema constraints: this mechanism's histogram over the whole domain has "
                f"{cells} cells, above {cap} (an eighth of the cell cap), so with forbidden "
                f"rules it could spend its budget and then be unable to draw allowed rows; "
                f"coarsen the schema, or use aim, mst or mwem (they fit the rules as "
                f"structural zeros)")
        return
    singles = [(a,) for a in domain.attrs]
    _, joined = split_rules(singles, masks)
    if not joined:
        return
    cliques = [tuple(_columns(domain, rule)) for rule in joined]
    largest = max(math.prod(domain.size((a,)) for a in c) for c in cliques)
    cells = largest if largest > cap else _tree_cells(JunctionTree(domain, singles + cliques))
    if cells > cap:
        raise SchemaError(
            f"schema constraints: the forbidden rules over {[list(c) for c in cliques]} share "
            f"columns and make a junction tree of {cells:.0f} cells, above {cap} (an eighth "
            f"of the cell cap): this mechanism fits no structural zeros, so it could spend its "
            f"budget and then be unable to draw allowed rows; coarsen these columns, merge or "
            f"split the rules, or use aim, mst or mwem (they fit the rules as structural zeros)")


def split_rules(cliques: Any, masks: list[dict[str, np.ndarray]]) -> tuple[list, list]:
    """(alone, joined): the rules alone in their group whose columns the model holds in 1-way
    cliques only, and the others. An alone rule's columns are independent of every other
    column, model and rules alike, so their conditioned law is a product law outside one
    product set (:func:`outside_rows`), with no table over the rule's columns."""
    shared = {a for c in cliques if len(c) > 1 for a in c}
    alone: list = []
    joined: list = []
    for group in rule_groups(masks):
        if len(group) == 1 and not shared & set(group[0]):
            alone.append(group[0])
        else:
            joined.extend(group)
    return alone, joined


def _pieces(laws: list[np.ndarray], masks: list[np.ndarray]) -> np.ndarray:
    """The masses of the allowed set's disjoint pieces under the product of ``laws``: piece i
    has the columns before i inside their masks, column i outside its own, the rest free."""
    inside = [float(p[m].sum()) for p, m in zip(laws, masks)]
    outside = [float(p[~m].sum()) for p, m in zip(laws, masks)]
    return np.array([math.prod(inside[:i]) * outside[i] for i in range(len(laws))])


def outside_mass(laws: list[np.ndarray], masks: list[np.ndarray]) -> float:
    """The mass the product of ``laws`` (each summing to 1) puts where the rule does not hold
    (some column outside its mask)."""
    return float(_pieces(laws, masks).sum())


def outside_rows(laws: list[np.ndarray], masks: list[np.ndarray], n: int,
                 rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. rows (one column per law) from the product of ``laws`` conditioned on the
    rule not holding, exactly: a piece of the allowed set (:func:`_pieces`) by its mass, then
    each column from its law restricted to the piece. The uniform laws when the allowed cells
    have no mass (the rule forbids some but not every cell: the plan refuses the rest)."""
    mass = _pieces(laws, masks)
    if not mass.sum() > 0:
        laws = [np.full(len(m), 1.0 / len(m)) for m in masks]
        mass = _pieces(laws, masks)
    piece = rng.choice(len(laws), size=n, p=mass / mass.sum())
    out = np.empty((n, len(laws)), dtype=np.int64)
    for c, (p, m) in enumerate(zip(laws, masks)):
        for rows, law in ((piece > c, p * m), (piece == c, p * ~m), (piece < c, p)):
            at = np.flatnonzero(rows)
            if len(at):
                out[at, c] = rng.choice(len(p), size=len(at), p=law / law.sum())
    return out


def _columns(domain: Any, rule: dict[str, np.ndarray]) -> list[str]:
    return [a for a in domain.attrs if a in rule]


def _rule_factors(domain: Any, masks: list[dict[str, np.ndarray]], max_cells: int):
    """Per rule: its columns (domain order) and its allowed indicator as a log-factor (0 on
    allowed cells, -inf on forbidden ones); None when a rule's table exceeds ``max_cells``."""
    from dpcore.factor import Factor
    out = []
    for rule in masks:
        cols = tuple(_columns(domain, rule))
        shape = [domain.size((a,)) for a in cols]
        if math.prod(shape) > max_cells:
            return None
        forbidden = forbidden_table(list(cols), shape, [rule])
        out.append((cols, Factor(domain.project(cols), np.where(forbidden, -np.inf, 0.0))))
    return out


def _tree_cells(tree: Any) -> float:
    return tree.size_mb * _MB / _CELL_BYTES


def masked_model(model: Any, masks: list[dict[str, np.ndarray]], max_cells: int, *,
                 uniform: bool = False) -> Any:
    """``model`` (a GraphicalModel) times each rule's allowed indicator: the graphical model of
    its law conditioned on the allowed cells (module docstring); with ``uniform``, the
    potentials of the model's components holding a rule column are zero, so the rules'
    block is uniform on its allowed cells. None when a rule's table, or the junction tree of
    the model's cliques and the rules', exceeds ``max_cells``."""
    from dpcore.factor import Factor
    from dpcore.inference.model import GraphicalModel
    from dpcore.junction_tree import JunctionTree
    rules = _rule_factors(model.domain, masks, max_cells)
    if rules is None:
        return None
    cliques = list(model.cliques) + [cols for cols, _ in rules]
    if _tree_cells(JunctionTree(model.domain, cliques)) > max_cells:
        return None
    block = set(rule_block(model, [list(r) for r in masks])) if uniform else set()
    potentials = [Factor(f.domain, np.zeros_like(f.values)) if block & set(c) else f
                  for c, f in zip(model.cliques, model.potentials)]
    return GraphicalModel(model.domain, cliques, potentials + [f for _, f in rules], model.total)


def _calibrated(calibrate: Callable[[], Any]) -> Any:
    """``calibrate()``, or None when the log-potentials give no mass at all (the compiled
    calibration refuses a log-partition of -inf: here, no mass on the allowed cells)."""
    from dpcore.errors import InvalidArgumentError
    try:
        return calibrate()
    except InvalidArgumentError as err:
        if "positive total mass" not in str(err):
            raise
        return None


def _masked_rows(model: Any, masks: list[dict[str, np.ndarray]], names: list[str], n: int,
                 seed: Any, max_cells: int) -> np.ndarray | None:
    """``n`` rows (columns ``names``) of a graphical model conditioned on the allowed cells:
    the rules joined with others or with the model's cliques through :func:`masked_model`
    (drawn by the model's own sampler, randomized rounding along its tree), then each alone
    rule's columns (:func:`split_rules`) replaced by :func:`outside_rows` of their 1-way laws,
    which they are independent of the rest under."""
    alone, joined = split_rules(model.cliques, masks)
    base = model
    if joined:
        base = masked_model(model, joined, max_cells)
        if base is None:
            return None
        if _calibrated(lambda: base.calibrated) is None:     # no mass on the allowed cells
            base = masked_model(model, joined, max_cells, uniform=True)
            if _calibrated(lambda: base.calibrated) is None:  # no allowed cell at all
                return None
    rng = np.random.default_rng(seed)
    rows = np.array(base.synthetic_data(n, seed=int(rng.integers(2 ** 63))).records,
                    dtype=np.int64)
    attrs = list(model.domain.attrs)
    for rule in alone:
        cols = _columns(model.domain, rule)
        laws = [model.project((a,)).values / model.total for a in cols]
        rows[:, [attrs.index(a) for a in cols]] = outside_rows(
            [law / law.sum() for law in laws], [rule[a] for a in cols], n, rng)
    return rows[:, [attrs.index(a) for a in names]]


def rule_block(model: Any, rule_columns: list[list[str]]) -> list[str]:
    """S: the attributes of every component of the model's clique graph holding a rule column,
    in the domain's order."""
    parent = {a: a for a in model.domain.attrs}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for group in [list(c) for c in model.cliques] + rule_columns:
        for a in group[1:]:
            parent[find(a)] = find(group[0])
    roots = {find(a) for cols in rule_columns for a in cols}
    return [a for a in model.domain.attrs if find(a) in roots]


def conditioned_rows(model: Any, masks: list[dict[str, np.ndarray]],
                     draw: Callable[[int, int], np.ndarray], names: list[str], n: int,
                     seed: Any, max_cells: int, mapping: Any = None) -> np.ndarray | None:
    """``n`` rows (codes of the columns ``names``, the model's attributes) from ``model``
    conditioned on no rule of ``masks`` holding (each rule: column -> boolean mask over its
    codes, forbidden where every column's mask holds), or None when that cannot be drawn
    within ``max_cells`` (or the model is not on ``names``): without ``mapping``, from
    :func:`masked_model`. ``mapping``: MST's compression (``{column: compressed code of each
    original code}``; the model is on the compressed domain and ``draw(n, seed)``, the caller's
    sampler of n rows in columns ``names``, spreads a merged code uniformly over the codes it
    merged): the marginal on S is then expanded to the original codes, each merged code
    getting its group's mass over the group's size, which is the law ``draw`` follows, and
    conditioned as one table."""
    from .mst import decompress_column
    if sorted(names) != sorted(model.domain.attrs):
        return None
    if not mapping:
        return _masked_rows(model, masks, names, n, seed, max_cells)
    attrs = rule_block(model, [list(m) for m in masks])
    # only the rules' own columns are expanded to their original codes (the masks are on
    # those); the rest of the block stays compressed and is spread back below as MST's
    # sampler does: the same law, on a table MST's tree does not blow up (every column is
    # in the block of a spanning tree)
    rule_columns = {c for m in masks for c in m}
    expand = [a in mapping and a in rule_columns for a in attrs]
    shape = [len(mapping[a]) if e else model.domain.size((a,)) for a, e in zip(attrs, expand)]
    if not attrs or math.prod(shape) > max_cells:
        return None
    forbidden = forbidden_table(attrs, shape, masks)
    if forbidden.all():           # the rules together forbid every cell: nothing to draw
        return None
    weights = np.clip(np.asarray(model.project(tuple(attrs)).values, dtype=np.float64), 0, None)
    for axis, (a, e) in enumerate(zip(attrs, expand)):
        if e:                     # compressed codes -> original codes, mass spread uniformly
            codes = np.asarray(mapping[a], dtype=np.int64)
            spread = 1.0 / np.bincount(codes)[codes]
            axes = [1] * len(attrs)
            axes[axis] = -1
            weights = np.take(weights, codes, axis=axis) * spread.reshape(axes)
    weights = np.where(forbidden, 0.0, weights).ravel()
    if not weights.sum() > 0:     # no mass on the allowed cells: their uniform law (docstring)
        weights = (~forbidden).ravel().astype(np.float64)
    rng = np.random.default_rng(seed)
    rows = np.array(draw(n, int(rng.integers(2 ** 63))))
    rows = rows[rng.permutation(len(rows))]
    cells = rng.choice(weights.size, size=n, p=weights / weights.sum())
    for a, e, codes in zip(attrs, expand, np.unravel_index(cells, shape)):
        if a in mapping and not e:
            codes = decompress_column(codes, np.asarray(mapping[a], dtype=np.int64), rng)
        rows[:, names.index(a)] = codes
    return rows


def mixture_rows(model: Any, masks: list[dict[str, np.ndarray]], n: int, seed: Any,
                 max_cells: int) -> np.ndarray | None:
    """``n`` rows from a :class:`~mechanisms.product_mixture.ProductMixture` conditioned on the
    allowed cells (module docstring), or None when the junction tree of the joined rules'
    cliques (:func:`split_rules`) exceeds ``max_cells`` or no cell is allowed. Component j's
    mass on the allowed cells is the product of each alone rule's :func:`outside_mass` and the
    joined rules' tree calibrated with j's tables as 1-way log-potentials (each sums to 1, so
    the log-partition is the log of that mass); one tree serves all B components."""
    from dpcore.factor import Factor
    from dpcore.junction_tree import JunctionTree
    domain = model.domain
    attrs = list(domain.attrs)
    singles = [(a,) for a in attrs]
    alone, joined = split_rules(singles, masks)
    tree, masking = None, []
    if joined:
        rules = _rule_factors(domain, joined, max_cells)
        if rules is None:
            return None
        tree = JunctionTree(domain, singles + [cols for cols, _ in rules])
        if _tree_cells(tree) > max_cells:
            return None
        masking = [f for _, f in rules]
    in_rules = {a for rule in masks for a in rule}

    def laws(j: int, uniform: bool) -> list[np.ndarray]:
        """Component j's 1-way laws; with ``uniform``, uniform on the rules' columns."""
        return [np.full(len(t[j]), 1.0 / len(t[j])) if uniform and a in in_rules else t[j]
                for a, t in zip(attrs, model.tables)]

    def component(j: int, uniform: bool = False) -> tuple[float, Any]:
        """(log of component j's mass on the allowed cells, its calibrated masked tree)."""
        law = laws(j, uniform)
        with np.errstate(divide="ignore"):
            mass = sum(math.log(m) if m > 0 else -math.inf for m in (
                outside_mass([law[attrs.index(a)] for a in _columns(domain, rule)],
                             [rule[a] for a in _columns(domain, rule)]) for rule in alone))
            if tree is None:
                return mass, None
            ones = [Factor(domain.project(a), np.log(law[i])) for i, a in enumerate(singles)]
        calibrated = _calibrated(lambda: tree.calibrate(ones + masking))
        return (-math.inf if calibrated is None else mass + calibrated.log_partition), calibrated

    B = model.components
    mass = np.array([component(j)[0] for j in range(B)])
    uniform = not np.isfinite(mass).any()    # no mass on the allowed cells: their uniform law
    if uniform:
        mass = np.array([component(j, True)[0] for j in range(B)])
        if not np.isfinite(mass).any():      # no allowed cell at all
            return None
    rng = np.random.default_rng(seed)
    p = np.exp(mass - mass[np.isfinite(mass)].max())
    counts = rng.multinomial(n, p / p.sum())
    codes = np.empty((n, len(attrs)), dtype=np.int64)
    at = 0
    for j in np.flatnonzero(counts):
        m, law = int(counts[j]), laws(int(j), uniform)
        if tree is None:
            rows = np.stack([rng.choice(len(q), size=m, p=q) for q in law], axis=1)
        else:
            rows = np.array(component(int(j), uniform)[1].sample(
                m, method="sample", seed=int(rng.integers(2 ** 63))), dtype=np.int64)
        for rule in alone:
            cols = _columns(domain, rule)
            rows[:, [attrs.index(a) for a in cols]] = outside_rows(
                [law[attrs.index(a)] for a in cols], [rule[a] for a in cols], m, rng)
        codes[at:at + m] = rows
        at += m
    return codes[rng.permutation(n)]


def record_rows(model: Any, masks: list[dict[str, np.ndarray]], n: int,
                seed: Any) -> np.ndarray | None:
    """``n`` rows from a mixture of records (the uniform law on ``model.records``) conditioned
    on the allowed cells: the allowed records uniformly; None when none is allowed."""
    names = list(model.domain.attrs)
    records = np.asarray(model.records)
    bad = np.zeros(len(records), dtype=bool)
    for rule in masks:
        hit = np.ones(len(records), dtype=bool)
        for col, mask in rule.items():
            hit &= np.asarray(mask, dtype=bool)[records[:, names.index(col)]]
        bad |= hit
    keep = records[~bad]
    if not len(keep):
        return None
    return keep[np.random.default_rng(seed).integers(len(keep), size=n)]


def conditioned_draw(model: Any, masks: list[dict[str, np.ndarray]],
                     draw: Callable[[int, int], np.ndarray], names: list[str], n: int,
                     seed: Any, max_cells: int, mapping: Any = None) -> np.ndarray | None:
    """``n`` rows (columns ``names``) from ``model`` conditioned on the allowed cells, by the
    model's kind (module docstring), or None where no exact draw is available. ``mapping``:
    MST's compression of a graphical model (:func:`conditioned_rows`)."""
    from dpcore.inference.model import GraphicalModel

    from .fem import MixtureModel
    from .product_mixture import ProductMixture
    if isinstance(model, GraphicalModel):
        return conditioned_rows(model, masks, draw, names, n, seed, max_cells, mapping)
    if mapping:
        return None
    domain = getattr(model, "domain", None)
    if domain is None or list(domain.attrs) != list(names):
        return None
    if isinstance(model, ProductMixture):
        return mixture_rows(model, masks, n, seed, max_cells)
    if isinstance(model, MixtureModel):
        return record_rows(model, masks, n, seed)
    return None
