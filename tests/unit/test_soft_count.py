"""Curator.measure_soft_count (PrivPGD's protected statistic, Sec. 4.4): the exact sum it
noises against a brute-force one, the charge before the read, refusals before any charge, and
the verifier's checks of the ledger entry it writes."""
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Dataset, Domain
from dpcore.accounting import GaussianEvent, PrivacyFilter, verify_ledger
from dpcore.curator import SOFT_COUNT_GRID, Curator
from dpcore.errors import DpcoreTypeError, InvalidArgumentError
from dpcore.testing import AuditedCurator, TrackedDataset

from .test_ledger_verify import _fails, _grid, _rechain

DOMAIN = Domain(("a", "b", "c"), (3, 4, 5))


def _brute(records, scores, threshold, sharpness, weights=None):
    total = 0.0
    for i, row in enumerate(records):
        score = sum(float(np.asarray(scores[a])[row[DOMAIN.attrs.index(a)]]) for a in scores)
        t = sharpness * (score - threshold)        # the logistic function, in either tail
        value = 1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))
        total += value * (1.0 if weights is None else weights[i])
    return total


@st.composite
def problems(draw):
    n = draw(st.integers(0, 40))
    records = np.array([[draw(st.integers(0, k - 1)) for k in DOMAIN.shape] for _ in range(n)],
                       dtype=np.int64).reshape(n, 3)
    named = draw(st.lists(st.sampled_from(DOMAIN.attrs), min_size=1, max_size=3, unique=True))
    real = st.floats(-50, 50, allow_nan=False)
    scores = {a: [draw(real) for _ in range(DOMAIN[a])] for a in named}
    weights = draw(st.one_of(st.none(), st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    return records, scores, draw(real), draw(st.floats(1e-3, 50)), weights


@settings(max_examples=40, deadline=None)
@given(problems())
def test_the_release_is_the_brute_force_soft_count_plus_small_noise(problem):
    records, scores, threshold, sharpness, weights = problem
    data = TrackedDataset(records, DOMAIN, weights)
    curator = AuditedCurator(data, PrivacyFilter(10_000, delta=1e-6), seed=1)
    sigma = 0.01      # rho 5000, within the filter's cap
    got = curator.measure_soft_count(scores, threshold, sigma, sharpness=sharpness)
    assert curator.audit == 1
    # rounding: at most 1/(2G) a record; noise: 8 sigma is beyond any realistic draw
    exact = _brute(records, scores, threshold, sharpness, weights)
    assert abs(got - exact) <= len(records) / SOFT_COUNT_GRID + 8 * sigma, (got, exact)
    (entry,) = curator.privacy_filter.ledger.entries
    assert entry.what["release"] == "soft_count"
    assert entry.what["attrs"] == [a for a in DOMAIN.attrs if a in scores]
    assert entry.rho >= Fraction(1, 2) / Fraction(sigma) ** 2


def test_the_noise_has_the_charged_scale():
    records = np.zeros((10, 3), dtype=np.int64)
    curator = Curator(Dataset(records, DOMAIN), PrivacyFilter(1000, delta=1e-6), seed=3)
    draws = [curator.measure_soft_count({"a": [0.0, 0.0, 0.0]}, 0.0, 2.0) for _ in range(4000)]
    # every record adds sigmoid(0) = 1/2: the sum is 5; the noise is N_Z(0, (2 G)^2) / G. Over
    # 4000 draws the sample deviation is within ~1.1 % (one standard error) of the true one:
    # 4 % catches noise 5 % below the charge (and the seed makes the check reproducible)
    assert np.mean(draws) == pytest.approx(5.0, abs=4 * 2.0 / 63)
    assert np.std(draws) == pytest.approx(2.0, rel=0.04)


def test_a_non_finite_term_counts_nothing():
    # honest inputs cannot make one (the curator checks them); the kernel still keeps every
    # term in [0, G]: a NaN score would otherwise cast to INT64_MIN
    data = Dataset(np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]]), DOMAIN)
    got = data.soft_count([np.array([np.nan, 50.0, -50.0]), None, None], 0.0, 5.0, SOFT_COUNT_GRID)
    assert got == SOFT_COUNT_GRID       # NaN -> 0, sigmoid(250) -> G, sigmoid(-250) -> 0


def test_the_scalars_are_converted_before_the_tables_are_checked():
    class Sneaky(float):        # converting it changes the caller's table after a check
        def __float__(self):
            table[1] = np.nan
            return 0.0
    table = np.array([0.0, 1.0, 2.0])
    curator = Curator(Dataset(np.zeros((3, 3), dtype=np.int64), DOMAIN), PrivacyFilter(1.0, delta=1e-6))
    # the threshold is converted first, so the table is checked as it is after the change
    with pytest.raises(InvalidArgumentError, match="finite"):
        curator.measure_soft_count({"a": table}, Sneaky(0.0), 1.0)
    assert curator.privacy_filter.spent == 0


def test_compressed_scores_are_those_of_the_merged_codes():
    rng = np.random.default_rng(0)
    records = np.stack([rng.integers(0, k, 200) for k in DOMAIN.shape], axis=1)
    big = PrivacyFilter(10_000, delta=1e-6)
    plain = Curator(Dataset(records, DOMAIN), big, seed=0)
    merge = np.array([0, 0, 1, 1, 2])
    view = plain.compress({"c": merge})
    coarse = {"a": [0.1, 0.2, 0.3], "c": [1.0, -1.0, 0.5]}
    fine = {"a": coarse["a"], "c": np.asarray(coarse["c"])[merge]}
    got = view.measure_soft_count(coarse, 0.2, 0.01)
    assert got == pytest.approx(_brute(records, fine, 0.2, 5.0), abs=0.1)


@pytest.mark.parametrize("scores, threshold, sigma, sharpness, error", [
    ({"zz": [0.0]}, 0.0, 1.0, 5.0, InvalidArgumentError),
    ({"a": [0.0, 1.0]}, 0.0, 1.0, 5.0, InvalidArgumentError),            # 2 values for 3 codes
    ({"a": [0.0, float("nan"), 1.0]}, 0.0, 1.0, 5.0, InvalidArgumentError),
    ({"a": [0.0, 2.0 ** 41, 1.0]}, 0.0, 1.0, 5.0, InvalidArgumentError),
    ({"a": ["x", "y", "z"]}, 0.0, 1.0, 5.0, InvalidArgumentError),
    ({}, 0.0, 1.0, 5.0, DpcoreTypeError),
    ([0.0, 1.0, 2.0], 0.0, 1.0, 5.0, DpcoreTypeError),
    ({"a": [0.0, 1.0, 2.0]}, float("inf"), 1.0, 5.0, InvalidArgumentError),
    ({"a": [0.0, 1.0, 2.0]}, "1", 1.0, 5.0, DpcoreTypeError),
    ({"a": [0.0, 1.0, 2.0]}, 0.0, 0.0, 5.0, InvalidArgumentError),
    ({"a": [0.0, 1.0, 2.0]}, 0.0, 1e303, 5.0, InvalidArgumentError),     # sigma G overflows
    ({"a": [0.0, 1.0, 2.0]}, 0.0, 1.0, 0.0, InvalidArgumentError),
    ({"a": [0.0, 1.0, 2.0]}, 0.0, 1.0, 2.0 ** 21, InvalidArgumentError),
])
def test_bad_arguments_are_refused_before_any_charge(scores, threshold, sigma, sharpness, error):
    curator = Curator(Dataset(np.zeros((3, 3), dtype=np.int64), DOMAIN), PrivacyFilter(1.0, delta=1e-6))
    with pytest.raises(error):
        curator.measure_soft_count(scores, threshold, sigma, sharpness=sharpness)
    assert curator.privacy_filter.spent == 0 and curator.reads == 0


class _Counted:
    """A dataset of counted marginals only (what the stream and Dask engines hand over)."""
    domain = DOMAIN

    def marginals(self, attr_sets):
        raise AssertionError("not read here")


def test_a_curator_without_records_refuses_before_charging():
    curator = Curator(_Counted(), PrivacyFilter(1.0, delta=1e-6))
    assert not curator.holds_records
    assert Curator(Dataset(np.zeros((1, 3), dtype=np.int64), DOMAIN), PrivacyFilter(1.0)).holds_records
    with pytest.raises(InvalidArgumentError, match="in-memory engine"):
        curator.measure_soft_count({"a": [0.0, 1.0, 2.0]}, 0.5, 1.0)
    assert curator.privacy_filter.spent == 0


# ------------------------------------------------------------------ the verifier's side
@pytest.fixture
def soft():
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    f.open_run(f.budget, {"mechanism": "test", "domain": {"age": 10, "sex": 2}})
    f.charge(GaussianEvent(20.0), what={"release": "soft_count", "attrs": ["age", "sex"],
                                         "threshold": 0.5, "sharpness": 5.0,
                                         "noise": "discrete_gaussian"})
    f.close_run("completed")
    doc = f.ledger.to_dict()
    assert verify_ledger(doc).ok, verify_ledger(doc).reasons
    return doc


def test_a_soft_count_claiming_a_smaller_sensitivity_fails(soft):
    entry = soft["entries"][1]
    entry["event"]["sensitivity"] = (0.5).hex()
    entry["rho"] = str(_grid(Fraction(1, 4) / (2 * Fraction(20) ** 2)))
    _fails(_rechain(soft), "soft count has L2 sensitivity 1")


@pytest.mark.parametrize("change, pattern", [
    ({"noise": "gaussian"}, "noise is discrete_gaussian"),
    ({"sharpness": -5.0}, "states its sharpness"),
    ({"sharpness": 2.0 ** 21}, "states its sharpness"),
    ({"threshold": 1e300}, "states its threshold"),
    ({"sensitivity": 0.5}, "states nothing else"),
    ({"weights": [0.5]}, "states nothing else"),
    ({"attrs": ["age", "height"]}, "not in the run's domain"),
    ({"attrs": []}, "non-empty list"),
    ({"threshold": None}, "states its threshold"),
    ({"sharpness": "5"}, "states its sharpness"),
])
def test_a_soft_count_entry_must_state_what_it_released(soft, change, pattern):
    soft["entries"][1]["what"].update(change)
    _fails(_rechain(json.loads(json.dumps(soft))), pattern)


def test_a_soft_count_must_be_a_gaussian_event(soft):
    entry = soft["entries"][1]
    entry["event"] = {"type": "ZCDPEvent", "rho": "1/1000000"}
    entry["rho"] = str(_grid(Fraction(1, 10 ** 6)))
    _fails(_rechain(soft), "must be charged as GaussianEvent")
