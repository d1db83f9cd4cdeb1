"""The independent baseline: a product of 1-way marginals on the GraphicalModel API.

With only 1-way measurements the Private-PGM problem separates by attribute: for each attribute
``min_{q >= 0, sum q = N} sum_j ||Q_j q - y_j||^2 / sigma_j^2``. With identity queries the sum is
``(sum_j w_j) ||q - ybar||^2 + const`` for the precision-weighted mean ``ybar`` (``w_j =
1/sigma_j^2``), so the optimum is the Euclidean projection of ``ybar`` onto the scaled simplex,
computed exactly (Duchi et al., ICML 2008). Other queries go through :func:`estimate`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpcore.errors import InvalidArgumentError
from dpcore.inference.measurement import Measurement, estimate_total

# log of a zero cell: exp(-700) ~ 1e-304 keeps log-space kernels finite.
_LOG_ZERO = -700.0


def project_to_simplex(v: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{q >= 0, sum q = total}`` (sort-based, exact)."""
    # The projection is invariant to shifting v by a constant; shifting by max(v) keeps the
    # largest entry at 0, so noisy counts far below `total` (e.g. -1e71 at a tiny epsilon)
    # cannot absorb `total` in rounding and leave no positive entry.
    v = np.asarray(v, dtype=np.float64) - np.max(v)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def independent_model(domain, measurements: Sequence[Measurement], total: float | None = None):
    """Fit the model in which all attributes are independent, from 1-way measurements.

    Attributes without a measurement are uniform. A measurement on more than one attribute is
    an error (it carries dependence this model cannot represent).
    """
    from dpcore.factor import Factor
    from dpcore.inference.estimation import estimate
    from dpcore.inference.model import GraphicalModel

    measurements = list(measurements)
    for m in measurements:
        if not isinstance(m, Measurement):
            raise InvalidArgumentError(
                f"measurements must be Measurement objects, got {type(m).__name__}")
        m.validate(domain)
        if len(m.attrs) != 1:
            raise InvalidArgumentError(
                f"independent_model takes 1-way measurements only, got attrs {m.attrs}")
    if total is None:
        total = estimate_total(measurements)
    if not (np.isfinite(total) and total > 0):
        raise InvalidArgumentError(f"total must be finite and > 0, got {total}")
    potentials, history = [], 0.0
    for attr in domain.attrs:
        mine = [m for m in measurements if m.attrs[0] == attr]
        size = domain.size((attr,))
        if not mine:
            q = np.full(size, total / size)
        elif all(m.query is None for m in mine):
            w = np.array([1.0 / m.sigma**2 for m in mine])
            ybar = sum(wj * m.noisy for wj, m in zip(w, mine)) / w.sum()
            q = project_to_simplex(ybar, total)
        else:
            fitted = estimate(domain.project((attr,)), mine, total=total, max_iters=10000,
                              tol=1e-12, method="accelerated")
            q = fitted.model.project((attr,)).values
        for m in mine:
            history += m.loss_and_gradient(q)[0]
        with np.errstate(divide="ignore"):
            logp = np.log(q / q.sum())
        potentials.append(Factor(domain.project((attr,)), np.maximum(logp, _LOG_ZERO)))
    return GraphicalModel(domain, [(a,) for a in domain.attrs], potentials, total,
                          loss_history=(history,))
