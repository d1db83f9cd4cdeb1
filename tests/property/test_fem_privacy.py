"""FEM's and sepFEM's privacy over random small datasets, workloads and budgets, with the MILP oracle and
with deliberately bad oracles: the ledger's exact total equals the budget, the verifier accepts
it, and every sensitive read follows a fresh charge. Privacy never depends on the oracle."""
import itertools
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.accounting import PrivacyFilter, verify_ledger
from dpcore.testing import AuditedCurator, TrackedDataset
from mechanisms.fem import fem

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw):
    d = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=d, max_size=d)))
    attrs = tuple(f"x{i}" for i in range(d))
    n = draw(st.integers(1, 25))
    records = np.array([draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n))
                        for s in shape], dtype=np.int64).T.reshape(n, d)
    subsets = [c for k in (1, 2, 3) for c in itertools.combinations(attrs, k)]
    workload = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=4, unique=True))
    return (TrackedDataset(records, Domain(attrs, shape)), workload, draw(st.floats(1e-3, 100)),
            draw(st.floats(1e-12, 1e-3)), draw(st.integers(0, 2 ** 32)),
            draw(st.one_of(st.none(), st.floats(1, 100))))


def run(problem, oracle=None, perturbation="exponential"):
    data, workload, epsilon, delta, seed, total = problem
    filt = PrivacyFilter.from_approx_dp(epsilon, delta)
    curator = AuditedCurator(data, filt, seed=seed)
    result = fem(curator, workload, rounds=3, samples=2, total=total, oracle=oracle, seed=seed,
                 time_limit=5.0, perturbation=perturbation)
    assert result.ledger.spent == filt.budget
    report = verify_ledger(result.ledger, allow_fixed_seed=True)   # seeded curators
    assert report.ok, report.reasons
    assert curator.audit == 3 + (total is None)   # three selections (+ the noisy count)
    assert result.synthetic.records.shape[1] == len(data.domain.attrs)
    return result


@SETTINGS
@given(problems(), st.sampled_from(["exponential", "separator"]))
def test_fem_and_sepfem_spend_exactly_their_budget_and_verify(problem, perturbation):
    run(problem, perturbation=perturbation)


def _constant(program):
    return np.zeros(len(program.shape), dtype=np.int64)


def _worst(program):
    # the argmin of the objective: a deliberately bad (but feasible) answer
    from itertools import product
    best = min(product(*(range(k) for k in program.shape)), key=lambda r: program.value(np.array(r)))
    return np.array(best, dtype=np.int64)


@SETTINGS
@given(problems(), st.sampled_from([_constant, _worst]), st.sampled_from(["exponential", "separator"]))
def test_a_bad_oracle_still_gives_a_verifying_ledger(problem, oracle, perturbation):
    run(problem, oracle, perturbation)


def run_dqrs(problem, oracle=None):
    from mechanisms.dqrs import dqrs
    data, workload, epsilon, delta, seed, total = problem
    filt = PrivacyFilter.from_approx_dp(epsilon, delta)
    curator = AuditedCurator(data, filt, seed=seed)
    result = dqrs(curator, workload, rounds=4, samples=3, total=total, oracle=oracle, seed=seed,
                  time_limit=5.0)
    assert result.ledger.spent == filt.budget
    report = verify_ledger(result.ledger, allow_fixed_seed=True)   # seeded curators
    assert report.ok, report.reasons
    T = result.extras["rounds"]
    # per round but the last: one rejection read and one read for the fresh draws
    assert curator.audit == 2 * (T - 1) + (total is None)
    assert len(result.synthetic.records) == T


@SETTINGS
@given(problems(), st.sampled_from([None, _constant, _worst]))
def test_dqrs_spends_exactly_its_budget_and_verifies_with_any_oracle(problem, oracle):
    run_dqrs(problem, oracle)
