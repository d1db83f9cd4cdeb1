"""Private-PGM estimation: fit a graphical model to noisy marginal measurements.

Solves ``min_theta sum_i ||Q_i M_i(P_theta) - y_i||^2 / sigma_i^2`` (NIST-MST paper Eq. 4.2),
the Gaussian maximum-likelihood problem over the marginal polytope, whose optimum is attained
by a graphical model with one log-potential per measured clique (ibid. Fact 1; McKenna, Sheldon
& Miklau, ICML 2019). Every iteration is one junction-tree calibration in the compiled core.

Methods:

* ``"mirror_descent"`` — entropic mirror descent over the marginal polytope, written in the
  log-potentials: ``theta <- theta - eta * grad_mu L`` (ICML 2019 paper Alg. 1). The step size
  is Armijo backtracking with doubling, accepting ``L(mu) - L(mu') >= <g, mu - mu'> / 2``. For
  exponential families ``<theta - theta', mu - mu'>`` is the symmetric KL divergence, which by
  Pinsker is ``>= ||p - p'||_1^2``, so any step ``eta <= 1/Lip`` (``Problem.smoothness``) passes
  the test: every accepted step provably decreases the loss and backtracking always stops.
* ``"accelerated"`` (default) — the same step taken from an extrapolated point ``theta +
  beta (theta - theta_prev)``, ``beta = k / (k + 3)`` (Nesterov momentum in the dual
  coordinates) with adaptive restart (O'Donoghue & Candes 2015): a momentum step is kept only
  when it passes the same sufficient-decrease test; otherwise momentum resets and a plain mirror
  step is taken. So the loss is monotone, and a failed extrapolation costs one extra
  calibration. Measured here (tests/property, bench/inference.py): 2-10x fewer iterations to
  the same loss and ~1 calibration per iteration against ~2 for the line-searched plain method;
  plain mirror descent is O(1/t) and crawls when the optimum has empty cells and little noise.

The loop is compiled (``dpcore::fit``, csrc/src/estimation.cpp): an iteration is one
calibration and a few vector sweeps, with no Python in between unless a measurement has a
non-identity query (its loss is called back: ``Problem.extra_loss``).

Convergence: stop when an accepted step decreases the loss by <= ``tol * max(loss, 1)``
(relative, but the loss is a chi-square statistic so 1 is its natural absolute unit; reported as
``converged=True``) or after ``max_iters`` iterations (``converged=False``).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpcore.errors import InvalidArgumentError
from dpcore.inference.measurement import Measurement, estimate_total
from dpcore.inference.problem import Problem

METHODS = ("mirror_descent", "accelerated")


@dataclass(frozen=True)
class EstimationResult:
    """The fitted model and the log of the optimisation."""

    model: object
    loss_history: tuple
    iterations: int
    converged: bool
    method: str
    calibrations: int = 0  # trial points evaluated (about one per iteration when accelerated)


def estimate(domain, measurements: Sequence[Measurement], *, total: float | None = None,
             warm_start=None, max_iters: int = 2000, tol: float = 1e-7,
             method: str = "accelerated",
             callback: Callable[[int, float], object] | None = None,
             zeros: Sequence = (), refresh: Sequence = (), floor: float = 0.5,
             first_step: float = 1.0) -> EstimationResult:
    """Fit a :class:`GraphicalModel` to ``measurements`` by Private-PGM.

    ``total``: the record count if public; otherwise estimated from the measurements
    (:func:`estimate_total`; post-processing of released values, no privacy cost).
    ``warm_start``: a previous model (e.g. AIM's last round): its potentials seed the new ones,
    each added into a new clique that contains it (potentials of cliques no longer contained in
    any measured set are dropped); new cliques start at zero.
    ``callback(iteration, loss)`` is called after every iteration; returning True stops early.
    ``zeros``: :class:`~dpcore.inference.zeros.StructuralZero` masks; each one's attributes
    become (part of) a model clique whose forbidden cells hold -inf throughout, so the fit is
    the maximum-likelihood model among those with zero mass there.
    ``refresh``: measured attribute sets (e.g. AIM's newly measured marginal) on which the
    start takes one IPF step before the fit (:func:`refresh_potentials`): the start's marginal
    on each then equals its measurements' clipped (at ``floor`` counts a cell), normalised
    mean, so a warm start need not crawl there by small gradient steps.
    ``first_step``: the first step size as a multiple of ``1 / Problem.smoothness``
    (>= 1; see :meth:`TreeOracle.fit`): that bound is a worst case over directions, and an
    accepted accelerated step never grows the step, so a fit from it can crawl.
    """
    from dpcore.inference.model import GraphicalModel
    from dpcore.inference.oracle import TreeOracle

    if method not in METHODS:
        raise InvalidArgumentError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(max_iters, bool) or not isinstance(max_iters, (int, np.integer)) or max_iters < 0:
        raise InvalidArgumentError(f"max_iters must be an integer >= 0, got {max_iters!r}")
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise InvalidArgumentError(f"tol must be a number >= 0, got {tol!r}")
    measurements = list(measurements)
    if total is None:
        total = estimate_total(measurements)
    elif not (isinstance(total, (int, float, np.integer, np.floating)) and np.isfinite(total)
              and total > 0):
        raise InvalidArgumentError(f"total must be finite and > 0, got {total!r}")
    problem = Problem(domain, measurements, float(total), zeros)
    check_first_step(first_step)
    theta = initial_potentials(problem, warm_start)
    oracle = TreeOracle(problem)
    if refresh:
        theta = refresh_potentials(problem, oracle, theta, refresh, floor)
    theta, history, iters, converged, calibrations = oracle.fit(
        theta, max_iters=int(max_iters), tol=float(tol), accelerated=method == "accelerated",
        callback=callback, first_step=float(first_step))
    model = GraphicalModel(domain, problem.cliques, oracle.factors(theta), problem.total,
                           loss_history=history, calibrated=oracle.calibrated(theta))
    return EstimationResult(model, tuple(history), iters, converged, method, calibrations)


def _first_containing(cliques, limit: int = 12):
    """{attribute set: index of the first clique holding it} over every subset of every
    clique, or None when a clique has more than ``limit`` attributes (then the caller scans).
    A warm start places ~200 potentials among ~200 cliques each AIM round at 100 attributes:
    a lookup each instead of a scan of the cliques."""
    if any(len(c) > limit for c in cliques):
        return None
    first: dict = {}
    for i, c in enumerate(cliques):
        for k in range(len(c) + 1):
            for sub in itertools.combinations(c, k):
                first.setdefault(frozenset(sub), i)
    return first


def initial_potentials(problem: Problem, warm_start=None) -> np.ndarray:
    """Zeros (the uniform distribution), plus a previous model's potentials where they fit."""
    theta = problem.zero_potentials()
    if warm_start is None:
        return theta
    if warm_start.domain != problem.domain:
        raise InvalidArgumentError("warm_start must be a model on the same domain")
    order = {a: i for i, a in enumerate(problem.domain.attrs)}
    cliques = problem.split_cliques(theta)
    first = _first_containing(problem.cliques)
    for factor in warm_start.potentials:
        attrs = tuple(factor.attributes)
        if first is not None:
            k = first.get(frozenset(attrs))
        else:
            k = next((i for i, c in enumerate(problem.cliques) if set(attrs) <= set(c)), None)
        if k is None:
            continue
        canon = sorted(attrs, key=order.__getitem__)
        values = np.transpose(factor.values, [attrs.index(a) for a in canon])
        shape = tuple(problem.domain.shape[order[a]] if a in attrs else 1
                      for a in problem.cliques[k])
        cliques[k] += values.reshape(shape)  # a view: writes into theta
    if problem.zeros:   # a warm start without the zeros (or with others) must not lift them
        theta[problem.forbidden] = -np.inf
    return theta


_MAX_FIRST_STEP = 2.0**20   # the fit halves a failed step at most 40 times (estimation.cpp)


def check_first_step(first_step) -> None:
    """``estimate``'s ``first_step`` rule, for callers that check their options before any
    charge (AIM)."""
    if not (isinstance(first_step, (int, float)) and 1.0 <= first_step <= _MAX_FIRST_STEP):
        raise InvalidArgumentError(
            f"first_step must be a number in [1, {_MAX_FIRST_STEP:g}], got {first_step!r}")


def refresh_potentials(problem: Problem, oracle, theta: np.ndarray, refresh: Sequence,
                       floor: float = 0.5) -> np.ndarray:
    """One IPF step on each measured set of ``refresh``, in order; returns new potentials.

    For a set ``S`` with pooled identity measurements ``ybar`` (counts; Problem's
    precision-weighted mean) and the start's marginal ``p_S``, the step adds
    ``log(t / p_S)`` into the first clique holding ``S`` (where the gradient of ``S`` goes),
    with ``t = max(ybar, floor) / sum(max(ybar, floor))``: the distribution becomes
    ``p(x) t(x_S) / p_S(x_S)``, whose marginal on ``S`` is ``t`` exactly and whose
    conditionals given ``x_S`` are unchanged. The floor (counts, > 0) keeps noisy negative or
    zero cells finite. Cells with ``p_S = 0`` (structural zeros, -inf throughout) stay as they
    are and ``t`` is normalised over the others. One calibration per set: post-processing of
    the measurements only. A set measured only through a query (no identity measurement) is
    left alone.
    """
    if not (isinstance(floor, (int, float)) and np.isfinite(floor) and floor > 0):
        raise InvalidArgumentError(f"floor must be a finite number > 0 (counts), got {floor!r}")
    order = {a: i for i, a in enumerate(problem.domain.attrs)}
    slope, target, _ = problem.identity_terms()
    theta = theta.copy()
    cliques = problem.split_cliques(theta)
    for attrs in refresh:
        canon = tuple(sorted(attrs, key=lambda a: order.get(a, -1)))
        if canon not in problem.groups:
            raise InvalidArgumentError(f"refresh set {tuple(attrs)} is not a measured set")
        g = problem.groups.index(canon)
        where = slice(problem.group_offsets[g], problem.group_offsets[g + 1])
        if not slope[where].any():
            continue
        p = oracle(theta)[where]
        live = p > 0
        t = np.where(live, np.maximum(target[where], floor), 0.0)
        t /= t.sum()
        shift = np.zeros_like(p)
        shift[live] = np.log(t[live]) - np.log(p[live])
        k = next(i for i, c in enumerate(problem.cliques) if set(canon) <= set(c))
        shape = tuple(problem.domain.shape[order[a]] if a in canon else 1
                      for a in problem.cliques[k])
        cliques[k] += shift.reshape(shape)   # a view: writes into theta
    return theta
