"""Privacy properties of Adaptive Measurements (MWEM and PEP on explicit histograms, RAP-softmax
and GEM on product mixtures) over random
small datasets, workloads, budgets and (T, alpha, k): the ledger's exact total equals the
budget and verifies, it holds k T selection/measurement pairs with the calibrated parameters
and one negligible retired residue, and every sensitive read follows a fresh charge (the
audited curator of dpcore.testing)."""
import itertools
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.accounting import PrivacyFilter, ZCDPEvent, verify_ledger
from dpcore.accounting.calibration import adaptive_measurements_round
from dpcore.testing import AuditedCurator, TrackedDataset
from mechanisms.adaptive import MWEMUpdate, PEPUpdate, adaptive_measurements

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw, max_attrs=4):
    d = draw(st.integers(1, max_attrs))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=d, max_size=d)))
    attrs = tuple(f"x{i}" for i in range(d))
    n = draw(st.integers(0, 25))
    cols = [draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)) for s in shape]
    records = np.array(cols, dtype=np.int64).T.reshape(n, d)
    subsets = [c for k in (1, 2, 3) for c in itertools.combinations(attrs, k)]
    workload = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=5, unique=True))
    epsilon = draw(st.floats(1e-3, 100))
    delta = draw(st.floats(1e-12, 1e-3))
    rounds = draw(st.integers(1, 5))
    per_round = draw(st.integers(1, len(workload)))
    alpha = draw(st.floats(0.01, 0.99))
    seed = draw(st.integers(0, 2 ** 32))
    return (TrackedDataset(records, Domain(attrs, shape)), workload, epsilon, delta, rounds,
            per_round, alpha, seed)


def run(family, problem):
    data, workload, epsilon, delta, rounds, per_round, alpha, seed = problem
    filt = PrivacyFilter.from_approx_dp(epsilon, delta)
    budget = filt.budget
    curator = AuditedCurator(data, filt, seed=seed)
    result = adaptive_measurements(curator, workload, family, rounds=rounds,
                                   per_round=per_round, alpha=alpha, seed=seed)
    ledger = result.ledger
    assert ledger.spent == budget, (ledger.spent, budget)
    report = verify_ledger(ledger, allow_fixed_seed=True)   # seeded curators, for reproducibility
    assert report.ok, report.reasons
    assert report.rho_spent == budget
    kinds = [e.what["release"] for e in ledger.entries if isinstance(e.what, dict)]
    assert kinds == ["selection", "marginal"] * (rounds * per_round) + ["none"], kinds
    epsilon_f, sigma_f = adaptive_measurements_round(budget, rounds, per_round, alpha)
    assert all(r.epsilon == epsilon_f and r.sigma == sigma_f for r in result.rounds)
    retired = [e for e in ledger.entries if isinstance(e.event, ZCDPEvent)]
    assert len(retired) == 1 and Fraction(retired[0].event.rho) <= budget * Fraction(1, 10 ** 12)
    assert curator.state["reads"] == 2 * rounds * per_round   # one per charged release
    if getattr(family, "histogram", False):
        p = result.extras["histogram"]
        assert p.shape == data.domain.shape and abs(p.sum() - 1) < 1e-9 and p.min() >= 0
    else:
        assert result.synthetic.records.shape[1] == len(data.domain)


@SETTINGS
@given(problems())
def test_mwem_spends_exactly_its_budget(problem):
    run(MWEMUpdate(), problem)


@SETTINGS
@given(problems())
def test_pep_spends_exactly_its_budget(problem):
    run(PEPUpdate(), problem)


@SETTINGS
@given(problems())
def test_rap_softmax_spends_exactly_its_budget(problem):
    from mechanisms.rap import RAPSoftmax
    run(RAPSoftmax(rows=8, steps=3), problem)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_gem_spends_exactly_its_budget(problem):
    from mechanisms.gem import GEM
    run(GEM(batch=8, latent=4, hidden=(8,), steps=3), problem)
