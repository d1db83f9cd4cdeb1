"""AIM's confidence bounds (AIM paper Sec. 5) hold empirically.

Over several independent runs we count, for every marginal in the downward closure of the
workload, whether its true L1 error ||M_r(D) − M_r(D̂)||₁ exceeds its 95 % bound.

False-failure rate: each bound fails with probability <= 5 % (Theorem 3 / Theorem 4 with the
union bound), so the expected fraction of failures is <= 5 %; the paper observed 0 % and the
bounds are loose by a factor 4-8 (its Sec. 6.6). The test fails when the observed fraction
exceeds 5 %; the seeds are fixed, so the outcome is deterministic.
"""
import numpy as np

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import PrivacyFilter
from mechanisms.aim import aim


def chain_data(n, seed):
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, 3, n)]
    for size in (4, 2, 3, 2):
        prev = cols[-1]
        cols.append(np.where(rng.random(n) < 0.7, prev % size, rng.integers(0, size, n)))
    return Dataset(np.stack(cols, axis=1), Domain(("a", "b", "c", "d", "e"), (3, 4, 2, 3, 2)))


def test_95_percent_bounds_cover_the_true_errors():
    data = chain_data(3000, seed=0)
    failures = checked = 0
    supported = unsupported = 0
    for seed in range(4):
        curator = Curator(data, PrivacyFilter.from_approx_dp(1.0, 1e-9), seed=100 + seed)
        result = aim(curator, "all-2way", seed=seed, confidence=0.95, estimate_options={"max_iters": 200})
        bounds = result.confidence_bounds
        cliques = list(bounds)
        for clique, true, synth in zip(cliques, data.marginals(cliques), result.synthetic.marginals(cliques)):
            error = float(np.abs(true.datavector() - synth.datavector()).sum())
            b = bounds[clique]
            checked += 1
            failures += error > b.bound
            supported += b.supported
            unsupported += not b.supported
    assert checked == 4 * 15
    assert supported > 0 and unsupported > 0     # both Corollary 1 and Corollary 2 exercised
    assert failures / checked <= 0.05
