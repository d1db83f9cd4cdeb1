"""Utility on Adult (issue 5's acceptance; AIM paper Sec. 6.1 setting): ALL-3WAY workload,
delta = 1e-9, error = Definition 2 with unit weights (``dpcore.evaluation.evaluate``).

AIM's mean error over three seeds at eps = 1 must be below MST's, MWEM+PGM's and the
independent baseline's. Measured here (bench/results): AIM 0.148, MST 0.21, MWEM 0.21,
independent 0.38, so the margins are wide; the seeds are fixed, so the outcome is
deterministic. A few minutes. How the error falls with eps over {0.1, 1, 10} is measured by
bench/run.py (AIM at eps = 10 alone takes several minutes), not here.
"""
import os

import numpy as np
import pytest

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import PrivacyFilter
from dpcore.evaluation import all_k_way, evaluate
from mechanisms.aim import aim
from mechanisms.independent import independent
from mechanisms.mst import mst
from mechanisms.mwem import mwem

ADULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "adult")
DELTA = 1e-9


@pytest.fixture(scope="module")
def adult():
    domain = Domain.from_json(os.path.join(ADULT, "adult-domain.json"))
    return Dataset.from_csv(os.path.join(ADULT, "adult.csv"), domain)


def error(data, name, epsilon, seed):
    curator = Curator(data, PrivacyFilter.from_approx_dp(epsilon, DELTA), seed=seed)
    workload = all_k_way(list(data.domain.attrs), 3)
    runs = {"aim": lambda: aim(curator, workload, seed=seed),
            "mst": lambda: mst(curator, seed=seed),
            "mwem": lambda: mwem(curator, workload, rounds=len(data.domain), seed=seed),
            "independent": lambda: independent(curator, seed=seed)}
    result = runs[name]()
    assert result.ledger.spent <= curator.privacy_filter.budget
    return evaluate(np.asarray(data.records), np.asarray(result.synthetic.records),
                    data.domain.to_dict(), [list(c) for c, _ in workload]).workload_error


@pytest.mark.slow
def test_aim_beats_mst_mwem_and_independent_over_three_seeds(adult):
    mean = {name: np.mean([error(adult, name, 1.0, seed) for seed in (0, 1, 2)])
            for name in ("aim", "mst", "mwem", "independent")}
    assert mean["aim"] < min(mean["mst"], mean["mwem"], mean["independent"]), mean
