"""Claim (soft count): the release of Curator.measure_soft_count, S = sum over records r of
v_r with v_r = min(max(rint(G w_r sigmoid(t_r)), 0), G) (0 where that term is not finite),
G = SOFT_COUNT_GRID, w_r in [0, 1] the record's weight and t_r any real, has sensitivity G
(1 in count units, S / G) under
adding or removing one record; S + Z with Z the exact discrete Gaussian of variance
parameter s^2 >= (sigma G)^2 is 1 / (2 sigma^2)-zCDP, the cost of GaussianEvent(sigma, 1)
the curator charges first.

Source: Donhauser et al. 2024 (PrivPGD) Sec. 4.4 and App. B (the smoothed threshold query and
its Gaussian-mechanism estimate); Canonne, Kamath & Steinke 2020 Thm. 4 (discrete Gaussian:
an integer query of sensitivity Delta costs Delta^2 / (2 s^2) zCDP); proofs/discrete_gaussian.py.

Preconditions: the scores, threshold and sharpness are public (they are arguments, not read
from the data); every record's term is computed from that record alone.

Proof. sigmoid(t) = 1 / (1 + e^-t) lies in (0, 1) because e^-t > 0 (checked: 1 - sigmoid(t)
= e^-t / (1 + e^-t)); with w in [0, 1] the product lies in [0, 1] and G times it in [0, G];
whatever the floating-point evaluation gives, Dataset.soft_count counts a non-finite term as
0 and clips the rest after rounding, so v_r is an integer in [0, G] (the argument rests on
that, not on the arithmetic). Adding a record adds its v_r, removing one removes
it: S moves by at most G, an integer query of sensitivity G (checked on the real code over
random small datasets and their neighbours). Thm. 4 with Delta = G and s^2 >= (sigma G)^2
gives G^2 / (2 s^2) <= G^2 / (2 sigma^2 G^2) = 1 / (2 sigma^2) (checked symbolically); sigma G
is an exact float (a power-of-two scaling; checked) and discrete_variance rounds it up.
"""
import random
from fractions import Fraction

import numpy as np
import sympy as sp

from ._neighbours import neighbour_pairs
from ._support import assert_equal, assert_true

CLAIM = "soft count: values in [0, 1] a record, sensitivity 1, discrete Gaussian costs 1/(2 sigma^2)"


def check() -> None:
    t = sp.Symbol("t", real=True)
    sigmoid = 1 / (1 + sp.exp(-t))
    assert_equal(1 - sigmoid, sp.exp(-t) / (1 + sp.exp(-t)), "1 - sigmoid(t) = e^-t / (1 + e^-t)")
    assert_true(sp.exp(-t).is_positive, "e^-t > 0, so sigmoid(t) lies in (0, 1)")
    sigma, G = sp.symbols("sigma G", positive=True)
    assert_equal(G ** 2 / (2 * (sigma * G) ** 2), 1 / (2 * sigma ** 2), "cost of sensitivity G at sigma G")

    from dpcore import Dataset, Domain
    from dpcore.accounting.noise import discrete_variance
    from dpcore.curator import SOFT_COUNT_GRID
    grid = SOFT_COUNT_GRID
    for s in (1e-3, 0.7, 3.3, 1234.5):
        assert Fraction(s * grid) == Fraction(s) * grid, "sigma G is exact"
        assert discrete_variance(s * grid) >= Fraction(s * grid) ** 2
    # the real per-record terms: neighbours differ by one record's value, in [0, G]
    rng = random.Random(7)
    domain = Domain(("a", "b"), (3, 2))
    for small, large in neighbour_pairs(domain, rng, datasets=4):
        scores = [np.array([rng.uniform(-1e3, 1e3) for _ in range(k)]) for k in domain.shape]
        threshold, sharpness = rng.uniform(-10, 10), rng.choice([1e-3, 5.0, 2.0 ** 20])
        weights = [rng.random() for _ in range(len(large))]
        for w in (None, weights):
            lo = Dataset(small, domain, None if w is None else w[:len(small)])
            hi = Dataset(large, domain, w)
            gap = hi.soft_count(scores, threshold, sharpness, grid) - \
                lo.soft_count(scores, threshold, sharpness, grid)
            assert 0 <= gap <= grid, f"one record moved the soft count by {gap} > G"
