"""PrivPGD's privacy over random small datasets, workloads and budgets: every sensitive read
follows a fresh charge (one for the noisy count, one per attribute pair), the ledger's exact
total equals the budget and the independent verifier accepts it; options a run cannot afford
are refused before the first charge."""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.accounting import PrivacyFilter, verify_ledger
from dpcore.errors import InvalidArgumentError
from dpcore.testing import AuditedCurator, TrackedDataset
from mechanisms.plan import plan_privpgd
from mechanisms.privpgd import attribute_pairs, privpgd
from mechanisms.workload import make_workload

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw):
    d = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    attrs = tuple(f"x{i}" for i in range(d))
    n = draw(st.integers(1, 25))
    records = np.array([draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n))
                        for s in shape], dtype=np.int64).T.reshape(n, d)
    subsets = [c for k in (2, 3) for c in itertools.combinations(attrs, k)]
    workload = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=4, unique=True))
    return (TrackedDataset(records, Domain(attrs, shape)), workload, draw(st.floats(1e-3, 100)),
            draw(st.floats(1e-12, 1e-3)), draw(st.integers(0, 2 ** 32)),
            draw(st.sampled_from(["consistent", "simplex", "clip"])))


@SETTINGS
@given(problems())
def test_privpgd_spends_exactly_its_budget_and_verifies(problem):
    data, workload, epsilon, delta, seed, projection = problem
    filt = PrivacyFilter.from_approx_dp(epsilon, delta)
    curator = AuditedCurator(data, filt, seed=seed)
    work = make_workload(data.domain, workload)
    result = privpgd(curator, workload=work, particles=50, epochs=3, projection=projection,
                     seed=seed)
    assert result.ledger.spent == filt.budget
    report = verify_ledger(result.ledger, allow_fixed_seed=True)   # seeded curators
    assert report.ok, report.reasons
    pairs = attribute_pairs(work)
    assert curator.audit == 1 + len(pairs)
    assert result.synthetic.records.shape[1] == len(data.domain.attrs)
    assert ((result.model.records >= 0) & (result.model.records < np.array(data.domain.shape))).all()
    # the projected targets are probability tables
    for table in result.extras["tables"]:
        assert (table >= 0).all() and table.sum() == pytest.approx(1.0)


def test_unaffordable_options_are_refused_before_any_charge():
    domain = Domain(("a", "b", "c"), (3, 4, 5))
    for options, match in [({"particles": 10 ** 9}, "MB"),
                           ({"particles": 10 ** 6, "epochs": 10 ** 6}, "exceeds"),
                           ({"particles": 0}, "particles"), ({"epochs": 1.5}, "epochs"),
                           ({"lr": -1}, "lr"), ({"keep": 0}, "keep"),
                           ({"projection": "sw1"}, "projection"),
                           ({"workload": [("a",)]}, "2-way")]:
        with pytest.raises(InvalidArgumentError, match=match):
            plan_privpgd(domain, 0.5, **options)


def test_synthesizer_refuses_before_the_ledger_exists(tmp_path):
    import pandas as pd
    from mechanisms import Synthesizer
    df = pd.DataFrame({"a": ["x", "y"] * 5, "b": ["u", "v", "v", "u", "u"] * 2})
    schema = {"columns": {"a": {"type": "categorical", "categories": ["x", "y"]},
                          "b": {"type": "categorical", "categories": ["u", "v"]}}}
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create("privpgd", epsilon=1.0, particles=10 ** 10, progress=False,
                               ledger_path=ledger)
    with pytest.raises(InvalidArgumentError, match="particles"):
        synth.fit(df, schema)
    assert not ledger.exists()
    fitted = Synthesizer.create("privpgd", epsilon=1.0, particles=200, epochs=5, seed=3,
                                progress=False).fit(df, schema)
    assert fitted.verify(allow_fixed_seed=True).ok
    sample = fitted.sample(30)
    assert list(sample.columns) == ["a", "b"] and len(sample) == 30


def test_the_mechanism_function_checks_before_its_first_charge():
    data = TrackedDataset(np.zeros((5, 2), dtype=np.int64), Domain(("a", "b"), (2, 2)))
    filt = PrivacyFilter.from_approx_dp(1.0, 1e-6)
    curator = AuditedCurator(data, filt, seed=0)
    for options in ({"particles": 10 ** 10}, {"epochs": 0}, {"projection": "sw1"}):
        with pytest.raises(InvalidArgumentError):
            privpgd(curator, workload="all-2way", **options)
    assert filt.spent == 0 and curator.audit == 0
