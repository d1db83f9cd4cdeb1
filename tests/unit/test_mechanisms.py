"""Mechanisms on small data: structure of the result, reproducibility, degenerate inputs."""
import itertools
from fractions import Fraction

import numpy as np
import pytest

from dpcore import Curator, Dataset, Domain, JunctionTree
from dpcore.accounting import ExponentialEvent, GaussianEvent, PrivacyFilter, verify_ledger
from dpcore.accounting.calibration import nist_mst_sigma
from dpcore.errors import InvalidArgumentError
from mechanisms.aim import aim
from mechanisms.independent import independent
from mechanisms.mst import mst
from mechanisms.mwem import mwem
from mechanisms.workload import candidate_weights, downward_closure, make_workload

FAST = {"max_iters": 50}


def correlated(n=300, seed=0):
    """a -> b -> c chain plus an independent d, so MST's tree should find (a,b) and (b,c)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.9, b % 2, rng.integers(0, 2, n))
    d = rng.integers(0, 4, n)
    return Dataset(np.stack([a, b, c, d], axis=1), Domain(("a", "b", "c", "d"), (3, 3, 2, 4)))


def curator(data=None, epsilon=1.0, delta=1e-9, seed=0):
    return Curator(correlated() if data is None else data, PrivacyFilter.from_approx_dp(epsilon, delta), seed=seed)


# ---------------------------------------------------------------------------- workload helpers
def test_downward_closure_and_weights_match_brute_force():
    work = ((("a", "b", "c"), 2.0), (("b", "d"), 1.0))
    closure = downward_closure([c for c, _ in work])
    brute = {tuple(s) for c, _ in work for k in range(1, len(c) + 1) for s in itertools.combinations(c, k)}
    assert set(closure) == brute and len(closure) == len(brute)
    assert [len(c) for c in closure] == sorted(len(c) for c in closure)
    w = candidate_weights(closure, work)
    for r, wr in zip(closure, w):
        assert wr == sum(cs * len(set(r) & set(s)) for s, cs in work)


def test_make_workload_validates_and_accepts_named_specs():
    domain = Domain(("a", "b", "c"), (2, 2, 2))
    assert make_workload(domain, [("b", "a"), (("c",), 2.0)]) == ((("a", "b"), 1.0), (("c",), 2.0))
    assert len(make_workload(domain, "all-2way")) == 3
    for bad in ([("a", "zzz")], [(("a",), -1.0)], [("a",), ("a",)], [("a", "a")], [()]):
        with pytest.raises(InvalidArgumentError):
            make_workload(domain, bad)


# ---------------------------------------------------------------------------- AIM
def test_aim_result_is_complete_exact_and_reproducible():
    seen = []
    c1 = curator(seed=5)
    r1 = aim(c1, "all-2way", seed=11, callback=seen.append, estimate_options=FAST)
    r2 = aim(curator(seed=5), "all-2way", seed=11, estimate_options=FAST)
    assert np.array_equal(np.asarray(r1.synthetic.records), np.asarray(r2.synthetic.records))
    assert [(r.clique, r.sigma, r.epsilon) for r in r1.rounds] == [(r.clique, r.sigma, r.epsilon) for r in r2.rounds]
    assert seen == list(r1.rounds)
    assert r1.ledger.spent == c1.privacy_filter.budget and verify_ledger(r1.ledger, allow_fixed_seed=True).ok
    kinds = [r.kind for r in r1.rounds]
    assert kinds[:4] == ["measure"] * 4 and set(kinds[4:]) == {"select+measure"}
    assert sum(r.rho for r in r1.rounds) + r1.extras["retired_rho"] == c1.privacy_filter.budget
    # Annealing only ever halves sigma; the final round may use any sigma.
    sigmas = [r.sigma for r in r1.rounds[4:-1]]
    assert all(b in (a, a / 2) for a, b in zip(sigmas, sigmas[1:]))
    closure = downward_closure([c for c, _ in make_workload(c1.domain, "all-2way")])
    assert set(r1.confidence_bounds) == set(closure)
    assert {"select", "measure", "estimate", "generate", "total"} <= set(r1.timings)


def test_aim_rejects_bad_workloads_before_spending():
    c = curator()
    for bad in ([], [("a", "nope")]):
        with pytest.raises(InvalidArgumentError):
            aim(c, bad)
    assert c.privacy_filter.spent == 0 and c.reads == 0


def test_round_refits_are_capped_and_the_final_model_is_refit_in_full(monkeypatch):
    import mechanisms.aim as aim_module

    caps = []
    real = aim_module.estimate

    def spy(domain, measurements, **options):
        caps.append(options.get("max_iters"))
        return real(domain, measurements, **options)

    monkeypatch.setattr(aim_module, "estimate", spy)
    result = aim(curator(), [("a", "b"), ("b", "c")], round_iters=7,
                 estimate_options={"max_iters": 40})
    rounds = result.extras["rounds_run"]
    assert caps == [7] * (rounds + 1) + [40]   # initial fit, one per round, then the final
    assert len(result.model.loss_history) > 1
    for bad in (0, 2.5, True):
        with pytest.raises(InvalidArgumentError, match="round_iters"):
            aim(curator(), [("a", "b")], round_iters=bad)


def test_aim_on_degenerate_data():
    one_attr = Dataset(np.array([[0], [1], [1]]), Domain(("x",), (2,)))
    r = aim(curator(one_attr), [("x",)], estimate_options=FAST)
    assert r.synthetic.domain.attrs == ("x",)
    constant = Dataset(np.zeros((5, 2), dtype=np.int64), Domain(("x", "y"), (1, 1)))
    r = aim(curator(constant, epsilon=0.01), [("x", "y")], estimate_options=FAST)
    assert np.all(np.asarray(r.synthetic.records) == 0)
    single = Dataset(np.array([[1, 0, 1, 3]]), correlated().domain)
    c = curator(single, epsilon=1e-3, delta=1e-12)
    r = aim(c, "all-2way", estimate_options=FAST)
    assert r.ledger.spent == c.privacy_filter.budget


def test_exhausted_filter_is_a_clear_error():
    c = curator()
    c.retire("spent elsewhere")
    for run in (lambda: aim(c, "all-2way"), lambda: mst(c), lambda: mwem(c, "all-2way"), lambda: independent(c)):
        with pytest.raises(InvalidArgumentError):
            run()


# ---------------------------------------------------------------------------- MST
def test_mst_budget_split_and_tree():
    c = curator(epsilon=5.0)
    r = mst(c, seed=1, estimate_options=FAST)
    rho = c.privacy_filter.budget
    ledger = r.ledger.entries
    ones = [e for e in ledger[:4]]
    sel = [e for e in ledger if isinstance(e.event, ExponentialEvent)]
    assert all(isinstance(e.event, GaussianEvent) for e in ones)
    assert rho / 3 - sum(e.rho for e in ones) < rho * Fraction(1, 10 ** 12)
    assert len(sel) == 3                              # d - 1 Kruskal steps
    assert abs(sum(e.rho for e in sel) - rho / 3) < rho * Fraction(1, 10 ** 12)
    for e in sel:                                     # eps = sqrt(8 (rho/3) / (r - 1)), r = 4
        assert abs(e.event.epsilon - float((8 * rho / 9) ** 0.5)) < 1e-12
    assert r.ledger.spent == rho
    pairs = r.extras["cliques"]
    assert len(pairs) == 3 and ("a", "b") in pairs  # a-b is the strongest dependence


def test_mst_required_pairs_and_compression_round_trip():
    data = correlated(n=400)
    c = curator(data, epsilon=2.0)
    r = mst(c, required_pairs=[("d", "a")], compress=True, seed=3, estimate_options=FAST)
    assert ("a", "d") in r.extras["cliques"]
    assert r.synthetic.domain == data.domain
    assert r.ledger.spent == c.privacy_filter.budget


def test_mst_compression_merges_rare_values():
    rng = np.random.default_rng(0)
    col = np.where(rng.random(2000) < 0.999, rng.integers(0, 2, 2000), 7)   # values 2..7 rare
    data = Dataset(np.stack([col, rng.integers(0, 2, 2000)], axis=1), Domain(("u", "v"), (8, 2)))
    r = mst(curator(data, epsilon=1.0), compress=True, seed=0, estimate_options=FAST)
    codes = r.extras["compression"]["u"]
    assert codes[0] != codes[1] and len(set(codes[2:])) == 1 and codes[2] == codes.max()
    assert r.model.domain.shape[0] == codes.max() + 1
    synth = np.asarray(r.synthetic.records)
    assert synth[:, 0].max() < 8


def test_nist_mst_selects_from_public_data_and_uses_eq_5_1():
    public = correlated(n=2000, seed=9)
    c = curator(epsilon=1.0, delta=1e-9)
    r = mst(c, public=public, calibration="nist", seed=0, estimate_options=FAST)
    assert not any(isinstance(e.event, ExponentialEvent) for e in r.ledger.entries)
    sigma = nist_mst_sigma(1.0, 1e-9)
    assert abs(float(r.ledger.spent) - 1 / sigma ** 2) < 1e-12 * float(r.ledger.spent)
    assert r.ledger.spent <= c.privacy_filter.budget
    assert {("a", "b"), ("b", "c")} <= set(r.extras["cliques"])
    with pytest.raises(InvalidArgumentError):
        mst(curator(), calibration="nist")


# ---------------------------------------------------------------------------- MWEM, Independent
def test_mwem_rounds_and_parameterisation():
    c = curator(epsilon=2.0)
    r = mwem(c, "all-2way", rounds=4, seed=0, estimate_options=FAST)
    rho = c.privacy_filter.budget
    assert len(r.rounds) == 4 and r.ledger.spent == rho
    first = r.rounds[0]   # eps = 2 sqrt(rho/T), sigma = sqrt(T/rho)  (AIM paper Alg. 1)
    assert abs(first.epsilon - 2 * float(rho / 4) ** 0.5) < 1e-12
    assert abs(first.sigma - float(4 / rho) ** 0.5) < 1e-9 * first.sigma
    # Singletons alone are 12 cells; a cap of 39 cells (8 bytes each) admits only small trees.
    cap = 39 * 8 / 2 ** 20
    capped = mwem(curator(epsilon=50.0), "all-3way", rounds=5, max_model_size=cap, estimate_options=FAST)
    tree = JunctionTree(c.domain, [rec.clique for rec in capped.rounds])
    assert tree.size_mb <= cap


def test_independent_measures_each_attribute_once():
    c = curator()
    r = independent(c, seed=0)
    assert [rec.clique for rec in r.rounds] == [("a",), ("b",), ("c",), ("d",)]
    assert r.ledger.spent == c.privacy_filter.budget
    assert len(r.synthetic) > 0


def test_discrete_gaussian_option_spends_the_same_budget():
    for run in (lambda c: independent(c, discrete=True, seed=0),
                lambda c: mst(c, discrete=True, seed=0, estimate_options=FAST),
                lambda c: mwem(c, "all-2way", rounds=2, discrete=True, estimate_options=FAST),
                lambda c: aim(c, "all-2way", discrete=True, estimate_options=FAST)):
        c = curator(epsilon=0.5)
        r = run(c)
        assert r.ledger.spent == c.privacy_filter.budget
        noises = [e.what.get("noise") for e in r.ledger.entries if isinstance(e.event, GaussianEvent)]
        assert noises and set(noises) == {"discrete_gaussian"}
