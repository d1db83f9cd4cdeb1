"""Noisy linear measurements of marginals, the Gaussian log-likelihood loss and the total.

A measurement is ``y = Q M_r(D) + N(0, sigma^2 I)``: the marginal of the data on the attributes
``r`` (counts, flattened in C order over ``r`` *as given*), mapped by a linear query ``Q``
(identity when None) and released with Gaussian noise (NIST-MST paper Sec. 4.2, Eq. 4.1; AIM
paper Sec. 2.3). Estimation minimises the negative log-likelihood of all measurements,

    L(mu) = sum_i ||Q_i mu_i - y_i||^2 / sigma_i^2,

over the marginals ``mu_i`` (in counts) of a distribution scaled to the total count.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from dpcore.errors import DomainError, DpcoreTypeError, InvalidArgumentError


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """<a, b> by einsum's own loop, not BLAS: a threaded BLAS dot stalls for milliseconds on a
    busy machine, longer than the rest of an optimiser iteration."""
    return float(np.einsum("i,i->", a, b))


class Measurement:
    """One noisy linear measurement ``noisy ~ N(query @ marginal(attrs), sigma^2 I)``.

    ``attrs`` fixes the order of the marginal's axes (the flattening is C order over them).
    ``query`` is a dense array or scipy.sparse matrix with one column per marginal cell, or
    None for the identity (``noisy`` is then the noisy marginal itself). Immutable.
    Its term in the estimation objective is ``||Q mu - y||^2 / sigma^2``: the Gaussian
    negative log-likelihood up to constants, so estimation is maximum likelihood.

    >>> m = Measurement(("a",), [3.0, 1.0], sigma=2.0)
    >>> m.attrs, m.sigma, m.noisy.tolist()
    (('a',), 2.0, [3.0, 1.0])
    """

    __slots__ = ("attrs", "noisy", "sigma", "query")

    def __init__(self, attrs, noisy, sigma, query=None):
        attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if not attrs:
            raise InvalidArgumentError("attrs must name at least one attribute, got ()")
        for a in attrs:
            if not isinstance(a, str):
                raise DpcoreTypeError(f"attrs must be attribute names (str), got {a!r}")
        if len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(f"attrs must be unique, got {attrs}")
        try:
            y = np.array(noisy, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DpcoreTypeError(f"noisy must be a numeric vector, got {type(noisy).__name__}") from exc
        if y.ndim != 1 or y.size == 0:
            raise InvalidArgumentError(f"noisy must be a non-empty 1-d vector, got shape {y.shape}")
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise InvalidArgumentError(f"noisy must be finite, got {y[bad]} at index {bad}")
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer, np.floating)):
            raise DpcoreTypeError(f"sigma must be a real number, got {type(sigma).__name__}")
        sigma = float(sigma)
        if not (math.isfinite(sigma) and sigma > 0):
            raise InvalidArgumentError(f"sigma must be finite and > 0, got {sigma}")
        if query is not None:
            query = _check_query(query, y.size)
        y.setflags(write=False)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "noisy", y)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "query", query)

    def __setattr__(self, name, value):
        raise AttributeError("Measurement is immutable")

    def __repr__(self):
        q = "identity" if self.query is None else f"{self.query.shape[0]}x{self.query.shape[1]}"
        return f"Measurement(attrs={self.attrs}, rows={self.noisy.size}, sigma={self.sigma}, query={q})"

    def validate(self, domain) -> None:
        """Check the measurement against ``domain``: attributes exist, sizes agree."""
        for a in self.attrs:
            if a not in domain:
                raise DomainError(f"measurement attribute {a!r} is not in the domain {domain.attrs}")
        cells = domain.size(self.attrs)
        cols = cells if self.query is None else self.query.shape[1]
        if cols != cells:
            raise InvalidArgumentError(
                f"query must have one column per cell of the marginal on {self.attrs} "
                f"({cells}), got {cols}")
        if self.query is None and self.noisy.size != cells:
            raise InvalidArgumentError(
                f"noisy must have one entry per cell of the marginal on {self.attrs} "
                f"({cells}), got {self.noisy.size}")

    def residual(self, marginal: np.ndarray) -> np.ndarray:
        """``Q mu - y`` for a flat marginal ``mu`` (counts, C order over ``attrs``)."""
        if self.query is None:
            return marginal - self.noisy
        return self.query @ marginal - self.noisy

    def loss_and_gradient(self, marginal: np.ndarray) -> tuple[float, np.ndarray]:
        """``||Q mu - y||^2 / sigma^2`` and its gradient ``2 Q^T (Q mu - y) / sigma^2``."""
        r = self.residual(marginal)
        w = 1.0 / (self.sigma * self.sigma)
        g = r if self.query is None else self.query.T @ r
        return dot(r, r) * w, (2.0 * w) * np.asarray(g)

    def total_estimate(self) -> tuple[float, float] | None:
        """An unbiased estimate of the total count from this measurement and its variance.

        The total is ``1^T mu``. If ``1 = Q^T w`` for some ``w``, then ``w^T y`` is unbiased for
        it with variance ``sigma^2 ||w||^2``; the minimum-norm ``w`` gives the least variance
        (Gauss-Markov for a single linear functional). For the identity ``w = 1``, variance
        ``cells * sigma^2``. Returns None when the total is not identifiable from ``Q``.
        """
        if self.query is None:
            return float(self.noisy.sum()), self.noisy.size * self.sigma**2
        q = self.query.toarray() if sp.issparse(self.query) else self.query
        ones = np.ones(q.shape[1])
        w, *_ = np.linalg.lstsq(q.T, ones, rcond=None)
        if not np.allclose(q.T @ w, ones, rtol=0, atol=1e-8):
            return None
        return float(w @ self.noisy), float(w @ w) * self.sigma**2


def _check_query(query, rows: int):
    if sp.issparse(query):
        q = sp.csr_matrix(query, dtype=np.float64)
        data = q.data
    else:
        try:
            q = np.array(query, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DpcoreTypeError(
                f"query must be a numeric matrix or scipy.sparse, got {type(query).__name__}") from exc
        if q.ndim != 2:
            raise InvalidArgumentError(f"query must be 2-d, got shape {q.shape}")
        data = q
    if q.shape[0] != rows:
        raise InvalidArgumentError(
            f"query must have one row per noisy entry ({rows}), got {q.shape[0]} rows")
    if not np.all(np.isfinite(data)):
        raise InvalidArgumentError("query must be finite, got NaN or inf entries")
    if not sp.issparse(q):
        q.setflags(write=False)
    return q


def estimate_total(measurements: Sequence[Measurement]) -> float:
    """Inverse-variance weighted estimate of the total count, clipped to >= 1.

    Under add/remove-one DP the record count is private, so it is estimated from the noisy
    measurements (post-processing, no extra privacy cost) by combining each measurement's
    unbiased estimate (:meth:`Measurement.total_estimate`) with weights 1/variance, the minimum
    variance unbiased combination of independent estimates.
    """
    num = den = 0.0
    for m in measurements:
        est = m.total_estimate()
        if est is not None:
            value, var = est
            num += value / var
            den += 1.0 / var
    if den == 0.0:
        raise InvalidArgumentError(
            "measurements must determine the total count (some Q with 1 in its row space), "
            "got none; pass total= explicitly")
    return max(num / den, 1.0)


def total_loss(measurements: Sequence[Measurement], marginals: Sequence[np.ndarray]) -> float:
    """``sum_i ||Q_i mu_i - y_i||^2 / sigma_i^2`` for flat count marginals ``mu_i``."""
    return float(sum(m.loss_and_gradient(mu)[0] for m, mu in zip(measurements, marginals)))
