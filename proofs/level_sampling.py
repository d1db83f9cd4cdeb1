"""Claim: ``level_exponential_mechanism`` (FEM's selection sampler) outputs r with probability
exactly exp(-gamma_r) / sum_s exp(-gamma_s), gamma_r = eps (q_max - q_r) / (2 Delta) — the
exponential mechanism's law, the same as ``exact_exponential_mechanism`` — for any integer
levels 0 <= j_r <= gamma_r log2(e); with j_r >= gamma_r log2(e) - 1 (uncapped) a round succeeds
with probability >= 1/2.

Sources: rejection sampling (von Neumann 1951); McSherry & Talwar 2007; alternating series
bounds (Leibniz); proofs/exact_sampling.py (the uniform-proposal sampler, same law).

Preconditions: uniform random bits; the float estimate of a_r = exp(-gamma_r) 2^j_r is within
the stated relative margin (IEEE double rounding of gamma, of j ln 2 - gamma and math.exp, each
well below 2^-40 relative), or else only the integer bounds decide.

Proof. Proposal: level l with probability n_l 2^(J-l) / sum_m n_m 2^(J-m), then a uniform member
of level l: Pr[propose r] = 2^-j_r / S, S = sum_s 2^-j_s. Acceptance a_r = exp(-gamma_r) 2^j_r <= 1
because 2^j_r <= 2^(gamma_r log2 e) = e^gamma_r. A round ends with r with probability
exp(-gamma_r) / S and fails with 1 - A, A = sum_s exp(-gamma_s) / S; by the geometric series
(proofs/exact_sampling.py) Pr[out = r] = exp(-gamma_r) / sum_s exp(-gamma_s). The trial U < a_r:
U in [u, u+1) 2^-b is known from b bits; "accept" is returned only when (u+1) 2^-b <= a lower
bound of a_r and "reject" only when u 2^-b >= an upper bound, so each decision equals 1[U < a_r];
else more bits are drawn, and since the bounds' width is at most 2^-b (checked), Pr[undecided
after b bits] <= 3 * 2^-b -> 0. Levels: j_r <= gamma_r * 1.4426950408 (float, with a 2^-40 margin
that covers the roundings) < gamma_r log2(e). Checked below: the law on enumerated instances
with sympy, the integer bounds against 300-digit exp, the code's levels against exact rationals.
"""
import itertools
import random
from fractions import Fraction

import sympy as sp

from ._support import assert_equal, assert_true

CLAIM = "level-proposal exact EM sampler has the EM law (any levels j <= gamma log2 e)"


def check() -> None:
    # Law on enumerated instances: proposal 2^-j / S times acceptance e^-gamma 2^j.
    gammas = [sp.Rational(0), sp.Rational(1, 3), sp.Rational(5, 2), sp.Rational(40)]
    for chosen in itertools.combinations(gammas, 3):
        if chosen[0] != 0:
            continue
        for levels in itertools.product(range(0, 3), repeat=3):
            if any(j > g * sp.log(2, sp.E) ** -1 for j, g in zip(levels, chosen)):
                continue   # not a valid level (j <= gamma log2 e)
            S = sum(sp.Rational(1, 2 ** j) for j in levels)
            acc = [sp.exp(-g) * 2 ** j for j, g in zip(levels, chosen)]
            assert_true(all(sp.N(a, 50) <= 1 for a in acc), "acceptance <= 1")
            ends = [sp.Rational(1, 2 ** j) / S * a for j, a in zip(levels, acc)]
            A = sum(ends)
            z = sum(sp.exp(-g) for g in chosen)
            for r in range(3):
                assert_equal(ends[r] / A, sp.exp(-chosen[r]) / z, f"EM law, {chosen}, levels {levels}")
    # The success bound: j >= gamma log2 e - 1 gives e^-gamma 2^j >= 1/2.
    g = sp.Symbol("g", nonnegative=True)
    assert_equal(sp.exp(-g) * 2 ** (g / sp.log(2) - 1), sp.Rational(1, 2), "a_r at the lowest level")

    from decimal import Decimal, getcontext

    import numpy as np

    from dpcore.accounting import level_sampler
    getcontext().prec = 300
    rand = random.Random(5)
    for _ in range(200):
        q = rand.randint(1, 2 ** 80)
        p, j, bits = rand.randint(0, 30 * q), rand.randint(0, 40), rand.choice([64, 128])
        lo, hi = level_sampler.scaled_bounds(p, q, j, bits)
        ref = (Decimal(-p) / Decimal(q)).exp() * Decimal(2) ** (bits + j)
        assert Decimal(lo) <= ref <= Decimal(hi) and hi - lo <= 2, (p, q, j, bits)
    log2e_below = Fraction(14426950408889634, 10 ** 16)          # < log2(e) = 1.44269504088896340...
    assert_true(sp.Rational(14426950408889634, 10 ** 16) < 1 / sp.log(2), "rational below log2 e")
    gaps = np.random.default_rng(0).integers(0, 2 ** 62, size=500, dtype=np.int64)
    for c in (Fraction(1, 2 ** 21), Fraction(0.009) / 2 ** 21, Fraction(5, 3)):
        gamma = gaps.astype(np.float64) * float(c)
        levels = np.floor(np.minimum(gamma * level_sampler.LOG2E_LOW * (1 - level_sampler._MARGIN),
                                     level_sampler.MAX_LEVEL)).astype(np.int64)
        for gap, j in zip(gaps.tolist(), levels.tolist()):
            assert j <= c * gap * log2e_below, (c, gap, j)
