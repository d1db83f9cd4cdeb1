"""Claim (cost rounding): the ledger records each cost as round_cost_up(rho) =
ceil(rho 2^128) / 2^128 (dpcore/accounting/_numbers.py). This is (i) conservative: a rho-zCDP
mechanism is rho'-zCDP for every rho' >= rho; (ii) tight: rho <= round_cost_up(rho) < rho + 2^-128,
and it is the smallest grid value >= rho; (iii) closed under sums: sums of grid values are grid
values, so a ledger of n charges totalling at most MAX_RHO has numerator (over 2^128) below
MAX_RHO 2^128 + 1, i.e. at most 142 bits whatever n and the sigmas charged. round_cost_down(t) is
the largest grid value <= t, and any cost c <= round_cost_down(t) is charged at most t.

Source: zCDP is defined through Renyi divergences, D_alpha(M(D) || M(D')) <= alpha rho for every
alpha > 1 (Bun & Steinke 2016, Def. 1.1); the grid is dpcore's.

Preconditions: rho >= 0 rational (the accountant's exact cost of an event; infinite costs are
never rounded).

Proof. (i) D_alpha <= alpha rho <= alpha rho' since alpha > 0 and rho <= rho', for every alpha
(checked as the factorisation alpha rho' - alpha rho = alpha (rho' - rho) of non-negative
factors, and on an exact Gaussian divergence below). (ii) With N = ceil(rho 2^128),
N - 1 < rho 2^128 <= N gives both bounds; checked against Python's exact ceiling for many
rationals, including grid values (unchanged) and values just above and below them. (iii)
a/2^128 + b/2^128 = (a + b)/2^128; the numerator of a total T <= MAX_RHO is T 2^128. Checked by
summing random grid costs exactly and through the real filter's ledger.
"""
import math
import random
from fractions import Fraction

import sympy as sp

from ._support import assert_equal

CLAIM = "costs rounded up onto the 2^-128 grid are conservative, tight and bounded in size"

GRID = Fraction(1, 1 << 128)


def _samples(rng):
    yield from (Fraction(0), GRID, GRID / 2, 3 * GRID, Fraction(1, 3), Fraction(1, 2), Fraction(10 ** 4),
                Fraction(1, 10 ** 45), Fraction(0.1), Fraction(2.5e-39))
    for _ in range(300):
        k = rng.randrange(1 << 140)
        yield Fraction(k, 1 << 128) + rng.choice([0, 1, -1]) * Fraction(1, rng.randrange(2, 10 ** 50))
        yield Fraction(rng.randrange(1, 10 ** 30), rng.randrange(1, 10 ** 30))
        yield Fraction(rng.random() * 10 ** rng.randint(-40, 4))


def check() -> None:
    alpha, rho, extra = sp.symbols("alpha rho e", positive=True)
    assert_equal(alpha * (rho + extra) - alpha * rho, alpha * extra, "alpha rho' - alpha rho")
    # the Gaussian's exact divergence alpha Delta^2/(2 sigma^2) is below alpha * rounded cost
    from dpcore.accounting._numbers import COST_GRID, round_cost_down, round_cost_up
    assert COST_GRID == GRID
    for sigma in (0.1, 1 / 3, 7.25, 1e-3):
        exact = 1 / (2 * Fraction(sigma) ** 2)
        for a in (Fraction(101, 100), Fraction(2), Fraction(64)):
            assert a * exact <= a * round_cost_up(exact)

    rng = random.Random(128)
    for x in _samples(rng):
        if x < 0:
            continue
        up, down = round_cost_up(x), round_cost_down(x)
        assert up == Fraction(math.ceil(x * (1 << 128)), 1 << 128) and (up / GRID).denominator == 1
        assert down == Fraction(math.floor(x * (1 << 128)), 1 << 128) and (down / GRID).denominator == 1
        assert x <= up < x + GRID and x - GRID < down <= x, x
        assert up - GRID < x and down + GRID > x  # nearest grid values: no smaller/larger fits
        assert round_cost_up(up) == up and round_cost_down(down) == down
        # calibrating to round_cost_down(t): any exact cost c <= it is charged <= t
        for c in (down, down - GRID / 3, down * Fraction(999, 1000)):
            if c >= 0:
                assert round_cost_up(c) <= down <= x

    # (iii) sums stay on the grid and bounded in size
    from dpcore.accounting.filter import MAX_RHO
    costs = [round_cost_up(Fraction(rng.random()) / rng.randint(1, 10 ** 6)) for _ in range(2000)]
    total = sum(costs, Fraction(0))
    assert (total / GRID).denominator == 1
    assert (MAX_RHO / GRID).numerator.bit_length() <= 142
    if total <= MAX_RHO:
        assert (total / GRID).numerator < MAX_RHO / GRID + 1

    # the real accountant and filter record grid values (v2 ledger) or exact costs (v1)
    from dpcore.accounting import ExponentialEvent, GaussianEvent, PrivacyFilter, ZCDPAccountant
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", None)
    f = PrivacyFilter(10)
    for s in (0.37, 1.1, 3.0, 12.5):
        event = rng.choice([GaussianEvent(s), ExponentialEvent(1 / s, 1)])
        charged = f.charge(event)
        assert charged == acc.rho(event)
        if exact_rho is not None:  # v2: the charge is exactly the rounded exact cost
            assert charged == round_cost_up(exact_rho(event)) and (charged / GRID).denominator == 1
        else:
            assert charged <= round_cost_up(charged)
    if exact_rho is not None:
        assert (f.spent / GRID).denominator == 1
