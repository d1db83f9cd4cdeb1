"""Marginals on derived columns, measured as coarsenings of their parents (issue 23).

A derived column ``B = f(A)`` (a schema's derived rule, :mod:`dpcore.constraints`) is not in the
model: the model lives on the measured columns and ``B`` is regenerated from ``A``. Its
marginals can still be *measured*: the curator counts the real ``B`` column (it is a column of
the data like any other, and the encoder checked ``B = f(A)`` on every row), and the
measurement ``y = M_{r}(D) + noise`` over ``r`` (holding ``B``) is, as a function of the
model's marginal on ``base(r)`` (``B`` replaced by ``A``), ``y = Q mu_base + noise`` with
``Q`` the 0/1 matrix sending each cell of ``base(r)`` to the cell of ``r`` it coarsens to.
Private-PGM fits such measurements as it fits any linear query (``Measurement(query=Q)``).

Privacy: ``M_r`` is an ordinary marginal of the records (each record adds one to one cell), so
its L2 sensitivity under add/remove is 1 whatever ``Q`` is; ``Q`` only re-expresses the release
for estimation, after it is made (proofs/structural_constraints.py, claim "coarsened
marginal").
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

Derived = Mapping[str, tuple[str, Sequence[int]]]   # child -> (parent, table[parent code])


def base(r: Sequence[str], derived: Derived) -> tuple[str, ...] | None:
    """``r`` with each derived column replaced by its parent, or None when that repeats a
    column (``r`` holds a child and its parent, or two children of one parent: such a marginal
    is a function of a smaller one, which is measured instead)."""
    out = tuple(derived[a][0] if a in derived else a for a in r)
    return out if len(set(out)) == len(out) else None


def query(r: Sequence[str], derived: Derived, domain, model_domain) -> sp.csr_matrix | None:
    """The 0/1 matrix from the model's marginal on ``base(r)`` (C order over it, model codes)
    to the marginal on ``r`` (C order over ``r``, ``domain`` codes: pass ``r`` in the domain's
    order, the order the curator releases in); None when ``r`` holds no
    derived column (the identity). Each column has one 1, so ``1^T Q = 1^T``: the total is
    identifiable and ``Q`` preserves it."""
    if not any(a in derived for a in r):
        return None
    b = base(r, derived)
    shape = [model_domain[a] for a in b]
    codes = np.indices(shape).reshape(len(b), -1)
    mapped = [np.asarray(derived[a][1], dtype=np.int64)[codes[i]] if a in derived else codes[i]
              for i, a in enumerate(r)]
    rows = np.ravel_multi_index(mapped, [domain[a] for a in r])
    cells = rows.size
    return sp.csr_matrix((np.ones(cells), (rows, np.arange(cells))),
                         shape=(domain.size(tuple(r)), cells))


def expand_records(records: np.ndarray, derived: Derived, domain, model_domain) -> np.ndarray:
    """Model-domain records -> ``domain`` records, each derived column computed from its
    parent (post-processing)."""
    out = np.zeros((len(records), len(domain.attrs)), dtype=np.int64)
    for j, a in enumerate(domain.attrs):
        if a in derived:
            parent, table = derived[a]
            out[:, j] = np.asarray(table, dtype=np.int64)[
                records[:, model_domain.attrs.index(parent)]]
        else:
            out[:, j] = records[:, model_domain.attrs.index(a)]
    return out
