"""Adaptive Measurements (Liu, Vietri & Wu, "Iterative Methods for Private Synthetic Data:
Unifying Framework and New Methods", Algorithm 1) on the curator, with explicit histograms.

Loop. T rounds; in round t, k = ``per_round`` whole workload marginals are selected one after
another (distinct within the round) by the exponential mechanism against the previous iterate
p_{t-1}, each is measured with Gaussian noise, and the family's update turns every measurement
so far into p_t. The output is the last iterate p_T, as the paper runs MWEM and PEP (Sec. 6.1).

Marginal trick (paper App. A.1). A selection picks a whole marginal r with quality
q_r = ||M_r(D) - n^ M_r(p_{t-1})||_1 (``Curator.select``), and the measurement releases every
cell of M_r(D) (``Curator.measure``). The paper's neighbours substitute a record, which moves
two cells: L2 sensitivity sqrt(2) (sqrt(2)/n normalised). dpcore's neighbours add or remove one
record, which moves exactly one cell of a count marginal by 1: the measurement's L2 sensitivity
is 1 and the L1 quality's sensitivity is 1 (triangle inequality), as the curator charges.

Budget (Theorem 1's proof with k queries a round). With eps0 = sqrt(2 rho / (k T (alpha^2 +
(1-alpha)^2))), each selection is the paper's exp(alpha eps0 n |q(P) - q(D)|) on normalised
scores of sensitivity 1/n, i.e. dpcore's exp(epsilon q / (2 Delta)) with epsilon = 2 alpha eps0
on counts, Delta = 1; each measurement has sigma = 1 / ((1-alpha) eps0) in counts. The values
come from ``dpcore.accounting.calibration.adaptive_measurements_round``, whose charged costs
sum to at most the budget (proofs/adaptive_budget.py); the rounding residue is retired, so the
ledger spends exactly the filter's remaining budget.

Record count. The papers treat n as public; under add/remove-one neighbours it is not. We use
n^, the inverse-variance mean of the measured marginals' sums (a marginal of c cells measured
m times: its mean's sum has variance c sigma^2 / m), at least 1: post-processing. Before the
first measurement there is no n^, so round 1 compares against 0: every q_r equals the record
count and the first choice is uniform whatever the data (it spends its share and learns
nothing; a fraction alpha^2 / ((alpha^2 + (1-alpha)^2) T) of the budget).

Families. A family owns its representation of the synthetic distribution D_t and answers four
calls: ``init(domain, cliques, rounds, rng)`` gives D_0, ``answers(state, domain, cliques)`` the
normalised marginals of D_t (flat, the domain's cell order), ``update(state, domain, targets,
new, rng)`` gives D_t from every measurement so far, and ``output(state, domain, total)`` the
released model. None of them reads data: everything they see is noisy and public. The
explicit-histogram families here (MWEM, PEP) hold a probability vector over the whole domain, so
the domain is capped at :data:`HISTOGRAM_CELL_CAP` cells, refused before any charge; the
product-mixture families (RAP-softmax, ``mechanisms.rap``; GEM, ``mechanisms.gem``) hold B
product distributions and scale to any domain whose workload marginals fit in memory.
"""
from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
from threadpoolctl import threadpool_limits

from dpcore.accounting.calibration import adaptive_measurements_round
from dpcore.errors import DpcoreTypeError, InvalidArgumentError

from .result import MechanismResult, RoundRecord, Timer, check_output, synthesize
from .workload import make_workload

__all__ = ["HISTOGRAM_CELL_CAP", "HistogramFamily", "MWEMUpdate", "PEPUpdate",
           "adaptive_measurements", "check_histogram_domain"]

#: Largest domain an explicit histogram may cover: 2^25 cells is 256 MB of float64, and each
#: round sums the whole array several times (the issue's "infeasible past ~10^7 cells").
HISTOGRAM_CELL_CAP = 2 ** 25
#: PEP's clipping of answers into (0, 1), from the authors' code (iterative-dp pep.py): the
#: projection step's log-ratio needs both the target and the current answer strictly inside.
PEP_CLIP = 1e-6
# PEP steps whose ratio is below this recompute the tracked marginals exactly (PEPUpdate).
_EXACT_BELOW = 1e-2


def check_histogram_domain(domain) -> int:
    """The domain's cell count, or InvalidArgumentError when it exceeds the histogram cap."""
    cells = domain.size()
    if cells > HISTOGRAM_CELL_CAP:
        raise InvalidArgumentError(
            f"domain has {cells} cells, above the explicit-histogram cap {HISTOGRAM_CELL_CAP} "
            f"(2^25); use a smaller schema or a mechanism with a factored model (aim, mst)")
    return cells


# ------------------------------------------------------------------ histogram kernels
def _axes(domain, clique) -> tuple[int, ...]:
    return tuple(domain.attrs.index(a) for a in clique)


def marginal(p: np.ndarray, domain, clique) -> np.ndarray:
    """p's marginal on ``clique`` (canonical order), shaped like the clique's sub-domain."""
    return _sum_to(p, sorted(_axes(domain, clique)))


def _sum_to(table: np.ndarray, keep) -> np.ndarray:
    """``table`` summed over every axis not in ``keep`` (ascending). einsum, because numpy's
    ``sum`` over an axis whose inner block is a few cells wide walks the array with a short
    stride (Adult's 7-attribute histogram: 0.9 ms over its 16-value axis against 0.06 ms for the
    whole sum; einsum 0.2 ms)."""
    keep = list(keep)
    if len(keep) == table.ndim:   # einsum would return a view; callers own their marginals
        return table.copy()
    return np.einsum(table, list(range(table.ndim)), keep)


def _lattice_marginal(p: np.ndarray, domain, clique, tables: dict) -> np.ndarray:
    """p's marginal on ``clique``, summed from the marginal on ``clique`` plus the narrowest
    missing attribute (recursively, memoised in ``tables``): the workload's marginals share
    those parents, so a round's selection sums the full histogram over one axis a few times
    instead of over d - k axes for every candidate (MWEM, all 3-way marginals of 7 attributes:
    2.6 ms a round against 18 ms for one reduction per marginal). Equal to :func:`marginal`
    up to the order of float additions."""
    if "narrowest" not in tables:
        tables["narrowest"] = sorted(range(p.ndim), key=lambda i: (p.shape[i], i))
    axes = tuple(sorted(_axes(domain, clique)))
    if len(axes) == p.ndim:
        return p.copy()
    return _lattice(p, axes, tables["narrowest"], tables)


def _lattice(p: np.ndarray, axes: tuple, narrowest: list, tables: dict) -> np.ndarray:
    if len(axes) == p.ndim:
        return p
    if axes not in tables:
        extra = next(i for i in narrowest if i not in axes)
        parent = tuple(sorted(axes + (extra,)))
        tables[axes] = _sum_to(_lattice(p, parent, narrowest, tables),
                               [j for j, i in enumerate(parent) if i != extra])
    return tables[axes]


def _broadcast(values: np.ndarray, domain, clique) -> np.ndarray:
    """A clique table reshaped to broadcast against the full histogram."""
    shape = [1] * len(domain)
    for axis in _axes(domain, clique):
        shape[axis] = domain.shape[axis]
    return values.reshape(shape)


class HistogramFamily:
    """An explicit histogram p over the whole domain, D_0 uniform; subclasses give ``update``
    (p, domain, targets, new, rng) -> p. The output is p as a one-clique model."""

    name = ""
    #: the domain must fit an explicit histogram (checked before any charge)
    histogram = True

    def init(self, domain, cliques, rounds, rng) -> np.ndarray:
        return np.full(domain.shape, 1.0 / domain.size())

    def answers(self, p, domain, cliques) -> list[np.ndarray]:
        tables: dict = {}     # shared parents of the lattice, for this iterate only
        return [_lattice_marginal(p, domain, tuple(c), tables).ravel() for c in cliques]

    def output(self, p, domain, total):
        return histogram_model(domain, p, total)


class MWEMUpdate(HistogramFamily):
    """MWEM's multiplicative-weights update (Hardt, Ligett & McSherry 2012), the paper's
    ℒ^MWEM (Sec. 3, App. A.2) with the + sign of the reading notes' erratum.

    One step on a measured marginal r with normalised answers a_r multiplies every cell query
    of r at once: p(x) <- p(x) exp((a_r[x_r] - p_r[x_r]) / 2), then normalises. Past
    measurements are reused as the paper runs MWEM (pmw-pub pseudocode, App. D.6): after the
    round's new marginals, each earlier marginal whose current L1 error is at least half the
    largest new error gets one more step, in a random order (``rng``: public randomness).

    ``passes`` > 1 repeats that round of steps (threshold recomputed on the current iterate),
    the iterated update Hardt, Ligett & McSherry recommend in practice. It is post-processing
    of the same measurements, so it costs no budget. With whole-marginal measurements one pass
    is timid: a cell far from its measurement moves by e^{|a - p| / 2} a step, so at T = 50 on
    Adult (7 attributes, all 3-way) the selection kept re-picking 3 marginals and the error
    stayed at 1.01 (uniform: 1.39); 10 passes measured 11 marginals and reached 0.146
    (bench/results/adaptive.md). The default stays the paper's one pass.
    """

    name = "mwem"

    def __init__(self, passes: int = 1):
        if isinstance(passes, bool) or not isinstance(passes, int) or passes < 1:
            raise InvalidArgumentError(f"passes must be an int >= 1, got {passes!r}")
        self.passes = passes

    def update(self, p, domain, answers, new, rng) -> np.ndarray:
        p = p.copy()   # stepped in place below; the caller's iterate stays as it was
        for _ in range(self.passes):
            p = self._round(p, domain, answers, new, rng)
        return p

    @staticmethod
    def _round(p, domain, answers, new, rng) -> np.ndarray:
        tables: dict = {}   # p's marginals before the steps, shared through the lattice

        def error(c):
            return float(np.abs(answers[c] - _lattice_marginal(p, domain, c, tables)).sum())

        threshold = 0.5 * max(error(c) for c in new)
        past = [c for c in answers if c not in new and error(c) >= threshold]
        order = list(new) + [past[i] for i in rng.permutation(len(past))]
        for c in order:
            current = marginal(p, domain, c)
            exponent = (answers[c] - current) / 2
            # Shifted by its maximum (the step is normalised anyway): at a tiny epsilon the
            # noisy answers are huge and exp would overflow to inf / nan.
            step = np.exp(exponent - exponent.max())
            # sum(p * step) from the marginal: one pass over the histogram a step, not three
            total = float((current * step).sum())
            if total > 0 and np.isfinite(total):   # else every cell underflowed: skip the step
                p *= _broadcast(step / total, domain, c)
        return p


class PEPUpdate(HistogramFamily):
    """PEP's Exponential Weights Projection (the paper's Algorithm 4), warm-started.

    Each step takes the cell query with the largest |a_i - q_i(p)| over every measured marginal
    (stopping when it is <= ``tolerance``, the paper's gamma = 0) and projects onto it exactly:
    p(x) <- p(x) exp(-lambda q_i(x)) with -lambda = ln(a (1 - q) / ((1 - a) q)), which sets
    q_i(p) = a. a and q are clipped to [PEP_CLIP, 1 - PEP_CLIP] (the authors' code: the paper
    needs both in (0, 1) and does not say how). At most ``max_steps`` steps a round (the paper's
    T_max = 25, Table 1).

    Warm start: the appendix restarts each round from the uniform distribution; the authors'
    code and we continue from p_{t-1}. p_{t-1} = U exp(sum_i lambda_i q_i) already lies in the
    exponential family of the round's constraints, so iterative projection from it converges to
    the same maximum-entropy point (Csiszar's I-projection), and with a step cap it keeps the
    earlier rounds' work instead of redoing it.

    Steps are cheap: after a step on cell y of marginal r only the slice x_r = y changes, so
    every measured marginal is updated from that slice's sums (N / |dom r| cells), not from the
    whole histogram. That update subtracts the slice's old mass; when the step shrinks the
    slice by more than a factor 1/_EXACT_BELOW the difference would lose digits, so those steps
    recompute the marginals from the whole histogram.
    """

    name = "pep"

    def __init__(self, max_steps: int = 25, tolerance: float = 0.0):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise InvalidArgumentError(f"max_steps must be an int >= 1, got {max_steps!r}")
        if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 1):
            raise InvalidArgumentError(f"tolerance must be a number in [0, 1), got {tolerance!r}")
        self.max_steps, self.tolerance = max_steps, float(tolerance)
        self.recomputed = 0   # steps that took the exact path (diagnostics)

    def update(self, p, domain, answers, new=(), rng=None) -> np.ndarray:
        cliques = list(answers)
        w = p.copy()
        total = 1.0   # w's sum, tracked instead of renormalising the whole histogram each step
        margs = {c: marginal(w, domain, c) for c in cliques}
        targets = {c: np.asarray(answers[c]).reshape(margs[c].shape) for c in cliques}
        positions = {c: _axes(domain, c) for c in cliques}
        for _ in range(self.max_steps):
            worst, cell, clique = -1.0, None, None
            for c in cliques:
                err = np.abs(targets[c] - margs[c] / total)
                i = int(np.argmax(err))
                if err.flat[i] > worst:
                    worst, cell, clique = float(err.flat[i]), np.unravel_index(i, err.shape), c
            if worst <= self.tolerance:
                break
            a = float(np.clip(targets[clique][cell], PEP_CLIP, 1 - PEP_CLIP))
            q = float(np.clip(margs[clique][cell] / total, PEP_CLIP, 1 - PEP_CLIP))
            ratio = a * (1 - q) / ((1 - a) * q)
            fixed = dict(zip(positions[clique], cell))
            where = tuple(fixed.get(i, slice(None)) for i in range(w.ndim))
            if ratio < _EXACT_BELOW:
                # Shrinking a slice by a large factor leaves the rest of each marginal as a
                # difference of near-equal numbers: recompute exactly instead.
                w[where] *= ratio
                total = float(w.sum())
                margs = {c: marginal(w, domain, c) for c in cliques}
                self.recomputed += 1
                continue
            part = w[where]                           # a view over the free axes
            free = [i for i in range(w.ndim) if i not in fixed]
            for c in cliques:
                keep = [j for j, i in enumerate(free) if i in positions[c]]
                sums = part.sum(axis=tuple(j for j in range(len(free)) if j not in keep))
                index = tuple(fixed.get(i, slice(None)) for i in positions[c])
                margs[c][index] += (ratio - 1) * sums
            total += (ratio - 1) * float(part.sum())
            w[where] *= ratio
        return w / w.sum()


# ------------------------------------------------------------------ the loop
class _Answers:
    """The measurements so far: per marginal, the mean of its noisy counts and how many."""

    def __init__(self):
        self.sums: dict[tuple, np.ndarray] = {}
        self.times: dict[tuple, int] = {}

    def add(self, clique, counts) -> None:
        self.sums[clique] = self.sums.get(clique, 0) + np.asarray(counts, dtype=np.float64)
        self.times[clique] = self.times.get(clique, 0) + 1

    def total(self) -> float:
        """n^: inverse-variance mean of the marginals' sums (variance c sigma^2 / m), >= 1."""
        weights = {c: self.times[c] / s.size for c, s in self.sums.items()}
        mean = sum(weights[c] * float(s.sum()) / self.times[c] for c, s in self.sums.items())
        return max(1.0, mean / sum(weights.values()))

    def normalised(self, total: float) -> dict:
        return {c: s / (self.times[c] * total) for c, s in self.sums.items()}


def adaptive_measurements(curator, workload, family, *, rounds: int = 50, per_round: int = 1,
                          alpha: float = 0.5, synthetic_rows: int | None = None,
                          sample_method: str = "round", seed=None, callback=None,
                          discrete: bool | None = None) -> MechanismResult:
    """Run Algorithm 1 with ``family`` (``MWEMUpdate()``, ``PEPUpdate()``, ``RAPSoftmax()``,
    ``GEM()``) for ``rounds`` rounds of ``per_round`` selections and measurements, spending the
    curator filter's whole remaining budget (module docstring). The candidates are the
    workload's marginals of positive weight; the paper's selection is unweighted, and so is
    ours. ``seed`` drives the family's public randomness and the synthetic sample;
    ``discrete`` goes to :meth:`Curator.measure`.
    """
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, sample_method, seed)
    if not all(callable(getattr(family, f, None)) for f in ("init", "answers", "update", "output")) \
            or not isinstance(getattr(family, "name", None), str):
        raise DpcoreTypeError(f"family must be an Adaptive Measurements family such as "
                              f"MWEMUpdate() or PEPUpdate(), got {type(family).__name__}")
    if getattr(family, "histogram", False):
        check_histogram_domain(domain)
    work = make_workload(domain, workload)
    if not work:
        raise InvalidArgumentError("workload must name at least one marginal, got an empty "
                                   "workload")
    cliques = list(dict.fromkeys(c for c, weight in work if weight > 0))
    if isinstance(per_round, bool) or not isinstance(per_round, int) or not (
            1 <= per_round <= len(cliques)):
        raise InvalidArgumentError(f"per_round must be an int in [1, {len(cliques)}] (the "
                                   f"workload's marginals), got {per_round!r}")
    remaining = Fraction(curator.privacy_filter.remaining)
    if remaining <= 0:
        raise InvalidArgumentError("the privacy filter has no budget left, remaining = 0")
    epsilon, sigma = adaptive_measurements_round(remaining, rounds, per_round, alpha)
    rng = np.random.default_rng(seed)
    # The families' matrix products are small (a few million multiply-adds): one BLAS thread
    # beats a pool that synchronises per call (20-40x measured for RAP-softmax on 2 cores).
    with threadpool_limits(limits=1, user_api="blas"):
        return _loop(curator, family, work, cliques, rounds, per_round, epsilon, sigma,
                     synthetic_rows, sample_method, seed, rng, callback, discrete, timer)


def _loop(curator, family, work, cliques, rounds, per_round, epsilon, sigma, synthetic_rows,
          sample_method, seed, rng, callback, discrete, timer) -> MechanismResult:
    domain = curator.domain
    state = family.init(domain, cliques, rounds, rng)
    answers = _Answers()
    records: list[RoundRecord] = []
    total = None
    for t in range(rounds):
        new = []
        # D_{t-1}'s answers, once a round: the round's k selections all compare against it
        current = None if total is None else dict(zip(cliques, family.answers(state, domain,
                                                                              cliques)))
        for _ in range(per_round):
            start = time.perf_counter()
            pool = [c for c in cliques if c not in new]
            if current is None:
                refs = [np.zeros(domain.size(c)) for c in pool]
            else:
                refs = [total * current[c] for c in pool]
            before = curator.privacy_filter.spent
            chosen = pool[curator.select(pool, refs, epsilon)]
            timer.add("select", time.perf_counter() - start)
            t_measure = time.perf_counter()
            answers.add(chosen, curator.measure(chosen, sigma, discrete=discrete))
            new.append(chosen)
            timer.add("measure", time.perf_counter() - t_measure)
            record = RoundRecord(t, "select+measure", chosen, sigma, epsilon, 1.0, len(pool),
                                 Fraction(curator.privacy_filter.spent - before),
                                 time.perf_counter() - start)
            records.append(record)
            if callback is not None:
                callback(record)
        t_update = time.perf_counter()
        total = answers.total()
        targets = {c: a.reshape(domain.project(c).shape)
                   for c, a in answers.normalised(total).items()}
        state = family.update(state, domain, targets, new, rng)
        timer.add("estimate", time.perf_counter() - t_update)
    retired = curator.retire(f"Adaptive Measurements ({family.name}) calibration residue")
    start = time.perf_counter()
    model = family.output(state, domain, total)
    synthetic = synthesize(model, synthetic_rows, sample_method, seed)
    timer.add("generate", time.perf_counter() - start)
    extras = {"workload": work, "retired_rho": retired, "family": family.name, "total": total}
    if getattr(family, "histogram", False):
        extras["histogram"] = state
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records),
                           timer.done(), extras)


def histogram_model(domain, p: np.ndarray, total: float):
    """The histogram as a one-clique GraphicalModel (log-potential log p), so it samples,
    projects and saves like every other dpcore model."""
    from dpcore.factor import Factor
    from dpcore.inference import GraphicalModel
    logp = np.log(np.maximum(p, np.finfo(np.float64).tiny))
    return GraphicalModel(domain, [domain.attrs], [Factor(domain, logp)], total)
