"""DQRS: DualQuery with Rejection Sampling (Vietri, Tian, Bun, Steinke, Wu, ICML 2020, Alg. 4),
on the curator and FEM's MILP oracle.

The dual game: the query player runs multiplicative weights (MW) over the queries Q (the cells
of the workload's marginals and their negations, as in FEM), the data player best-responds with
one oracle call a round. Round t:

* the data player solves x^t = argmax_x Σ_{q∈S_t} q(x) (the oracle, no perturbation) for the
  multiset S_t of s sampled queries; x^t joins the output;
* MW: Q^{t+1}_q ∝ exp(η (q(D) − q(x^t))) Q^t_q, i.e. Q^{t+1}_q ∝ exp(η (t c_q/n̂ − Σ_{τ≤t}
  q(x^τ))) with c_q the query's count and n̂ a public count (the paper's sign convention is
  DualQuery's: the query player raises the queries the synthetic records under-answer);
* S_{t+1}: each q ∈ S_t is kept with probability exp(−η − γ_t) exp(η (q(D) − q(x^t))) (Lemma
  8: kept samples are draws from Q^{t+1}), γ_t = 1/(2 t^(2/3)); then ⌈(2γ_t + 4η) s⌉ fresh
  draws from Q^{t+1}; if more than s, a uniformly random s of them stay.

The output is the T records x^1..x^T (Thm. 7), as a uniform mixture.

Privacy. A fresh draw from Q^{t+1} is the exponential mechanism with score 2 c_q (sensitivity
1 under add/remove) at ε = η t / n̂: exp(ε c_q − η Σ q(x^τ)) — ``Curator.select_query`` with
offsets 2 n̂ Σ_τ q(x^τ) / t, ε²/8-zCDP each. A keep flag is (η/n̂) max(1, 1/γ_t)-DP (Lemma 9;
``Curator.reject_queries``, proofs/dqrs_rejection.py), ε²/2-zCDP. Everything is charged to the
filter before the data is read, by zCDP composition instead of the paper's advanced
composition. T is the most rounds the budget pays for in the worst case (s flags a round);
the last round needs neither flags nor fresh draws. The oracle never sees the data.

One departure from Lemma 8's exactness, stated: a keep flag reads q(D) as min(c_q, n̂)/n̂ (its
share must stay in [0, 1] for the probability to be one), while a fresh draw scores the
unclipped c_q. When the noisy n̂ falls below a query's count (rare: n̂ is within a few σ of n),
kept samples and fresh draws follow slightly different laws for that query. Privacy is
unaffected; only the sampling of S_{t+1} departs from Q^{t+1} for those queries.
"""
from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from dpcore.errors import InvalidArgumentError

from .fem import (MixtureModel, Oracle, Program, Queries, check_count_options, rule_features,
                  start_run)
from .result import MechanismResult, RoundRecord, Timer, check_output
from .workload import make_workload

#: The most rounds DQRS plans (each is one oracle call and a release of s flags).
MAX_DQRS_ROUNDS = 5000
#: The largest MW rate η DQRS takes: Alg. 4 sets η = α/4 for an accuracy α < 1, and from 1/4
#: on every query of a round is drawn fresh; beyond 1 the rounds' costs only overflow.
MAX_DQRS_ETA = 1.0


def check_eta(eta) -> None:
    """Refuse a DQRS rate outside (0, MAX_DQRS_ETA] (before any charge)."""
    if isinstance(eta, bool) or not isinstance(eta, (int, float)) or not 0 < eta <= MAX_DQRS_ETA:
        raise InvalidArgumentError(f"eta (the MW rate, the paper's alpha/4) must be in "
                                   f"(0, {MAX_DQRS_ETA}], got {eta!r}")


def gamma_t(t: int) -> float:
    """γ_t = 1/(2 t^(2/3)) (Alg. 4)."""
    return 1.0 / (2.0 * t ** (2.0 / 3.0))


def fresh_count(t: int, eta: float, samples: int) -> int:
    """⌈(2γ_t + 4η) s⌉ fresh draws after round t, at most s."""
    share = 2 * gamma_t(t) + 4 * eta
    return samples if share >= 1 else min(samples, math.ceil(share * samples))


def round_cost(t: int, eta: float, samples: int, total: float) -> Fraction:
    """The zCDP charged after round t (t < T) in the worst case: s keep flags of
    (η/n̂) max(1, 1/γ_t)-DP (ε²/2 each) and fresh_count EM draws at ε = η t/n̂ (ε²/8 each)."""
    from dpcore.accounting import ExponentialEvent, PureDPEvent, ZCDPAccountant
    acc = ZCDPAccountant()
    eta_q, total_q, gamma_q = Fraction(eta), Fraction(total), Fraction(gamma_t(t))
    flag = acc.rho(PureDPEvent(eta_q / total_q * max(Fraction(1), 1 / gamma_q)))
    draw = acc.rho(ExponentialEvent(float(eta * t / total), 1))
    return samples * Fraction(flag) + fresh_count(t, eta, samples) * Fraction(draw)


def dqrs_rounds(rho, eta: float, samples: int, total: float, cap: int = MAX_DQRS_ROUNDS) -> int:
    """The most rounds T (<= cap) whose worst-case cost Σ_{t<T} round_cost(t) fits in rho."""
    # a 1e-9 margin for the ledger's rounding of each charge up onto its 2^-128 grid
    spent, T, limit = Fraction(0), 1, Fraction(rho) * (1 - Fraction(1, 10 ** 9))
    while T < cap:
        spent += round_cost(T, eta, samples, total)
        if spent > limit:
            break
        T += 1
    return T


def dqrs(curator, workload, *, rounds: int | None = None, samples: int = 30, eta: float = 0.3,
         total: float | None = None, total_share: float = 0.05, time_limit: float = 10.0,
         oracle: Oracle | None = None, synthetic_rows: int | None = None, forbidden=(),
         seed=None, callback=None) -> MechanismResult:
    """Run DQRS, spending the curator filter's whole remaining budget.

    ``samples``: s, the size of the query sample S_t. ``eta``: the MW learning rate η (the
    paper's α/4). ``rounds``: a cap on T (default :data:`MAX_DQRS_ROUNDS`); T is the most rounds
    the budget pays for. ``total`` / ``total_share``: the public count n̂, as for FEM.
    ``oracle``: Program -> record (default :func:`mechanisms.fem.milp_oracle`). ``forbidden``:
    the schema's public rules, kept by every oracle record (:func:`mechanisms.fem.rule_features`).
    """
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, seed=seed)
    work = make_workload(domain, workload)
    if not work:
        raise InvalidArgumentError("workload must name at least one marginal, got an empty workload")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InvalidArgumentError(f"samples must be an int >= 1, got {samples!r}")
    cap = MAX_DQRS_ROUNDS if rounds is None else rounds
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InvalidArgumentError(f"rounds must be an int >= 1, got {rounds!r}")
    check_count_options(eta, total_share, total)
    check_eta(eta)
    cliques = [c for c, _ in work]
    rules = rule_features(domain, forbidden)
    rng = np.random.default_rng(seed)
    oracle, records, total = start_run(curator, cliques, oracle, time_limit, total, total_share,
                                       timer)
    T = dqrs_rounds(Fraction(curator.privacy_filter.remaining), eta, samples, total, cap)

    queries = Queries.of(domain, cliques)
    shape = tuple(int(k) for k in domain.shape)
    features: dict[int, np.ndarray] = {}
    sample = rng.integers(len(queries.rows), size=samples)    # S_1 ~ Uniform(Q): public
    satisfied_sum = np.zeros(len(queries.rows))               # Σ_τ q(x^τ), every query
    out = []
    for t in range(1, T + 1):
        start = time.perf_counter()
        distinct, mult = np.unique(sample, return_counts=True)
        for i in distinct.tolist():
            if i not in features:
                features[i] = queries.features(domain, queries.rows[i])
        program = Program(shape, tuple(features[i] for i in distinct.tolist()),
                          queries.rows[distinct, 2] < 0, mult.astype(np.float64),
                          np.zeros(sum(shape)), rules)
        record = np.asarray(oracle(program), dtype=np.int64).reshape(len(shape))
        out.append(record)
        hit = queries.answers(domain, record[None, :])           # 0/1 per positive query
        hit = np.concatenate([hit, 1.0 - hit])
        satisfied_sum += hit
        timer.add("oracle", time.perf_counter() - start)
        spent_before = curator.privacy_filter.spent
        epsilon = None
        if t < T:
            start = time.perf_counter()
            keep = curator.reject_queries(queries.cliques, queries.rows[sample], hit[sample],
                                          eta, gamma_t(t), total)
            epsilon = float(eta * t / total)
            offsets = 2.0 * total * satisfied_sum / t
            fresh = curator.select_query(queries.cliques, queries.rows, epsilon, offsets=offsets,
                                         draws=fresh_count(t, eta, samples))
            sample = np.concatenate([sample[keep], np.asarray(fresh, dtype=np.int64)])
            if len(sample) > samples:
                sample = rng.choice(sample, size=samples, replace=False)
            timer.add("select", time.perf_counter() - start)
        rec = RoundRecord(t - 1, "select", (), None, epsilon, 1.0, len(queries.rows),
                          Fraction(curator.privacy_filter.spent - spent_before),
                          time.perf_counter() - start)
        records.append(rec)
        if callback is not None:
            callback(rec)
    retired = curator.retire("DQRS calibration residue")
    model = MixtureModel(domain, np.array(out, dtype=np.int64), total)
    start = time.perf_counter()
    if synthetic_rows is None:
        from dpcore import Dataset
        synthetic = Dataset(model.records, domain)
    else:
        synthetic = model.synthetic_data(synthetic_rows, seed=rng.integers(2 ** 63))
    timer.add("generate", time.perf_counter() - start)
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records),
                           timer.done(), {"workload": work, "retired_rho": retired,
                                          "total": total, "rounds": T})
