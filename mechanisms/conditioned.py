"""Exact sampling from a released model conditioned on a schema's allowed cells, for when
rejection fails (audit 14, item 3).

Rejection (:meth:`mechanisms.synthesizer.Synthesizer._draw_allowed`) draws from the model and
drops rows in forbidden cells; when the model puts almost all its mass there (a mechanism without
structural zeros, a tiny budget, a huge column: the noise spreads the mass over the whole
domain), it cannot find allowed rows. That happened after the whole budget was spent, so
refusing lost the budget. This module draws the conditional law directly where it is cheap and
exact:

Let S be the union of the connected components of the model's clique graph (attributes joined
when a clique holds both) that hold a forbidden rule's columns. The model factorises as
P(x) = P(x_S) P(x_rest), and the allowed set constrains x_S only, so
P(x | allowed) = P(x_S | x_S allowed) P(x_rest): draw the rest from the model as usual and x_S
from the model's marginal on S with the forbidden cells zeroed, renormalised. For the
independent model S is just the rules' columns. This needs the marginal on S as one table
(within the cell cap); otherwise :func:`conditioned_rows` returns None and the caller refuses as
before. If the model gives the
allowed cells of S no mass at all (its log-potentials' floor underflowed), the allowed cells are
drawn uniformly: the conditional is then undefined, and uniform is its limit under any smoothing.
The same conditioning for the other released models (:func:`conditioned_draw`):

* a product mixture (RAP-softmax, GEM: B product distributions mixed uniformly): the component
  is drawn with probability proportional to its mass on the allowed cells of the rules' columns
  S, then x_S from that component's masked product and the rest from the component as usual
  (exact: P(j, x | allowed) is proportional to P_j(x_S) P_j(x_rest) on allowed x_S); needs the
  B x |S| table within the cell cap;
* a mixture of records (FEM, DQRS, PrivPGD's particles: the uniform law on a table of records):
  the allowed records uniformly; none allowed refuses (None).

The histogram families (PEP, MWEM-explicit) release a one-clique graphical model: S is then the
whole (capped) domain. MST's model lives on a compressed domain whose merged codes are spread
uniformly over the values they merged: the block's marginal is expanded to the original codes
on the rules' own columns with that spread (the law MST's sampler follows), conditioned as
above, and its other columns are spread back after the draw as the sampler does.

Everything here reads only the released model and the public rules: post-processing, no budget
(proofs/structural_constraints.py).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dpcore.constraints import forbidden_table


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
    codes, forbidden where every column's mask holds), or None when the marginal on S would
    exceed ``max_cells`` (or the model is not on ``names``). ``draw(n, seed)``: n rows from the
    model (the caller's sampler), columns ``names``. ``mapping``: MST's compression
    (``{column: compressed code of each original code}``; the model is on the compressed
    domain and ``draw`` spreads a merged code uniformly over the codes it merged): the block's
    marginal is then expanded to the original codes, each merged code getting its group's mass
    over the group's size, which is the law ``draw`` follows."""
    from .mst import decompress_column
    mapping = mapping or {}
    if sorted(names) != sorted(model.domain.attrs):
        return None
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
    allowed cells (module docstring), or None when its B x |S| table exceeds ``max_cells``."""
    names = list(model.domain.attrs)
    attrs = [a for a in names if any(a in rule for rule in masks)]
    shape = [model.domain.size((a,)) for a in attrs]
    B = model.components
    if not attrs or B * math.prod(shape) > max_cells:
        return None
    joint = np.ones([B] + [1] * len(attrs))
    for k, a in enumerate(attrs):
        axes = [B] + [1] * len(attrs)
        axes[k + 1] = shape[k]
        joint = joint * model.tables[names.index(a)].reshape(axes)
    allowed = ~forbidden_table(attrs, shape, masks)
    if not allowed.any():
        return None
    joint = (joint * allowed).reshape(B, -1)
    mass = joint.sum(axis=1)
    if not mass.sum() > 0:        # no mass on the allowed cells: their uniform law
        joint = np.broadcast_to(allowed.ravel().astype(np.float64), joint.shape)
        mass = joint.sum(axis=1)
    rng = np.random.default_rng(seed)
    which = rng.choice(B, size=n, p=mass / mass.sum())
    codes = np.empty((n, len(names)), dtype=np.int64)
    for j in np.unique(which):
        at = np.flatnonzero(which == j)
        cells = rng.choice(joint.shape[1], size=len(at), p=joint[j] / mass[j])
        for a, values in zip(attrs, np.unravel_index(cells, shape)):
            codes[at, names.index(a)] = values
        for i, a in enumerate(names):
            if a not in attrs:
                table = model.tables[i][j]
                codes[at, i] = rng.choice(len(table), size=len(at), p=table / table.sum())
    return codes


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
