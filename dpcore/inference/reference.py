"""Brute-force reference: the same convex problem solved directly over the full joint table.

For small domains, ``min_{q >= 0, 1^T q = N} sum_i ||Q_i A_i q - y_i||^2 / sigma_i^2`` (``A_i``
marginalises the joint onto measurement i's attributes) is a least-squares problem on the
scaled simplex. We solve it with SciPy's NNLS (the equality as a heavily weighted extra row),
then polish on the support by least squares under the equality and *verify* the KKT
conditions, so the value returned is the optimum up to the small duality gap the tests certify
(<= 1e-8 of the loss), not an iterate. Tests compare Private-PGM's fitted loss against it
(issue 4 acceptance: exactness on small domains).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from dpcore.errors import InvalidArgumentError, TableTooLargeError


def design(problem) -> tuple[np.ndarray, np.ndarray]:
    """``B, b`` with ``loss(q) = ||B q - b||^2`` for a flat joint table ``q`` (counts)."""
    domain = problem.domain
    cells = domain.size()
    order = {a: i for i, a in enumerate(domain.attrs)}
    codes = np.indices(domain.shape).reshape(len(domain.shape), -1)
    blocks, targets = [], []
    for m in problem.measurements:
        axes = [order[a] for a in m.attrs]
        sizes = [domain.shape[i] for i in axes]
        cell = np.ravel_multi_index(tuple(codes[i] for i in axes), sizes)
        marg = sp.csr_matrix((np.ones(cells), (cell, np.arange(cells))),
                             shape=(int(np.prod(sizes)), cells))
        q = marg if m.query is None else sp.csr_matrix(m.query) @ marg
        blocks.append(q.toarray() / m.sigma)
        targets.append(m.noisy / m.sigma)
    return np.vstack(blocks), np.concatenate(targets)


def allowed_cells(problem) -> np.ndarray:
    """Flat boolean over the full joint: the cells no structural zero of ``problem`` forbids."""
    domain = problem.domain
    out = np.ones(domain.shape, dtype=bool)
    for z in problem.zeros:
        out &= ~z.over(domain.attrs, domain.shape)
    return out.ravel()


def solve_full_joint(problem, max_cells: int = 5000) -> tuple[float, np.ndarray]:
    """The optimal loss and an optimal joint table (counts, domain order, flat); with structural
    zeros, the optimum over the tables that are zero on the forbidden cells (those columns of
    the design are dropped, and the table is 0 there)."""
    cells = problem.domain.size()
    if cells > max_cells:
        raise TableTooLargeError(f"full joint must have <= {max_cells} cells, got {cells}")
    b_mat, b = design(problem)
    allowed = allowed_cells(problem)
    if not allowed.all():
        loss, q = _solve(b_mat[:, allowed], b, problem.total)
        full = np.zeros(cells)
        full[allowed] = q
        return loss, full
    return _solve(b_mat, b, problem.total)


def _solve(b_mat, b, n) -> tuple[float, np.ndarray]:
    cells = b_mat.shape[1]
    # Solve in proportions x = q / N so the equality row is O(1) like the data rows.
    a = b_mat * n
    weight = 1e4 * max(1.0, np.linalg.norm(a, 2))
    x, _ = nnls(np.vstack([a, weight * np.ones((1, cells))]), np.append(b, weight),
                maxiter=50 * cells)
    support = x > 1e-13
    for _ in range(cells):
        x = _polish(a, b, support)
        if (x[support] >= 0).all():
            break
        support &= ~(x < 0)  # drop variables the equality-constrained solve made negative
    else:
        raise InvalidArgumentError("reference solver: active set did not settle")
    grad = 2 * a.T @ (a @ x - b)
    lam = -grad[support].mean()
    scale = np.abs(grad).max() + 1.0
    stationary = np.abs(grad[support] + lam).max() <= 1e-7 * scale
    dual_feasible = bool(support.all()) or (grad[~support] + lam).min() >= -1e-7 * scale
    if not (stationary and dual_feasible):
        raise InvalidArgumentError("reference solver: KKT conditions not met")
    r = a @ x - b
    return float(r @ r), x * n


def _polish(a, b, support):
    """Least squares on ``support`` subject to ``sum x = 1``, by eliminating the last support
    cell (``x_k = 1 - sum of the others``) so the solve works on ``a`` itself, not on the
    normal equations, whose squared condition number costs ~1e-9 of the loss."""
    cols = a[:, support]
    last = cols[:, -1]
    z = np.linalg.lstsq(cols[:, :-1] - last[:, None], b - last, rcond=None)[0]
    x = np.zeros(a.shape[1])
    x[support] = np.append(z, 1.0 - z.sum())
    return x
