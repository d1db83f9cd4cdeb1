"""PrivPGD's protected statistic (Sec. 4.4, App. B): the regulariser's gradient against finite
differences, its charge (one soft count, the budget still spent exactly, the ledger verifies),
its refusals before any charge, and its effect (a strong lambda moves the statistic away)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.accounting import PrivacyFilter, verify_ledger
from dpcore.errors import InvalidArgumentError
from dpcore.testing import AuditedCurator, TrackedDataset
from mechanisms.plan import plan_privpgd
from mechanisms.privpgd import ProtectedQuery, add_regulariser_gradient, attribute_pairs, privpgd
from mechanisms.workload import make_workload

DOMAIN = Domain(("a", "b", "c"), (3, 4, 5))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32), st.integers(2, 30), st.floats(-1, 1), st.floats(0.1, 10),
       st.floats(0.01, 0.99))
def test_the_gradient_is_the_finite_difference_of_lambda_r(seed, m, threshold, sharpness, target):
    rng = np.random.default_rng(seed)
    x = np.asfortranarray(rng.random((m, 3)))
    theta = np.array([rng.normal(), 0.0, rng.normal()])
    protect = ProtectedQuery({"a": theta[0], "c": theta[2]}, threshold, strength=0.7,
                             sharpness=sharpness)
    grad = np.zeros_like(x)
    loss = add_regulariser_gradient(x, grad, protect, theta, target)
    assert not grad[:, 1].any()          # a column with theta 0 gets nothing
    h = 1e-6
    for i, c in [(0, 0), (m - 1, 2), (m // 2, 0)]:
        up, down = x.copy(order="F"), x.copy(order="F")
        up[i, c] += h
        down[i, c] -= h
        scratch = np.zeros_like(x)
        numeric = (add_regulariser_gradient(up, scratch, protect, theta, target) -
                   add_regulariser_gradient(down, scratch, protect, theta, target)) / (2 * h)
        assert grad[i, c] == pytest.approx(numeric, rel=1e-4, abs=1e-6 * max(1.0, abs(loss)))


@st.composite
def problems(draw):
    n = draw(st.integers(1, 25))
    records = np.array([[draw(st.integers(0, k - 1)) for k in DOMAIN.shape] for _ in range(n)],
                       dtype=np.int64).reshape(n, 3)
    named = draw(st.lists(st.sampled_from(DOMAIN.attrs), min_size=1, max_size=3, unique=True))
    weights = {a: draw(st.floats(0.1, 2.0)) for a in named}
    return (TrackedDataset(records, DOMAIN), weights, draw(st.floats(1e-2, 50)),
            draw(st.integers(0, 2 ** 32)), draw(st.floats(0.01, 0.5)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_a_protected_run_spends_exactly_its_budget_and_verifies(problem):
    data, weights, epsilon, seed, share = problem
    filt = PrivacyFilter.from_approx_dp(epsilon, 1e-6)
    curator = AuditedCurator(data, filt, seed=seed)
    work = make_workload(DOMAIN, "all-2way")
    protect = {"weights": weights, "threshold": 0.5, "strength": 1.0, "share": share}
    result = privpgd(curator, workload=work, particles=40, epochs=3, seed=seed, protect=protect)
    assert result.ledger.spent == filt.budget
    assert verify_ledger(result.ledger, allow_fixed_seed=True).ok
    assert curator.audit == 2 + len(attribute_pairs(work))
    kinds = [e.what["release"] for e in result.ledger.entries if e.kind == "charge"]
    assert kinds.count("soft_count") == 1 and kinds[1] == "soft_count"
    assert 0.0 <= result.extras["protected"]["estimate"] <= 1.0


@pytest.mark.parametrize("protect, match", [
    ({"weights": {"zz": 1.0}, "threshold": 0.5}, "not in the schema"),
    ({"weights": {"a": 0.0}, "threshold": 0.5}, "non-zero"),
    ({"weights": {"a": float("nan")}, "threshold": 0.5}, "weights"),
    ({"weights": {"a": 1.0}}, "threshold required"),
    ({"weights": {"a": 1.0}, "threshold": 0.5, "lambda": 2}, "keys"),
    ({"weights": {"a": 1.0}, "threshold": 0.5, "share": 0.995}, "leave budget"),
    ({"weights": {"a": 1.0}, "threshold": 0.5, "strength": -1}, "strength"),
    ({"weights": {"a": 1.0}, "threshold": 0.5, "sharpness": 0}, "sharpness"),
    ({"weights": [1.0], "threshold": 0.5}, "weights"),
    ({"weights": {"a": 10 ** 400}, "threshold": 0.5}, "weights"),            # float() overflows
    ({"weights": {"a": 1.0}, "threshold": 0.5, "share": 1e-300}, "buys no Gaussian"),
    ("age > 40", "mapping"),
])
def test_bad_protect_options_are_refused_before_any_charge(protect, match):
    with pytest.raises(InvalidArgumentError, match=match):
        plan_privpgd(DOMAIN, 0.5, protect=protect)
    data = TrackedDataset(np.zeros((5, 3), dtype=np.int64), DOMAIN)
    filt = PrivacyFilter.from_approx_dp(1.0, 1e-6)
    curator = AuditedCurator(data, filt, seed=0)
    with pytest.raises(InvalidArgumentError, match=match):
        privpgd(curator, workload="all-2way", particles=10, epochs=1, protect=protect)
    assert filt.spent == 0 and curator.audit == 0


def test_a_curator_without_records_refuses_protect_before_any_charge():
    from dpcore.curator import Curator

    class Counted:             # counted marginals only: the stream and Dask engines
        domain = DOMAIN

        def marginals(self, attr_sets):
            raise AssertionError("read before the refusal")

    filt = PrivacyFilter.from_approx_dp(1.0, 1e-6)
    with pytest.raises(InvalidArgumentError, match="in-memory engine"):
        privpgd(Curator(Counted(), filt), workload="all-2way", particles=10, epochs=1,
                protect={"weights": {"a": 1.0}, "threshold": 0.5})
    assert filt.spent == 0


def test_a_strong_regulariser_moves_the_statistic_away_from_its_estimate():
    rng = np.random.default_rng(5)
    records = np.stack([rng.integers(0, k, 3000) for k in DOMAIN.shape], axis=1)
    records[:, 2] = np.minimum(records[:, 0] + rng.integers(0, 2, 3000), 4)   # some structure
    gaps = {}
    for strength in (0.0, 500.0):      # lambda / m = 0.25
        curator = AuditedCurator(TrackedDataset(records, DOMAIN),
                                 PrivacyFilter.from_approx_dp(20.0, 1e-6), seed=1)
        result = privpgd(curator, workload="all-2way", particles=2000, epochs=40, seed=2,
                         protect={"weights": {"a": 1.0, "c": 1.0}, "threshold": 1.0,
                                  "strength": strength})
        p = result.extras["protected"]
        gaps[strength] = abs(p["synthetic"] - p["estimate"])
    # unprotected, the particles reproduce the statistic; protected, it is pushed away
    assert gaps[0.0] < 0.05 < 0.1 < gaps[500.0] and gaps[500.0] > 3 * gaps[0.0], gaps


def test_numpy_numbers_in_the_spec_reach_the_ledger_as_json(tmp_path):
    import pandas as pd
    from mechanisms import Synthesizer
    df = pd.DataFrame({"a": ["x", "y"] * 10, "b": ["u", "v", "v", "u", "u"] * 4})
    schema = {"columns": {"a": {"type": "categorical", "categories": ["x", "y"]},
                          "b": {"type": "categorical", "categories": ["u", "v"]}}}
    protect = {"weights": {"a": np.float32(1.5)}, "threshold": np.float64(0.5),
               "strength": np.int64(2)}
    synth = Synthesizer.create("privpgd", epsilon=1.0, particles=50, epochs=2, progress=False,
                               protect=protect, ledger_path=tmp_path / "ledger.json")
    synth.fit(df, schema)
    assert synth.verify().ok
    with pytest.raises(InvalidArgumentError, match="reads records"):
        Synthesizer.create("privpgd", epsilon=1.0, protect=protect).fit_distributed("x*.csv", schema)
