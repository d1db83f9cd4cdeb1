"""PrivPGD (Donhauser, Abad, Hulkund, Yang, ICML 2024): private particle gradient descent.

Measure (Alg. 1 step 2, one shot): a noisy record count (the sum of the smallest attribute's
noisy 1-way marginal, ``total_share`` of the budget) and every attribute pair of the workload
(default all 2-way marginals) with Gaussian noise, the rest of the budget split equally.
Everything after is post-processing (Lemma 3.2) and costs nothing:

1. *projection* (Sec. 3.2): each noisy marginal becomes a probability table on its grid.
   Default ``"consistent"``: the tables are first made to agree on every shared attribute
   (the inverse-variance consensus of the noisy 1-way margins, projected once and held fixed)
   and on the total, then projected in L2 onto the simplex, alternating 100 times
   (:mod:`mechanisms.consistency`); on adult-pgm at eps 2.5 this halves the 2-way error of the
   particles (separately projected tables pull the particles towards disagreeing 1-way
   marginals), and holding the consensus fixed (session 12) cut the covariance error from
   0.16 to 0.06 at 10k x 250 (session 11 re-pooled it from clipped tables, which kept the
   positive noise of far, empty cells: bench/results/privpgd.md). ``"simplex"``: each table alone, the
   Euclidean projection of (noisy counts / noisy total) onto the simplex; ``"clip"``: the
   paper's initialisation, clipping negatives and renormalising. The paper refines the
   clipped table by 1750 Adam steps on SW1 (eq. 5); we do not (see Departures).
2. *optimisation* (Alg. 3, eq. 7-8): m particles start uniform in [0, 1]^d (the embedding of
   eq. 4 puts value c of an attribute of size k at (c + 1/2) / k); each epoch visits every
   marginal once, in mini-batches of ``batch`` marginals; a step adds the gradient of
   SW2^2 over ``projections`` random directions per marginal (``dpcore.sliced_wasserstein``,
   C++) and takes one sparse Adam step in which each gradient entry is kept with probability
   ``keep`` (the paper drops 80%), then clips to [0, 1]. The learning rate starts at ``lr``
   and is multiplied by ``gamma`` every ``step_size`` epochs (PyTorch StepLR). The paper's
   schedule is 50 epochs of its 1000, i.e. 20 decays to 0.75^19 lr = 4e-4 at the end; the
   default ``step_size`` (None) keeps those 20 decays for any number of epochs,
   ``max(1, epochs // 20)``, the paper's 50 at 1000 epochs. A fixed 50 on a short run ends
   with a rate the particles jitter at (on adult-pgm, exact tables, 10k x 100 epochs: 2-way
   error 0.276 with step 50, 0.099 with step 5; bins are 0.01 wide).
3. *finalisation* (Alg. 3 line 8): each particle snaps to its nearest grid cell.

Privacy: the charges are ``GaussianEvent(sigma, 1)`` per measured marginal (add/remove
neighbours: one record changes one cell of a count marginal by 1, L2 sensitivity 1; AIM paper
Prop. 1, proofs/gaussian.py), through :meth:`dpcore.Curator.measure`, each charged before the
data is read, shares summing exactly to the budget with the calibration residue retired
(proofs/privpgd_budget.py).

Departures from the paper and its code, stated:

* Neighbours: the paper (Def. 2.1) and its code use *substitution* neighbours with n public
  (each marginal's noise calibrated to L2 sensitivity sqrt(2), the true n normalising the
  marginals). We use add/remove neighbours (L2 sensitivity 1, as every dpcore mechanism) and
  a noisy n. A substitution moves one record between two cells of each marginal, so the same
  sigma costs twice the zCDP under substitution: our rho-zCDP (add/remove) run is
  2rho-zCDP for substitution neighbours, and at the same (epsilon, delta) our sigma is the
  paper's / sqrt(2) (proofs/privpgd_budget.py checks the constant).
* Projection: the consistency step and simplex projection (or clipping) replace the SW1
  gradient descent of eq. 5, which is not implemented (its start, clipping, leaves the
  tables ~4x further from the truth in L1 than the consistent projection on adult-pgm at
  eps 2.5: bench/results/privpgd.md).
* Quantisation (eq. 6): the target is the projected table itself, matched through its quantile
  function (the limit of the paper's quantisation with m particles, without its sampling).
* The domain regulariser (Sec. 4.4, App. B) is :class:`ProtectedQuery`: its statistic is
  measured by :meth:`dpcore.Curator.measure_soft_count` (sensitivity 1 under add/remove,
  exact discrete Gaussian noise) and divided by the noisy count, where the paper divides by
  the public n; its default budget share, 6%, keeps App. B's split in zCDP: its (0.5, 2e-6)
  for the statistic is 6.3% of that plus its (2.0, 8e-6) for the marginals. The loss is eq. 7 with the regulariser's weight of the authors' code:
  SW2^2 + (lambda / m) R in our mean form (:class:`ProtectedQuery`).
"""
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from dpcore import _core
from dpcore.accounting.calibration import gaussian_sigma
from dpcore.errors import InvalidArgumentError

from .consistency import consistent_tables
from .consistency import project_simplex as _project_simplex
from .fem import MixtureModel
from .result import MechanismResult, RoundRecord, Timer

__all__ = ["PROJECTIONS", "ProtectedQuery", "privpgd", "project_simplex", "attribute_pairs"]

PROJECTIONS = ("consistent", "simplex", "clip")

# App. B, eq. 12: R(Z) = 0.01 / (0.0001 + (q(Z) - q_hat)^2)
_REG_SCALE, _REG_OFFSET = 0.01, 1e-4


@dataclass(frozen=True)
class ProtectedQuery:
    """A statistic the synthetic data should *not* reproduce (Sec. 4.4, App. B): the smoothed
    threshold query q(Z) = mean over particles of sigmoid(sharpness (<theta, Z_i> - threshold))
    in the embedding space (a record x sits at ((x_a + 1/2) / k_a)_a, eq. 4), with
    theta_a = ``weights[a]`` (attributes not named: 0). The run measures the data's value with
    ``share`` of the budget (:meth:`dpcore.Curator.measure_soft_count`, then divided by the
    noisy count) and the descent adds the paper's lambda = ``strength`` (1e-2 to 10 in its
    Fig. 3) times R(Z) = 0.01 / (1e-4 + (q(Z) - q_hat)^2) (eq. 12), which pushes q on the
    particles away from the estimate q_hat. ``sharpness`` is the paper's s = 5. Scale, as in
    the authors' code: its SW2^2 gradient is that of the particles' *sum* (not divided by m)
    while R's is of q, a mean; so in eq. 7's per-particle mean form, which our kernel
    computes, the regulariser's weight is lambda / m, and a lambda means what it means in
    Fig. 3 (lambda R unscaled would swamp the marginals: at m = 10k, lambda = 0.01 tripled the
    2-way error)."""
    weights: Mapping[str, float]
    threshold: float
    strength: float = 1.0
    sharpness: float = 5.0
    share: float = 0.06

    @classmethod
    def of(cls, spec) -> ProtectedQuery:
        """``spec`` as a ProtectedQuery: itself, or a mapping of its fields (a JSON file's)."""
        if isinstance(spec, cls):
            return spec
        if not isinstance(spec, Mapping):
            raise InvalidArgumentError(f"protect must be a ProtectedQuery or a mapping of its "
                                       f"fields, got {type(spec).__name__}")
        fields = ("weights", "threshold", "strength", "sharpness", "share")
        unknown = sorted(set(map(str, spec)) - set(fields))
        if unknown or "weights" not in spec or "threshold" not in spec:
            raise InvalidArgumentError(f"protect takes the keys {', '.join(fields)} (weights and "
                                       f"threshold required), got {sorted(map(str, spec))}")
        return cls(**{k: spec[k] for k in fields if k in spec})

    def to_dict(self) -> dict:
        """Plain JSON (the ledger's run opening): numbers as Python floats."""
        plain = {k: float(v) for k, v in asdict(self).items() if k != "weights"}
        return {"weights": {str(a): float(w) for a, w in self.weights.items()}, **plain}

    def embedded_scores(self, domain) -> dict:
        """Per-code scores theta_a (c + 1/2) / k_a of the named attributes (the curator's form)."""
        return {a: w * (np.arange(domain[a]) + 0.5) / domain[a] for a, w in self.weights.items()}

    def value(self, x: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """q on particles ``x`` (m x d) and the per-particle sigmoids, for ``theta`` over the
        columns."""
        from scipy.special import expit
        u = np.zeros(len(x))
        for c in np.flatnonzero(theta):
            u += theta[c] * x[:, c]
        sig = expit(self.sharpness * (u - self.threshold))
        return float(sig.mean()) if len(x) else 0.0, sig


def attribute_pairs(workload) -> list[tuple[str, str]]:
    """Every attribute pair inside some workload marginal, in first-seen order (PrivPGD fits
    2-D marginals; a 3-way workload marginal contributes its three pairs)."""
    pairs: dict[tuple[str, str], None] = {}
    for clique, weight in workload:
        if weight > 0:
            for pair in itertools.combinations(clique, 2):
                pairs[pair] = None
    return list(pairs)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """The Euclidean projection of ``v`` (flattened) onto the probability simplex."""
    return _project_simplex(np.asarray(v, dtype=np.float64).ravel(), 1.0)


def _project(noisy: np.ndarray, total: float, method: str) -> np.ndarray:
    if method == "simplex":
        return project_simplex(noisy / total)
    clipped = np.maximum(noisy, 0.0)
    if clipped.sum() <= 0:      # every cell noised below zero: nothing is known, be uniform
        return np.full(noisy.size, 1.0 / noisy.size)
    return clipped / clipped.sum()


def privpgd(curator, *, workload, particles: int = 100_000, epochs: int = 1000, lr: float = 0.1,
            projections: int = 10, batch: int = 5, keep: float = 0.2, step_size: int | None = None,
            gamma: float = 0.75, total_share: float = 0.01, projection: str = "consistent",
            protect=None, synthetic_rows: int | None = None, seed=None, callback=None,
            progress=None, threads: int = 0, discrete: bool | None = None) -> MechanismResult:
    """Run PrivPGD on ``curator`` (module docstring), spending its whole remaining budget.

    ``workload``: a workload spec ("all-2way") or (clique, weight) pairs; its attribute pairs
    are measured. ``protect``: an optional :class:`ProtectedQuery` (or a mapping of its
    fields), measured after the count with its share of the budget (``mechanisms.plan.plan_privpgd`` checks the options before any charge). ``progress``: a callable ``(epoch, epochs, loss)`` called after
    every epoch (the synthesizer drives a tqdm bar with it). ``discrete`` goes to
    :meth:`Curator.measure` (None: the exact discrete Gaussian for counts). Returns the snapped particles as a
    :class:`mechanisms.fem.MixtureModel` (uniform over the m synthetic records); the synthetic
    table has ``synthetic_rows`` rows (default: the noisy total): each particle
    ``rows // m`` times and a random subset of the rest, in random order.
    """
    from .plan import plan_privpgd
    timer = Timer()
    domain = curator.domain
    rho = Fraction(curator.privacy_filter.remaining)
    if rho <= 0:
        raise InvalidArgumentError(f"the privacy filter has no budget left, remaining = {rho}")
    # every option, the particles' memory and the work, checked before the first charge
    plan = plan_privpgd(domain, rho, workload=workload, particles=particles, epochs=epochs,
                        lr=lr, projections=projections, batch=batch, keep=keep,
                        step_size=step_size, gamma=gamma, total_share=total_share,
                        projection=projection, protect=protect, rows=synthetic_rows,
                        seed=None)
    protect = plan.options["protect"]
    if protect is not None and not curator.holds_records:
        raise InvalidArgumentError("protect measures a statistic of the records, which this "
                                   "curator does not hold (the stream and Dask engines count "
                                   "marginals only): use the in-memory engine")
    pairs = attribute_pairs(plan.options["workload"])
    rng = np.random.default_rng(seed)
    records: list[RoundRecord] = []

    def log(clique, sigma, spent, start, kind="measure"):
        record = RoundRecord(len(records), kind, tuple(clique), sigma, None, 1.0, 0,
                             Fraction(spent), time.perf_counter() - start)
        records.append(record)
        if callback is not None:
            callback(record)

    # --- measure: the total, then every pair, each an exact share of what is left
    start = time.perf_counter()
    smallest = min(domain.attrs, key=lambda a: domain[a])
    sigma = gaussian_sigma(rho * Fraction(total_share))
    # before the first charge: the soft count's noise (the planner checked it can be had)
    protect_sigma = None if protect is None else gaussian_sigma(rho * Fraction(protect.share))
    before = curator.privacy_filter.spent
    total = max(1.0, float(np.sum(curator.measure((smallest,), sigma, discrete=discrete))))
    log((smallest,), sigma, curator.privacy_filter.spent - before, start)
    pairs_budget = rho - rho * Fraction(total_share)
    target = None
    if protect is not None:     # the protected statistic's estimate, q_hat (App. B)
        start = time.perf_counter()
        before = curator.privacy_filter.spent
        noisy = curator.measure_soft_count(protect.embedded_scores(domain), protect.threshold,
                                           protect_sigma, sharpness=protect.sharpness)
        target = min(1.0, max(0.0, noisy / total))
        log(tuple(protect.weights), protect_sigma, curator.privacy_filter.spent - before, start,
            kind="soft_count")
        pairs_budget -= rho * Fraction(protect.share)
    end = Fraction(curator.privacy_filter.spent) + pairs_budget
    noisy, sigmas = [], []
    for i, pair in enumerate(pairs):
        start = time.perf_counter()
        left = end - Fraction(curator.privacy_filter.spent)
        sigma = gaussian_sigma(left / (len(pairs) - i))
        before = curator.privacy_filter.spent
        noisy.append(curator.measure(pair, sigma, discrete=discrete))
        sigmas.append(sigma)
        log(pair, sigma, curator.privacy_filter.spent - before, start)
    retired = curator.retire("PrivPGD calibration residue")
    timer.add("measure", sum(r.seconds for r in records))

    # --- post-processing: project, descend, snap
    start = time.perf_counter()
    index = {a: k for k, a in enumerate(domain.attrs)}
    cols = [(index[a], index[b]) for a, b in pairs]
    if projection == "consistent":
        tables = consistent_tables([y.reshape(domain[a], domain[b])
                                    for (a, b), y in zip(pairs, noisy)], cols, total, sigmas)
    else:
        tables = [_project(y, total, projection).reshape(domain[a], domain[b])
                  for (a, b), y in zip(pairs, noisy)]
    timer.add("project", time.perf_counter() - start)

    start = time.perf_counter()
    regulariser = None
    if protect is not None:
        theta = np.array([float(protect.weights.get(a, 0.0)) for a in domain.attrs])
        regulariser = (protect, theta, target)
    x, losses = descend(tables, cols, len(domain), rng, particles=particles, epochs=epochs,
                        lr=lr, projections=projections, batch=batch, keep=keep,
                        step_size=plan.options["step_size"], gamma=gamma, progress=progress,
                        threads=threads, regulariser=regulariser)
    timer.add("optimise", time.perf_counter() - start)

    start = time.perf_counter()
    codes = _core.snap_to_grid(x, [domain[a] for a in domain.attrs])
    model = MixtureModel(domain, codes, total)
    from dpcore import Dataset
    rows = synthetic_rows if synthetic_rows is not None else max(1, int(round(total)))
    # every particle rows // m times, then a random subset: less variance than i.i.d. draws
    m = len(codes)
    pick = np.concatenate([np.tile(np.arange(m), rows // m),
                           rng.choice(m, size=rows % m, replace=False)])
    pick = pick[rng.permutation(rows)]
    synthetic = Dataset(codes[pick], domain)
    timer.add("generate", time.perf_counter() - start)
    extras = {"pairs": tuple(pairs), "total": total, "retired_rho": retired,
              "losses": tuple(losses), "tables": tuple(tables)}
    if protect is not None:     # q_hat, and q on the snapped records (cell centres)
        centres = (codes + 0.5) / np.array(domain.shape)
        extras["protected"] = {"estimate": target,
                               "synthetic": protect.value(centres, regulariser[1])[0]}
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records),
                           timer.done(), extras)


def descend(tables, cols, d, rng, *, particles, epochs, lr, projections, batch, keep,
            step_size, gamma, progress=None, threads=0, regulariser=None):
    """The optimisation step (Alg. 3 lines 2-7), post-processing only: ``particles`` points
    start uniform in [0, 1]^d and descend the sum of SW2^2 to the 2-D ``tables`` (probability
    tables on the grids of columns ``cols``), plus lambda R of ``regulariser`` =
    (ProtectedQuery, theta over the d columns, q_hat) at every step (eq. 7). Returns
    ``(x, losses)``, x in Fortran order. Separate from :func:`privpgd` so that diagnostics
    can feed it any tables (bench/)."""
    x = np.asfortranarray(rng.random((int(particles), int(d))))
    grad, avg, sq = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    adam_seed = int(rng.integers(2 ** 63))
    step, losses = 0, []
    for epoch in range(int(epochs)):
        rate = float(lr) * float(gamma) ** (epoch // int(step_size))
        order = rng.permutation(len(tables))
        loss = 0.0
        for b in range(0, len(tables), int(batch)):
            chosen = order[b:b + int(batch)]
            directions = rng.normal(size=(len(chosen), int(projections), 2))
            directions /= np.linalg.norm(directions, axis=2, keepdims=True)
            loss += _core.sliced_wasserstein(x, [cols[t] for t in chosen],
                                             [tables[t] for t in chosen], directions,
                                             grad=grad, threads=threads)
            step += 1
            touched = {c for t in chosen for c in cols[t]}
            if regulariser is not None:
                loss += add_regulariser_gradient(x, grad, *regulariser)
                touched.update(np.flatnonzero(regulariser[1]).tolist())
            touched = sorted(touched)
            # eps 1e-10: the paper's code scales the loss by 100 with Adam's eps 1e-8
            _core.particle_adam_step(x, grad, avg, sq, touched, step, learning_rate=rate,
                                     eps=1e-10, keep=float(keep), seed=adam_seed,
                                     threads=threads)
        losses.append(loss)
        if progress is not None:
            progress(epoch + 1, int(epochs), loss)
    return x, losses


def add_regulariser_gradient(x, grad, protect, theta, target) -> float:
    """Adds the gradient of (lambda / m) R(x) (eq. 12; the weight the authors' code gives it,
    see :class:`ProtectedQuery`) to ``grad`` in theta's columns and returns (lambda / m) R.
    R = a / (c + D^2), D = q(x) - q_hat, q the mean of sigmoid(s (<theta, x_i> - b)):
    dR/dx_i = -2 a D / (c + D^2)^2 * s sigma_i (1 - sigma_i) / m * theta."""
    m = len(x)
    q, sig = protect.value(x, theta)
    gap = q - target
    scale = _REG_OFFSET + gap * gap
    weight = protect.strength / m
    factor = -weight * _REG_SCALE * 2.0 * gap / (scale * scale) * protect.sharpness / m
    g = factor * sig * (1.0 - sig)
    for c in np.flatnonzero(theta):
        grad[:, c] += theta[c] * g
    return weight * _REG_SCALE / scale


def check_protect(protect, domain, total_share: float):
    """``protect`` (None, a ProtectedQuery or a mapping of its fields) checked against the
    domain: named attributes, finite weights (one non-zero), ranges, and a share that leaves
    budget for the pairs."""
    if protect is None:
        return None
    protect = ProtectedQuery.of(protect)
    weights = protect.weights
    if not isinstance(weights, Mapping) or not weights:
        raise InvalidArgumentError("protect.weights must map attribute names to numbers")
    unknown = [a for a in weights if a not in domain]
    if unknown:
        raise InvalidArgumentError(f"protect.weights names attributes not in the schema: {unknown[:5]}")

    def number(name, value, low, high, open_low=True):
        try:        # a huge int (a JSON file's 1e400 written out) overflows float()
            real = (float(value) if not isinstance(value, bool) and isinstance(
                value, (int, float, np.floating, np.integer)) else math.nan)
        except OverflowError:
            real = math.nan
        ok = math.isfinite(real) and (low < real if open_low else low <= real) and real <= high
        if not ok:
            raise InvalidArgumentError(f"protect.{name} must be a number in {'(' if open_low else '['}"
                                       f"{low:g}, {high:g}], got {repr(value)[:40]}")
        return real

    clean = {a: number(f"weights[{a!r}]", w, -2.0 ** 30, 2.0 ** 30, open_low=False)
             for a, w in weights.items()}
    if not any(clean.values()):
        raise InvalidArgumentError("protect.weights must have a non-zero weight")
    share = number("share", protect.share, 0.0, 1.0)
    if share + total_share >= 1.0:
        raise InvalidArgumentError(f"protect.share + total_share must leave budget for the pairs "
                                   f"(< 1), got {share} + {total_share}")
    return ProtectedQuery(clean, number("threshold", protect.threshold, -2.0 ** 30, 2.0 ** 30, False),
                          number("strength", protect.strength, 0.0, 1e6, open_low=False),
                          number("sharpness", protect.sharpness, 0.0, 2.0 ** 20), share)


def check_options(particles, epochs, lr, projections, batch, keep, step_size, gamma,
                  total_share, projection) -> dict:
    """The options, validated (types and ranges; sizes are the planner's job)."""
    def integer(name, value, low, high):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
                low <= int(value) <= high):
            raise InvalidArgumentError(f"{name} must be an int in [{low}, {high}], got {value!r}")
        return int(value)

    def real(name, value, low, high, closed_high=False):
        ok = (not isinstance(value, bool) and isinstance(value, (int, float, np.floating))
              and math.isfinite(float(value)) and low < float(value)
              and (float(value) <= high if closed_high else float(value) < high))
        if not ok:
            bracket = "]" if closed_high else ")"
            raise InvalidArgumentError(f"{name} must be a number in ({low}, {high}{bracket}, "
                                       f"got {value!r}")
        return float(value)

    if projection not in PROJECTIONS:
        raise InvalidArgumentError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    epochs = integer("epochs", epochs, 1, 10 ** 6)
    if step_size is None:       # the paper's 20 decays, whatever the number of epochs
        step_size = max(1, epochs // 20)
    return {"particles": integer("particles", particles, 1, 2 ** 32 - 1),
            "epochs": epochs,
            "lr": real("lr", lr, 0.0, 10.0),
            "projections": integer("projections", projections, 1, 10 ** 4),
            "batch": integer("batch", batch, 1, 10 ** 6),
            "keep": real("keep", keep, 0.0, 1.0, closed_high=True),
            "step_size": integer("step_size", step_size, 1, 10 ** 6),
            "gamma": real("gamma", gamma, 0.0, 1.0, closed_high=True),
            "total_share": real("total_share", total_share, 0.0, 1.0),
            "projection": projection}
