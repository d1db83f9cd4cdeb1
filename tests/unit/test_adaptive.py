"""Adaptive Measurements on explicit histograms: the MWEM and PEP updates against brute force,
PEP's projection reaching its constraints, the budget calibration, refusals before any charge,
and utility on a small real table."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import ExponentialEvent, GaussianEvent, PrivacyFilter, ZCDPAccountant
from dpcore.accounting.calibration import adaptive_measurements_round
from dpcore.errors import InvalidArgumentError
from mechanisms.adaptive import (HISTOGRAM_CELL_CAP, PEP_CLIP, MWEMUpdate, PEPUpdate,
                                 adaptive_measurements, marginal)
from mechanisms.plan import plan_adaptive
from mechanisms.synthesizer import Synthesizer

SETTINGS = settings(max_examples=40, deadline=None)


# ------------------------------------------------------------------ brute-force references
def cells(domain):
    return list(itertools.product(*(range(n) for n in domain.shape)))


def brute_marginal(p, domain, clique):
    axes = [domain.attrs.index(a) for a in clique]
    out = np.zeros([domain.shape[i] for i in axes])
    for x in cells(domain):
        out[tuple(x[i] for i in axes)] += p[x]
    return out


def brute_mwem_step(p, domain, clique, answer):
    """Hardt et al.'s update for every cell query of ``clique``: sum of their exponents."""
    q = brute_marginal(p, domain, clique)
    axes = [domain.attrs.index(a) for a in clique]
    out = np.zeros_like(p)
    for x in cells(domain):
        y = tuple(x[i] for i in axes)
        out[x] = p[x] * math.exp((answer[y] - q[y]) / 2)
    return out / out.sum()


@st.composite
def histograms(draw, max_attrs=3):
    d = draw(st.integers(1, max_attrs))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=d, max_size=d)))
    domain = Domain(tuple(f"x{i}" for i in range(d)), shape)
    raw = draw(st.lists(st.floats(0.05, 1.0), min_size=domain.size(), max_size=domain.size()))
    p = np.array(raw).reshape(shape)
    subsets = [c for k in range(1, d + 1) for c in itertools.combinations(domain.attrs, k)]
    cliques = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=3, unique=True))
    answers = {}
    for c in cliques:
        size = domain.size(c)
        vals = draw(st.lists(st.floats(-0.2, 1.2), min_size=size, max_size=size))
        answers[c] = np.array(vals).reshape(domain.project(c).shape)
    return domain, p / p.sum(), answers


@SETTINGS
@given(histograms())
def test_marginal_matches_brute_force(case):
    domain, p, answers = case
    for c in answers:
        np.testing.assert_allclose(marginal(p, domain, c), brute_marginal(p, domain, c),
                                   atol=1e-14)


@SETTINGS
@given(histograms())
def test_mwem_step_matches_brute_force(case):
    domain, p, answers = case
    c = next(iter(answers))
    before = p.copy()
    got = MWEMUpdate().update(p, domain, {c: answers[c]}, [c], np.random.default_rng(0))
    np.testing.assert_allclose(got, brute_mwem_step(p, domain, c, answers[c]), rtol=1e-12)
    np.testing.assert_array_equal(p, before)   # steps in place on its own copy only


def test_mwem_moves_towards_the_measurement():
    # the erratum's + sign: a cell measured above its current mass gains mass
    domain = Domain(("a",), (2,))
    p = np.array([0.5, 0.5])
    out = MWEMUpdate().update(p, domain, {("a",): np.array([0.9, 0.1])}, [("a",)],
                              np.random.default_rng(0))
    assert out[0] > 0.5 > out[1]


def test_mwem_passes_repeat_the_round_on_the_current_iterate():
    domain = Domain(("a", "b", "c"), (2, 3, 2))
    rng = np.random.default_rng(5)
    p = rng.random(domain.shape)
    p /= p.sum()
    answers = {c: rng.dirichlet(np.ones(domain.size(c))).reshape(domain.project(c).shape)
               for c in (("a",), ("a", "b"), ("b", "c"), ("c",))}
    new = [("b", "c")]
    got = MWEMUpdate(passes=3).update(p, domain, answers, new, np.random.default_rng(9))
    want, again = p, np.random.default_rng(9)
    for _ in range(3):
        want = MWEMUpdate().update(want, domain, answers, new, again)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    one = MWEMUpdate().update(p, domain, answers, new, np.random.default_rng(9))
    loss = [sum(np.abs(marginal(q, domain, c) - a).sum() for c, a in answers.items())
            for q in (p, one, got)]
    assert loss[2] < loss[1] < loss[0]    # more passes fit the measurements closer


@pytest.mark.parametrize("passes", [0, -1, 1.5, True, "2"])
def test_mwem_passes_must_be_a_positive_int(passes):
    with pytest.raises(InvalidArgumentError, match="passes"):
        MWEMUpdate(passes=passes)


def test_mwem_reuses_past_measurements_with_at_least_half_the_new_error():
    domain = Domain(("a", "b"), (2, 2))
    p = np.full((2, 2), 0.25)
    new, far, near = ("a",), ("b",), ("a", "b")
    answers = {new: np.array([0.7, 0.3]),                  # L1 error 0.4
               far: np.array([0.65, 0.35]),                # 0.3 >= 0.4 / 2: reused
               near: marginal(p, domain, near) + [[0.01, -0.01], [0.0, 0.0]]}  # 0.02: not
    got = MWEMUpdate().update(p, domain, answers, [new], np.random.default_rng(0))
    want = brute_mwem_step(brute_mwem_step(p, domain, new, answers[new]), domain, far,
                           answers[far])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def brute_pep_step(p, domain, answers):
    """One step of Alg. 4: the worst cell over all constraints, projected onto exactly."""
    worst, pick = -1.0, None
    for c, a in answers.items():
        q = brute_marginal(p, domain, c)
        for y in itertools.product(*(range(n) for n in q.shape)):
            if abs(a[y] - q[y]) > worst:
                worst, pick = abs(a[y] - q[y]), (c, y, a[y], q[y])
    c, y, a, q = pick
    a, q = (min(max(v, PEP_CLIP), 1 - PEP_CLIP) for v in (a, q))
    ratio = a * (1 - q) / ((1 - a) * q)
    axes = [domain.attrs.index(b) for b in c]
    out = p.copy()
    for x in cells(domain):
        if tuple(x[i] for i in axes) == y:
            out[x] *= ratio
    return out / out.sum(), c, y


@SETTINGS
@given(histograms())
def test_pep_step_matches_brute_force_and_hits_its_constraint(case):
    domain, p, answers = case
    got = PEPUpdate(max_steps=1).update(p, domain, answers)
    want, c, y = brute_pep_step(p, domain, answers)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)
    target = min(max(answers[c][y], PEP_CLIP), 1 - PEP_CLIP)
    if PEP_CLIP <= brute_marginal(p, domain, c)[y] <= 1 - PEP_CLIP:   # unclipped: exact hit
        assert abs(marginal(got, domain, c)[y] - target) < 1e-9


@SETTINGS
@given(histograms(), st.integers(2, 6))
def test_pep_incremental_steps_match_repeated_brute_force(case, steps):
    domain, p, answers = case
    want = p
    for _ in range(steps):
        want, _, _ = brute_pep_step(want, domain, answers)
    got = PEPUpdate(max_steps=steps).update(p, domain, answers)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-12)


def consistent_answers(seed, shape, cliques):
    rng = np.random.default_rng(seed)
    domain = Domain(tuple(f"x{i}" for i in range(len(shape))), shape)
    truth = rng.dirichlet(np.ones(domain.size())).reshape(shape)
    return domain, {c: marginal(truth, domain, c) for c in cliques}


@pytest.mark.parametrize("seed", range(4))
def test_pep_projection_meets_every_constraint(seed):
    pairs = [("x0", "x1"), ("x1", "x2"), ("x0", "x2")]
    domain, answers = consistent_answers(seed, (2, 3, 2), pairs)
    uniform = np.full(domain.shape, 1 / domain.size())
    p = PEPUpdate(max_steps=20000, tolerance=1e-8).update(uniform, domain, answers)
    assert abs(p.sum() - 1) < 1e-12 and p.min() > 0
    for c, a in answers.items():
        assert np.abs(marginal(p, domain, c) - a).max() <= 1e-8


def test_pep_warm_start_reaches_the_same_maximum_entropy_point():
    domain, answers = consistent_answers(7, (2, 2, 3), [("x0", "x1"), ("x1", "x2")])
    uniform = np.full(domain.shape, 1 / domain.size())
    pep = PEPUpdate(max_steps=20000, tolerance=1e-10)
    cold = pep.update(uniform, domain, answers)
    first = pep.update(uniform, domain, {("x0", "x1"): answers[("x0", "x1")]})
    warm = pep.update(first, domain, answers)
    np.testing.assert_allclose(warm, cold, atol=1e-7)
    # maximum entropy under these two overlapping marginals: x0 ⟂ x2 given x1
    joint = cold
    pair01, pair12 = marginal(joint, domain, ("x0", "x1")), marginal(joint, domain, ("x1", "x2"))
    one = marginal(joint, domain, ("x1",))
    np.testing.assert_allclose(joint, pair01[:, :, None] * pair12[None] / one[None, :, None],
                               atol=1e-7)


@pytest.mark.parametrize("steps, tolerance", [(0, 0.0), (1.5, 0.0), (True, 0.0), (1, -0.1), (1, 1)])
def test_pep_options_are_checked(steps, tolerance):
    with pytest.raises(InvalidArgumentError):
        PEPUpdate(max_steps=steps, tolerance=tolerance)


# ------------------------------------------------------------------ budget
@pytest.mark.parametrize("rho, T, k, alpha", [(Fraction(1, 2), 1, 1, 0.5), (0.01, 50, 1, 0.5),
                                              (Fraction(3, 7), 13, 4, 0.67), (1e-6, 200, 2, 0.1)])
def test_calibration_matches_theorem_1_and_fits_the_budget(rho, T, k, alpha):
    eps, sigma = adaptive_measurements_round(rho, T, k, alpha)
    eps0 = math.sqrt(2 * float(rho) / (k * T * (alpha ** 2 + (1 - alpha) ** 2)))
    assert eps == pytest.approx(2 * alpha * eps0, rel=1e-12)
    assert sigma == pytest.approx(1 / ((1 - alpha) * eps0), rel=1e-12)
    acc = ZCDPAccountant()
    total = k * T * (acc.rho(ExponentialEvent(eps, 1)) + acc.rho(GaussianEvent(sigma, 1)))
    assert total <= Fraction(rho)
    assert Fraction(rho) - total <= Fraction(rho) * Fraction(1, 10 ** 12)


@pytest.mark.parametrize("args", [(0, 1, 1, 0.5), (1, 0, 1, 0.5), (1, 1, 0, 0.5), (1, 1, 1, 0),
                                  (1, 1, 1, 1), (1, 1, 1, 1.5), (1, 2.0, 1, 0.5)])
def test_calibration_refuses_bad_arguments(args):
    with pytest.raises((InvalidArgumentError, TypeError)):
        adaptive_measurements_round(*args)


# ------------------------------------------------------------------ refusals before any charge
def test_too_large_a_domain_is_refused_before_any_charge():
    domain = Domain(("a", "b"), (2 ** 13, 2 ** 13))   # 2^26 cells > 2^25
    assert domain.size() > HISTOGRAM_CELL_CAP
    filt = PrivacyFilter(Fraction(1, 2))
    curator = Curator(Dataset(np.zeros((3, 2), dtype=np.int64), domain), filt, seed=0)
    with pytest.raises(InvalidArgumentError, match="67108864 cells"):
        adaptive_measurements(curator, [("a",)], PEPUpdate())
    assert filt.spent == 0 and curator.reads == 0
    with pytest.raises(InvalidArgumentError, match="explicit-histogram cap"):
        plan_adaptive(domain, Fraction(1, 2), family="pep", workload=[("a",)])


def test_a_bad_family_is_refused_before_any_charge():
    filt = PrivacyFilter(Fraction(1, 2))
    domain = Domain(("a",), (2,))
    curator = Curator(Dataset(np.zeros((3, 1), dtype=np.int64), domain), filt, seed=0)
    with pytest.raises(TypeError, match="family must be an Adaptive Measurements family"):
        adaptive_measurements(curator, [("a",)], "pep")
    assert filt.spent == 0


DOMAIN = Domain(("a", "b", "c"), (3, 2, 4))


@pytest.mark.parametrize("options, field", [
    ({"family": "dpgan"}, "family"), ({"family": "pep", "alpha": 1.0}, "alpha"),
    ({"family": "pep", "alpha": 0}, "alpha"), ({"family": "pep", "alpha": True}, "alpha"),
    ({"family": "mwem", "per_round": 4}, "per_round"),
    ({"family": "mwem", "per_round": 0}, "per_round"),
    ({"family": "pep", "rounds": 0}, "rounds"), ({"family": "pep", "rounds": 1e9}, "rounds"),
    ({"family": "pep", "workload": []}, "workload"),
])
def test_planner_names_the_bad_option(options, field):
    options = {"workload": "all-2way", **options}
    with pytest.raises(InvalidArgumentError, match=field):
        plan_adaptive(DOMAIN, Fraction(1, 10), **options)


def test_planner_refuses_a_budget_below_the_calibration_grid():
    with pytest.raises(InvalidArgumentError, match="rho is too small"):
        plan_adaptive(DOMAIN, Fraction(1, 2 ** 130), family="pep", workload="all-2way")


def test_planner_defaults():
    mwem = plan_adaptive(DOMAIN, Fraction(1, 10), family="mwem", workload="all-2way")
    pep = plan_adaptive(DOMAIN, Fraction(1, 10), family="pep", workload="all-2way")
    assert (mwem.mechanism, mwem.options["rounds"]) == ("mwem-explicit", 200)
    assert (pep.mechanism, pep.options["rounds"]) == ("pep", 50)
    assert pep.largest_batch_cells == 3 * 2 + 3 * 4 + 2 * 4


# ------------------------------------------------------------------ runs
@pytest.fixture(scope="module")
def adult_table():
    import dpcore
    from dpcore.encoding import encode_frame
    frame, schema = dpcore.datasets.adult()
    frame = frame.sample(8000, random_state=0).reset_index(drop=True)
    keep = ("sex", "race", "relationship", "marital-status")
    codes = encode_frame(frame, schema)[:, [schema.names.index(a) for a in keep]]
    sizes = schema.domain_dict()
    return Dataset(codes, Domain(keep, tuple(sizes[a] for a in keep)))


def workload_error(data, p, cliques):
    n = len(data.records)
    return float(np.mean([np.abs(data.project(c).datavector() / n
                                 - marginal(p, data.domain, c).ravel()).sum() for c in cliques]))


@pytest.mark.parametrize("family, rounds", [(MWEMUpdate(), 60), (PEPUpdate(), 15)])
def test_utility_beats_the_uniform_start_on_adult(adult_table, family, rounds):
    cliques = list(itertools.combinations(adult_table.domain.attrs, 2))
    uniform = np.full(adult_table.domain.shape, 1 / adult_table.domain.size())
    before = workload_error(adult_table, uniform, cliques)
    filt = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    result = adaptive_measurements(Curator(adult_table, filt, seed=0), cliques, family,
                                   rounds=rounds, seed=0)
    after = workload_error(adult_table, result.extras["histogram"], cliques)
    assert after < 0.5 * before, (before, after)
    assert abs(result.extras["total"] - len(adult_table.records)) < 200   # the noisy n^
    assert len(result.rounds) == rounds and result.ledger.spent == filt.budget


def test_zero_weight_marginals_are_never_candidates():
    domain = Domain(("a", "b"), (2, 3))
    data = Dataset(np.array([[0, 1], [1, 2], [1, 0]]), domain)
    result = adaptive_measurements(Curator(data, PrivacyFilter(Fraction(1, 2)), seed=0),
                                   [(("a",), 1.0), (("b",), 0.0)], MWEMUpdate(), rounds=3, seed=0)
    assert [r.clique for r in result.rounds] == [("a",)] * 3
    assert all(r.candidates == 1 for r in result.rounds)


def test_synthesizers_by_name_fit_sample_verify(tmp_path):
    import pandas as pd
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.choice(["u", "v"], 400), "y": rng.choice(["p", "q", "r"], 400),
                          "z": rng.choice(["s", "t"], 400)})
    schema = {"columns": {c: {"type": "categorical", "categories": sorted(set(frame[c]))}
                          for c in frame}}
    for name, rounds in (("mwem-explicit", 4), ("pep", 3)):
        synth = Synthesizer.create(name, epsilon=1.0, seed=1, progress=False, rounds=rounds,
                                   workload="all-2way", per_round=2, alpha=0.6,
                                   ledger_path=tmp_path / f"{name}.ledger").fit(frame, schema)
        assert synth.verify(allow_fixed_seed=True).ok and synth.ledger.spent <= synth.ledger.budget
        assert len(synth.result.rounds) == 2 * rounds
        assert list(synth.sample(25).columns) == ["x", "y", "z"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.data())
def test_lattice_marginals_equal_direct_sums(shape, data):
    from mechanisms.adaptive import _lattice_marginal
    domain = Domain(tuple(f"x{i}" for i in range(len(shape))), tuple(shape))
    p = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).random(domain.shape)
    tables: dict = {}
    cliques = data.draw(st.lists(st.lists(st.sampled_from(domain.attrs), min_size=1,
                                          unique=True).map(tuple), min_size=1, max_size=6))
    before = p.copy()
    for clique in cliques:    # shared memo, any order of attributes in the request
        axes = tuple(i for i, a in enumerate(domain.attrs) if a not in clique)
        got = _lattice_marginal(p, domain, clique, tables)
        np.testing.assert_allclose(got, p.sum(axis=axes), rtol=1e-12)
        np.testing.assert_allclose(marginal(p, domain, clique), p.sum(axis=axes), rtol=1e-12)
        marginal(p, domain, clique)[...] = -1.0   # a fresh table, never a view of p
        np.testing.assert_array_equal(p, before)
    _lattice_marginal(p, domain, domain.attrs, {})[...] = -1.0
    np.testing.assert_array_equal(p, before)
