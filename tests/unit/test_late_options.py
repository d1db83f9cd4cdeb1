"""Audit 15 F2 and review 15 M2: the low-level mechanism functions checked some options only
after charging (synthetic_rows, sample_method, seed, MST's weights); every one is now refused
before any charge."""
import numpy as np
import pytest

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import PrivacyFilter
from dpcore.errors import InvalidArgumentError
from mechanisms.adaptive import MWEMUpdate, adaptive_measurements
from mechanisms.aim import aim
from mechanisms.dqrs import dqrs
from mechanisms.fem import fem
from mechanisms.independent import independent
from mechanisms.mst import mst
from mechanisms.mwem import mwem

DOMAIN = Domain(("a", "b", "c"), (3, 2, 2))
RUNS = {
    "aim": lambda c, **o: aim(c, "all-2way", **o),
    "mwem": lambda c, **o: mwem(c, "all-2way", rounds=2, **o),
    "independent": lambda c, **o: independent(c, **o),
    "mst": lambda c, **o: mst(c, **o),
    "mwem-explicit": lambda c, **o: adaptive_measurements(c, "all-2way", MWEMUpdate(), rounds=2,
                                                          **o),
    "fem": lambda c, **o: fem(c, "all-2way", rounds=2, samples=2, time_limit=2, **o),
    "dqrs": lambda c, **o: dqrs(c, "all-2way", rounds=2, samples=2, time_limit=2, **o),
}
BAD = [({"synthetic_rows": -5}, "synthetic_rows must be >= 1"),
       ({"synthetic_rows": 2.5}, "synthetic_rows must be an int"),
       ({"synthetic_rows": "x"}, "synthetic_rows must be an int"),
       ({"sample_method": "bogus"}, "sample_method must be one of"),
       ({"seed": "bad"}, "seed must be an int"), ({"seed": 1.5}, "seed must be an int"),
       ({"seed": -1}, "seed must be in"), ({"seed": 2 ** 70}, "seed must be in")]


def _curator():
    data = Dataset(np.random.default_rng(0).integers(0, 2, size=(200, 3)), DOMAIN)
    return Curator(data, PrivacyFilter.from_approx_dp(1.0, 1e-9))


# fem and dqrs release records: they take no sample_method
CASES = [(name, options, message) for name in sorted(RUNS) for options, message in BAD
         if not (name in ("fem", "dqrs") and "sample_method" in options)]


@pytest.mark.parametrize("name,options,message", CASES)
def test_bad_output_options_are_refused_before_any_charge(name, options, message):
    curator = _curator()
    with pytest.raises(InvalidArgumentError, match=message):
        RUNS[name](curator, **options)
    assert curator.privacy_filter.spent == 0


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), 0.0, -1.0, True, "2"])
def test_mst_weights_are_checked_before_any_charge(weight):
    curator = _curator()
    with pytest.raises(InvalidArgumentError, match=r"weights\[.*finite number > 0"):
        mst(curator, weights={("a", "b"): weight})
    assert curator.privacy_filter.spent == 0


def test_good_output_options_still_run():
    curator = _curator()
    result = independent(curator, synthetic_rows=7, sample_method="sample", seed=1)
    assert len(result.synthetic.records) == 7

