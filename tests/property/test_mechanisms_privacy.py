"""Privacy properties of every mechanism, over random small datasets, workloads and budgets.

For each run: the ledger's exact total never exceeds the budget and equals it (AIM, MST, MWEM,
Independent spend everything; the retired calibration residue is a few ulps), the independent
verifier accepts the ledger, and every sensitive read happened inside a charged curator call.
"""
import itertools
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import Dataset, Domain
from dpcore.accounting import PrivacyFilter, ZCDPEvent, verify_ledger
from dpcore.testing import AuditedCurator, TrackedDataset
from mechanisms.aim import aim
from mechanisms.independent import independent
from mechanisms.mst import mst
from mechanisms.mwem import mwem

FAST = {"max_iters": 30}
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw, max_attrs=4):
    d = draw(st.integers(1, max_attrs))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=d, max_size=d)))
    attrs = tuple(f"x{i}" for i in range(d))
    n = draw(st.integers(1, 25))
    cols = [draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)) for s in shape]
    records = np.array(cols, dtype=np.int64).T.reshape(n, d)
    subsets = [c for k in (1, 2, 3) for c in itertools.combinations(attrs, k)]
    workload = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=5, unique=True))
    epsilon = draw(st.floats(1e-3, 100))
    delta = draw(st.floats(1e-12, 1e-3))
    seed = draw(st.integers(0, 2 ** 32))
    return TrackedDataset(records, Domain(attrs, shape)), workload, epsilon, delta, seed


def check(curator, result, budget):
    ledger = result.ledger
    assert ledger.spent == budget, (ledger.spent, budget)
    report = verify_ledger(ledger, allow_fixed_seed=True)   # seeded curators, for reproducibility
    assert report.ok, report.reasons
    assert report.rho_spent == budget
    # The retired residue is calibration rounding only, never a real share of the budget.
    retired = [e for e in ledger.entries if isinstance(e.event, ZCDPEvent)]
    assert len(retired) <= 1
    assert all(Fraction(e.event.rho) <= budget * Fraction(1, 10 ** 12) for e in retired)
    assert curator.audit >= 1
    assert len(result.synthetic.domain.attrs) == len(curator.domain.attrs)


def run(mechanism, problem, **kwargs):
    data, workload, epsilon, delta, seed = problem
    filt = PrivacyFilter.from_approx_dp(epsilon, delta)
    curator = AuditedCurator(data, filt, seed=seed)
    result = mechanism(curator, **kwargs, seed=seed)
    check(curator, result, filt.budget)
    return result


@SETTINGS
@given(problems())
def test_aim_spends_exactly_its_budget(problem):
    result = run(lambda c, **k: aim(c, problem[1], estimate_options=FAST, **k), problem)
    assert all(np.isfinite(b.bound) or not b.supported for b in result.confidence_bounds.values())


@SETTINGS
@given(problems())
def test_mst_spends_exactly_its_budget(problem):
    run(lambda c, **k: mst(c, estimate_options=FAST, **k), problem)


@SETTINGS
@given(problems(), st.booleans())
def test_mst_with_compression_spends_exactly_its_budget(problem, compress):
    run(lambda c, **k: mst(c, compress=compress, estimate_options=FAST, **k), problem)


@SETTINGS
@given(problems())
def test_nist_mst_mode_spends_exactly_its_budget(problem):
    public = Dataset(np.zeros((3, len(problem[0].domain)), dtype=np.int64), problem[0].domain)
    run(lambda c, **k: mst(c, public=public, estimate_options=FAST, **k), problem)


@SETTINGS
@given(problems(), st.integers(1, 6))
def test_mwem_spends_exactly_its_budget(problem, rounds):
    run(lambda c, **k: mwem(c, problem[1], rounds=rounds, estimate_options=FAST, **k), problem)


@SETTINGS
@given(problems())
def test_independent_spends_exactly_its_budget(problem):
    run(lambda c, **k: independent(c, **k), problem)
