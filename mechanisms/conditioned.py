"""Exact sampling from a fitted graphical model conditioned on a schema's allowed cells, for when
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
(within the cell cap) and a model on the measured domain (not MST's compressed one); otherwise
:func:`conditioned_rows` returns None and the caller refuses as before. If the model gives the
allowed cells of S no mass at all (its log-potentials' floor underflowed), the allowed cells are
drawn uniformly: the conditional is then undefined, and uniform is its limit under any smoothing.
Everything here reads only the released model and the public rules: post-processing, no budget
(proofs/structural_constraints.py).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np


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
                     seed: Any, max_cells: int) -> np.ndarray | None:
    """``n`` rows (codes of the columns ``names``, the model's attributes) from ``model``
    conditioned on no rule of ``masks`` holding (each rule: column -> boolean mask over its
    codes, forbidden where every column's mask holds), or None when the marginal on S would
    exceed ``max_cells`` (or the model is not on ``names``). ``draw(n, seed)``: n rows from the
    model (the caller's sampler), columns ``names``."""
    if sorted(names) != sorted(model.domain.attrs):
        return None
    attrs = rule_block(model, [list(m) for m in masks])
    shape = [model.domain.size((a,)) for a in attrs]
    if not attrs or math.prod(shape) > max_cells:
        return None
    forbidden = np.zeros(shape, dtype=bool)
    for rule in masks:
        hit = np.ones([1] * len(attrs), dtype=bool)
        for col, mask in rule.items():
            axes = [1] * len(attrs)
            axes[attrs.index(col)] = -1
            hit = hit & np.asarray(mask, dtype=bool).reshape(axes)
        forbidden |= hit
    weights = np.clip(np.asarray(model.project(tuple(attrs)).values, dtype=np.float64), 0, None)
    weights = np.where(forbidden, 0.0, weights).ravel()
    if not weights.sum() > 0:     # no mass on the allowed cells: their uniform law (docstring)
        weights = (~forbidden).ravel().astype(np.float64)
    rng = np.random.default_rng(seed)
    rows = np.array(draw(n, int(rng.integers(2 ** 63))))
    rows = rows[rng.permutation(len(rows))]
    cells = rng.choice(weights.size, size=n, p=weights / weights.sum())
    for a, codes in zip(attrs, np.unravel_index(cells, shape)):
        rows[:, names.index(a)] = codes
    return rows
