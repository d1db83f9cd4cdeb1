"""FEM: Follow-the-perturbed-leader with the Exponential Mechanism (Vietri, Tian, Bun, Steinke,
Wu, ICML 2020, Algorithms 1 and 2), on the curator and an open MILP oracle.

Records are one-hot encoded: attribute a with k_a values becomes k_a binary features, exactly
one of which is 1 (the paper's binarised domain; the one-hot rows are the authors' code's, the
paper's program omits them). The queries are the cells of the workload's marginals and their
negations. Each round t:

* the query player picks q_t with :meth:`Curator.select_query`, the exponential mechanism on
  the count error of every query against the current synthetic data D̂_t (below), sampled
  exactly by ``dpcore.accounting.level_sampler`` (~10 ms a draw over Adult's 283k queries);
* the data player (Alg. 2) draws s perturbation vectors σ_j with i.i.d. Exp(η) coordinates
  (mean η, as the authors' code) and asks the oracle for
  ``argmax_x Σ_{i≤t} q_i(x) − ⟨x, σ_j⟩`` over one-hot records x; D̂_{t+1} is the uniform
  distribution on the s answers.

sepFEM (Alg. 3, Separator-FTPL) is the same loop with another data player: each sample adds
Lap(η) weights on the queries of a separator set instead of the Exp(η) linear term; for one-hot
records the d binary features form a separator set (``perturbation="separator"``).

The output is the uniform mixture of D̂_1 .. D̂_{T+1} (``keep="all"``: the average the no-regret
theorem (Thm. 5) is about; D̂_{T+1} uses q_T, at no privacy cost) or of its later half
(``keep="later-half"``, the authors' code, which drops the early rounds' poor samples).

Scores without the record count. The paper scores q(D) − q(D̂) with sensitivity 1/n, which
treats n as public; under add/remove-one DP it is not. With a public count n̂ (``total``, or a
noisy count measured first with ``total_share`` of the budget) the curator scores
q_i = s (c − c̄) − s n̂ (2 p̂ − 1), c the query's count, c̄ = n − c, p̂ its synthetic answer:
= 2 (c − n̂ p̂) − (n − n̂) for a query and 2((n − c) − n̂(1 − p̂)) − (n − n̂) for a negation, i.e.
twice the count error against n̂ synthetic records plus a shift common to every candidate
(which the exponential mechanism ignores). Its sensitivity is 1 (one record moves c or c̄ by
one), so Pr[q] ∝ exp(ε₀ (count error)): under add/remove DP this is the paper's EM at twice
its exponent per unit of ε₀ (the paper's substitution neighbours move c and c̄ together).

Privacy. Each selection is ε₀-bounded-range, hence ε₀²/8-zCDP (Cesar & Rogers 2021), charged
to the filter; T rounds cost T ε₀²/8 by zCDP composition instead of the paper's advanced
composition, which allows several times more rounds for the same (ε, δ)
(proofs/fem_selection.py; ``dpcore.accounting.calibration.exponential_rounds``). The oracle
never sees the data: privacy does not depend on what it returns, nor on its time limit.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcore.accounting.calibration import exponential_epsilon, gaussian_sigma
from dpcore.errors import InvalidArgumentError

from .result import MechanismResult, RoundRecord, Timer, check_output
from .workload import make_workload

#: The most binary features (Σ attribute sizes) FEM accepts: the oracle's program has one
#: binary variable per feature, and HiGHS' branch and bound on one-hot programs of a few
#: thousand binaries already needs seconds a call.
MAX_FEATURES = 4096
#: The most queries (cells of the workload's marginals, each with its negation) FEM scores per
#: round: the selection holds three int64 per query and the exact sampler one integer.
MAX_QUERIES = 2 ** 22
KEEP = ("all", "later-half")
#: The data player's perturbation: FEM's linear Exp(η) term, or sepFEM's Lap(η) weights on a
#: separator set (module docstring).
PERTURBATIONS = ("exponential", "separator")


def perturb(rng, eta: float, d: int, kind: str) -> np.ndarray:
    """The oracle's σ (its objective subtracts ⟨x, σ⟩) for one sample.

    "exponential" (FEM, Alg. 2): σ_j ~ Exp with mean η. "separator" (sepFEM, Alg. 3): the
    objective adds Σ_j λ_j q̃_j(x) over a separator set with λ_j ~ Lap(η); for one-hot records
    the d features q̃_j(x) = x_j are one (two distinct records differ in some attribute, so in
    some feature: proofs/sepfem_separator.py), and Σ_j λ_j x_j = −⟨x, σ⟩ with σ = −λ.
    Public randomness only: privacy does not depend on it.
    """
    if kind == "exponential":
        return rng.exponential(eta, size=d)
    return -rng.laplace(0.0, eta, size=d)


# ---------------------------------------------------------------------- the oracle's program
@dataclass(frozen=True)
class Program:
    """``argmax_x Σ_i w_i q_i(x) − ⟨x, σ⟩`` over one-hot records x of a domain.

    ``offsets[a]`` is attribute a's first feature; query i is satisfied when every feature in
    ``features[i]`` is 1 (``negated[i]``: when not all are); ``weights`` count how often each
    query was selected; ``sigma`` has one entry per feature. ``forbidden``: the schema's
    public rules (:func:`rule_features`), each a pair (its features, its column count k): a
    record whose k columns all take a feature of the rule is outside the feasible set.
    """

    shape: tuple[int, ...]
    features: tuple[np.ndarray, ...]
    negated: np.ndarray
    weights: np.ndarray
    sigma: np.ndarray
    forbidden: tuple[tuple[np.ndarray, int], ...] = ()

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.shape)[:-1]]).astype(np.int64)

    def value(self, record: np.ndarray) -> float:
        """The objective at ``record`` (codes, one per attribute)."""
        x = np.zeros(int(sum(self.shape)))
        x[self.offsets + np.asarray(record, dtype=np.int64)] = 1.0
        sat = np.array([x[f].all() for f in self.features], dtype=bool)
        sat = np.where(self.negated, ~sat, sat) if sat.size else sat
        return float(self.weights @ sat) - float(self.sigma @ x)

    def allows(self, record: np.ndarray) -> bool:
        """Whether ``record`` (codes) keeps every rule of ``forbidden``."""
        x = np.zeros(int(sum(self.shape)), dtype=bool)
        x[self.offsets + np.asarray(record, dtype=np.int64)] = True
        return not any(int(x[f].sum()) == k for f, k in self.forbidden)


def rule_features(domain, forbidden) -> tuple[tuple[np.ndarray, int], ...]:
    """The schema's forbidden rules (each ``{column: boolean mask over its codes}``, a record
    forbidden where every column's value is in its mask: ``dpcore.constraints.zero_masks``)
    as :class:`Program` rows: the masked values' features and the rule's column count. One
    value a column, so the k columns all match exactly when Σ x over the features is k; the
    oracle keeps Σ <= k - 1. The rules are public: restricting the oracle's records to the
    allowed ones is post-processing (the oracle never sees the data)."""
    offsets = np.concatenate([[0], np.cumsum(domain.shape)[:-1]]).astype(np.int64)
    out = []
    for rule in forbidden:
        feats = []
        for col, mask in rule.items():
            if col not in domain.attrs:
                raise InvalidArgumentError(f"forbidden rule column {col!r} is not in the domain "
                                           f"{list(domain.attrs)}")
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (domain[col],):
                raise InvalidArgumentError(f"forbidden rule mask of column {col!r} has shape "
                                           f"{mask.shape}, expected ({domain[col]},)")
            feats.append(offsets[domain.attrs.index(col)] + np.flatnonzero(mask))
        if rule and all(len(f) for f in feats):
            out.append((np.concatenate(feats).astype(np.int64), len(feats)))
    return tuple(out)


Oracle = Callable[[Program], np.ndarray]


def milp_oracle(time_limit: float = 10.0) -> Oracle:
    """The MILP oracle: ``scipy.optimize.milp`` (HiGHS) with ``time_limit`` seconds a call.

    Variables: the binary features x and one continuous c_i in [0, 1] per distinct query,
    maximising Σ w_i c_i − ⟨x, σ⟩ subject to Σ_{j in attribute a} x_j = 1 (one-hot),
    c_i <= x_j for each feature j of a query (so c_i <= its indicator) and
    c_i + Σ_j x_j <= k_i for a negated k-way query, and Σ_j x_j <= k - 1 over each forbidden
    rule's features (:func:`rule_features`). At an optimum c_i is the indicator, so only x
    needs to be integral. A call that hits the time limit returns HiGHS' best feasible point;
    if it has none, the perturbation's own argmax when it keeps the rules, else the best record
    of the perturbation alone under the rules (:func:`_allowed_argmax`). Public inputs only:
    privacy never depends on this function.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    if not (isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool)
            and math.isfinite(time_limit) and time_limit > 0):
        raise InvalidArgumentError(f"time_limit must be a finite number of seconds > 0, got {time_limit!r}")

    last: dict = {}   # the constraints of the last program: a round's s programs share them

    def solve(program: Program) -> np.ndarray:
        offsets, shape = program.offsets, program.shape
        d, m = int(sum(shape)), len(program.features)
        if last.get("key") == (shape, m) and last["features"] is program.features \
                and last["forbidden"] is program.forbidden \
                and np.array_equal(last["negated"], program.negated):
            a_mat, lo, hi = last["rows"]
        else:
            a_mat, lo, hi = _rows(program, offsets, shape, d, m)
            last.update(key=(shape, m), features=program.features, forbidden=program.forbidden,
                        negated=program.negated.copy(), rows=(a_mat, lo, hi))
        cost = np.concatenate([program.sigma, -np.asarray(program.weights, dtype=np.float64)])
        integrality = np.concatenate([np.ones(d), np.zeros(m)])
        res = milp(cost, integrality=integrality, bounds=Bounds(0.0, 1.0),
                   constraints=LinearConstraint(a_mat, lo, hi),
                   options={"time_limit": float(time_limit), "disp": False})
        if res.x is None:
            return _allowed_argmax(program, time_limit)
        return _record(res.x[:d], offsets, shape)

    return solve


def _record(x: np.ndarray, offsets, shape) -> np.ndarray:
    return np.array([int(np.argmax(x[off:off + k])) for off, k in zip(offsets, shape)],
                    dtype=np.int64)


def _allowed_argmax(program: Program, time_limit: float) -> np.ndarray:
    """argmax_x −⟨x, σ⟩ over the one-hot records that keep the rules: per attribute when that
    record keeps them (always, without rules); else a program of the one-hot and rule rows
    alone. A record is returned even if that program finds none in time (the per-attribute
    one: sampling then drops it, as for any forbidden record)."""
    record = _perturbation_argmax(program)
    if not program.forbidden or program.allows(record):
        return record
    from scipy.optimize import Bounds, LinearConstraint, milp
    bare = Program(program.shape, (), np.zeros(0, dtype=bool), np.zeros(0), program.sigma,
                   program.forbidden)
    d = int(sum(program.shape))
    a_mat, lo, hi = _rows(bare, bare.offsets, bare.shape, d, 0)
    res = milp(program.sigma, integrality=np.ones(d), bounds=Bounds(0.0, 1.0),
               constraints=LinearConstraint(a_mat, lo, hi),
               options={"time_limit": float(time_limit), "disp": False})
    return record if res.x is None else _record(res.x, bare.offsets, bare.shape)


def _rows(program: Program, offsets, shape, d: int, m: int):
    """The oracle's constraint matrix and row bounds (see :func:`milp_oracle`)."""
    from scipy.sparse import coo_matrix
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    for a, (off, k) in enumerate(zip(offsets, shape)):        # one-hot rows
        rows += [r] * k
        cols += list(range(off, off + k))
        vals += [1.0] * k
        lo.append(1.0)
        hi.append(1.0)
        r += 1
    for i, (feats, neg) in enumerate(zip(program.features, program.negated)):
        if neg:   # c_i + Σ x_j <= k
            rows += [r] * (len(feats) + 1)
            cols += [d + i] + feats.tolist()
            vals += [1.0] * (len(feats) + 1)
            lo.append(-np.inf)
            hi.append(float(len(feats)))
            r += 1
        else:     # c_i - x_j <= 0
            for f in feats.tolist():
                rows += [r, r]
                cols += [d + i, f]
                vals += [1.0, -1.0]
                lo.append(-np.inf)
                hi.append(0.0)
                r += 1
    for feats, k in program.forbidden:                      # Σ x_j <= k - 1 (rule_features)
        rows += [r] * len(feats)
        cols += feats.tolist()
        vals += [1.0] * len(feats)
        lo.append(-np.inf)
        hi.append(float(k - 1))
        r += 1
    a_mat = coo_matrix((vals, (rows, cols)), shape=(r, d + m)).tocsr()
    return a_mat, np.array(lo), np.array(hi)


def _perturbation_argmax(program: Program) -> np.ndarray:
    """argmax_x −⟨x, σ⟩ over one-hot x: each attribute's value with the smallest σ."""
    return np.array([int(np.argmin(program.sigma[off:off + k]))
                     for off, k in zip(program.offsets, program.shape)], dtype=np.int64)


# ---------------------------------------------------------------------- the mixture
class MixtureModel:
    """The uniform distribution on a table of synthetic records (FEM's output)."""

    def __init__(self, domain, records: np.ndarray, total: float):
        self.domain = domain
        self.records = np.asarray(records, dtype=np.int64)
        self.total = float(total)

    def synthetic_data(self, rows: int, *, method: str = "sample", seed=None):
        """``rows`` records drawn uniformly with replacement from the mixture (post-processing)."""
        from dpcore import Dataset
        rng = np.random.default_rng(seed)
        return Dataset(self.records[rng.integers(len(self.records), size=int(rows))], self.domain)


# ---------------------------------------------------------------------- queries
@dataclass(frozen=True)
class Queries:
    """Every cell of the workload's marginals, and its negation: rows (marginal j, cell y,
    sign s) as :meth:`Curator.select_query` takes them, and each query's features."""

    cliques: tuple[tuple[str, ...], ...]
    rows: np.ndarray
    start: np.ndarray      # first row of each marginal's positive queries

    @classmethod
    def of(cls, domain, cliques) -> "Queries":
        sizes = [domain.size(c) for c in cliques]
        j = np.repeat(np.arange(len(cliques)), sizes)
        y = np.concatenate([np.arange(k) for k in sizes])
        pos = np.stack([j, y, np.ones_like(j)], axis=1)
        rows = np.concatenate([pos, pos * np.array([1, 1, -1])]).astype(np.int64)
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return cls(tuple(cliques), rows, start)

    def features(self, domain, row) -> np.ndarray:
        j, y, _ = (int(v) for v in row)
        clique = self.cliques[j]
        offsets = np.concatenate([[0], np.cumsum(domain.shape)[:-1]])
        values = np.unravel_index(y, [domain[a] for a in clique])
        return np.array([offsets[domain.attrs.index(a)] + int(v) for a, v in zip(clique, values)],
                        dtype=np.int64)

    def answers(self, domain, records: np.ndarray) -> np.ndarray:
        """Fraction of ``records`` in each marginal cell (the positive queries' answers)."""
        out = []
        for clique in self.cliques:
            axes = [domain.attrs.index(a) for a in clique]
            flat = np.ravel_multi_index(tuple(records[:, a] for a in axes),
                                        [domain.shape[a] for a in axes])
            out.append(np.bincount(flat, minlength=domain.size(clique)))
        return np.concatenate(out).astype(np.float64) / max(len(records), 1)


def check_count_options(eta, total_share, total) -> None:
    """FEM's and DQRS's shared options: eta > 0, total_share in (0, 1), a public total > 0."""
    for name, value in (("eta", eta), ("total_share", total_share)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value <= 0:
            raise InvalidArgumentError(f"{name} must be a finite number > 0, got {value!r}")
    if total_share >= 1:
        raise InvalidArgumentError(f"total_share must be < 1, got {total_share!r}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float))
                              or not math.isfinite(total) or total <= 0):
        raise InvalidArgumentError(f"total must be a finite public count > 0, got {total!r}")


def start_run(curator, cliques, oracle, time_limit, total, total_share, timer: Timer):
    """FEM's and DQRS's last checks before any charge (the domain's size, a budget left),
    then the public count when none is given (:func:`noisy_total`). Returns (oracle, the
    run's records so far, total)."""
    check_fem_domain(curator.domain, cliques)
    oracle = milp_oracle(time_limit) if oracle is None else oracle
    if Fraction(curator.privacy_filter.remaining) <= 0:
        raise InvalidArgumentError("the privacy filter has no budget left, remaining = 0")
    records: list[RoundRecord] = []
    if total is None:   # a public count for the scores (module docstring)
        total = noisy_total(curator, total_share, records, timer)
    return oracle, records, float(total)


def noisy_total(curator, total_share, records: list, timer: Timer) -> float:
    """A public record count for the scores (module docstring): the sum of the smallest
    attribute's 1-way marginal, measured with ``total_share`` of the remaining budget (recorded
    in ``records`` and ``timer``)."""
    domain = curator.domain
    start = time.perf_counter()
    smallest = min(domain.attrs, key=lambda a: domain[a])
    sigma = gaussian_sigma(Fraction(curator.privacy_filter.remaining) * Fraction(total_share))
    before = curator.privacy_filter.spent
    total = max(1.0, float(np.sum(curator.measure((smallest,), sigma))))
    records.append(RoundRecord(-1, "measure", (smallest,), sigma, None, 1.0, 1,
                               Fraction(curator.privacy_filter.spent - before),
                               time.perf_counter() - start))
    timer.add("measure", records[-1].seconds)
    return total


def check_fem_domain(domain, cliques) -> int:
    """Refuse, from public sizes only, a domain past :data:`MAX_FEATURES` binary features or a
    workload past :data:`MAX_QUERIES` queries; returns the number of queries."""
    d = int(sum(domain.shape))
    if d > MAX_FEATURES:
        raise InvalidArgumentError(f"FEM's domain binarises to {d} features, above the cap "
                                   f"{MAX_FEATURES} (mechanisms.fem.MAX_FEATURES); coarsen the schema")
    queries = 2 * sum(domain.size(c) for c in cliques)
    if queries > MAX_QUERIES:
        raise InvalidArgumentError(f"FEM's workload has {queries} queries (cells and negations), "
                                   f"above the cap {MAX_QUERIES} (mechanisms.fem.MAX_QUERIES); "
                                   f"use fewer or smaller marginals")
    return queries


# ---------------------------------------------------------------------- the mechanism
def fem(curator, workload, *, rounds: int = 50, samples: int = 20, eta: float = 2.0,
        total: float | None = None, total_share: float = 0.05, keep: str = "all",
        time_limit: float = 10.0, oracle: Oracle | None = None, synthetic_rows: int | None = None,
        perturbation: str = "exponential", forbidden=(), seed=None,
        callback=None) -> MechanismResult:
    """Run FEM for ``rounds`` rounds with ``samples`` oracle calls a round, spending the curator
    filter's whole remaining budget.

    ``eta``: mean of the Exp perturbation (the paper's η). ``total``: a public record count;
    without it a noisy count is measured first with ``total_share`` of the budget (a 1-way
    marginal of the smallest attribute, summed). Each round's ε₀ is calibrated to an equal
    share of what is left (``exponential_epsilon``). ``keep``: "all" or "later-half" (module
    docstring). ``oracle``: a function Program -> record (default :func:`milp_oracle` with
    ``time_limit`` seconds a call). ``seed`` fixes the perturbations and the output sample.
    ``perturbation``: "exponential" (FEM, Alg. 2) or "separator" (sepFEM, Alg. 3: Lap(η)
    weights on the separator queries, the one-hot features; see :data:`PERTURBATIONS`).
    ``forbidden``: the schema's public rules (:func:`rule_features`); every record the oracle
    returns keeps them (post-processing: the feasible set is public).
    """
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, seed=seed)
    work = make_workload(domain, workload)
    if not work:
        raise InvalidArgumentError("workload must name at least one marginal, got an empty workload")
    for name, value in (("rounds", rounds), ("samples", samples)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
    check_count_options(eta, total_share, total)
    if keep not in KEEP:
        raise InvalidArgumentError(f"keep must be one of {KEEP}, got {keep!r}")
    if perturbation not in PERTURBATIONS:
        raise InvalidArgumentError(f"perturbation must be one of {PERTURBATIONS}, got {perturbation!r}")
    cliques = [c for c, _ in work]
    rules = rule_features(domain, forbidden)
    rng = np.random.default_rng(seed)
    oracle, records, total = start_run(curator, cliques, oracle, time_limit, total, total_share,
                                       timer)

    queries = Queries.of(domain, cliques)
    shape = tuple(int(k) for k in domain.shape)
    chosen: dict[tuple[int, int, int], int] = {}
    features: dict[tuple[int, int, int], np.ndarray] = {}

    def data_player() -> np.ndarray:
        keys = list(chosen)
        program_base = (tuple(features[k] for k in keys),
                        np.array([k[2] < 0 for k in keys], dtype=bool),
                        np.array([chosen[k] for k in keys], dtype=np.float64))
        out = []
        for _ in range(samples):
            sigma = perturb(rng, eta, sum(shape), perturbation)
            out.append(oracle(Program(shape, *program_base, sigma, rules)))
        return np.array(out, dtype=np.int64).reshape(samples, len(shape))

    # D̂_1 answers a uniformly random query q_0 (Alg. 1).
    first = tuple(int(v) for v in queries.rows[rng.integers(len(queries.rows))])
    chosen[first], features[first] = 1, queries.features(domain, first)
    start = time.perf_counter()
    pool = [data_player()]
    timer.add("oracle", time.perf_counter() - start)
    counts = queries.answers(domain, pool[0]) * samples
    signs = queries.rows[:, 2].astype(np.float64)
    for t in range(rounds):
        start = time.perf_counter()
        p_hat = counts / (samples * len(pool))
        p_hat = np.concatenate([p_hat, p_hat])
        offsets = signs * total * (2 * p_hat - 1)
        epsilon = exponential_epsilon(Fraction(curator.privacy_filter.remaining) / (rounds - t))
        before = curator.privacy_filter.spent
        index = curator.select_query(queries.cliques, queries.rows, epsilon, offsets=offsets)
        key = tuple(int(v) for v in queries.rows[index])
        chosen[key] = chosen.get(key, 0) + 1
        if key not in features:
            features[key] = queries.features(domain, key)
        timer.add("select", time.perf_counter() - start)
        t_oracle = time.perf_counter()
        sample = data_player()
        pool.append(sample)
        counts += queries.answers(domain, sample) * samples
        timer.add("oracle", time.perf_counter() - t_oracle)
        record = RoundRecord(t, "select", queries.cliques[key[0]], None, epsilon, 1.0,
                             len(queries.rows), Fraction(curator.privacy_filter.spent - before),
                             time.perf_counter() - start)
        records.append(record)
        if callback is not None:
            callback(record)
    retired = curator.retire("FEM calibration residue")
    kept = pool if keep == "all" else pool[len(pool) // 2:]
    model = MixtureModel(domain, np.concatenate(kept), total)
    start = time.perf_counter()
    if synthetic_rows is None:
        from dpcore import Dataset
        synthetic = Dataset(model.records, domain)
    else:
        synthetic = model.synthetic_data(synthetic_rows, seed=rng.integers(2 ** 63))
    timer.add("generate", time.perf_counter() - start)
    selected = [(queries.cliques[j], y, s, n) for (j, y, s), n in chosen.items()]
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records),
                           timer.done(), {"workload": work, "retired_rho": retired,
                                          "total": total, "selected": selected})
