"""Claim: (a) the rejection sampler of ``exact_exponential_mechanism`` outputs r with probability
exactly exp(-gamma_r) / sum_j exp(-gamma_j), gamma_r = eps (q_max - q_r) / (2 Delta) — the
exponential mechanism's law — after at most k expected proposals; (b) discrete Gaussian noise
with variance parameter s^2 >= sigma^2 costs at most the charged Delta^2 / (2 sigma^2); (c) the
curator's fixed-point quality score Q_r = W_r (sum |C - R_r| - P_r) (grid 1/G, G = SCORE_GRID)
changes by at most W_r G, i.e. q_r = Q_r / G^2 has sensitivity <= w_r = W_r / G <= max w.

Sources: Canonne, Kamath & Steinke 2020 (arXiv 2004.00010), Alg. 1 (Bernoulli(exp(-gamma)) from
Bernoulli(gamma/k) trials) and the discrete Gaussian's zCDP bound; McSherry & Talwar 2007 (the
exponential mechanism); rejection sampling (von Neumann 1951). AIM paper Sec. 4, Eq. 1 (the
score). proofs/exponential_mechanism.py and proofs/discrete_gaussian.py give the privacy of the
distributions sampled here.

Preconditions: (a) exact rational scores, eps > 0, Delta > 0, a finite candidate set; uniform
proposals and exact Bernoulli trials from independent uniform bits. (b) an integer query of L2
sensitivity Delta, s^2 = discrete_variance(sigma). (c) neighbours differ by one record of weight
d in [0, 1] (d = 1 without weights), changing one cell of each marginal by d; W_r, R_r, P_r are
public integers (rounded public values: post-processing), C = floor(G * cell).

Proof. (a) One round proposes r with probability 1/k and accepts with exp(-gamma_r), so it ends
with r with probability exp(-gamma_r)/k and fails with 1 - A, A = sum_j exp(-gamma_j)/k.
Rounds are independent, so Pr[out = r] = sum_n (1 - A)^n exp(-gamma_r)/k = exp(-gamma_r)/(k A)
(geometric series, checked below symbolically and on enumerated instances). gamma_max = 0, so
A >= 1/k and the expected number of rounds 1/A <= k. The acceptance trial: Alg. 1 draws
Bernoulli(gamma/k) for k = 1, 2, ... until the first failure K; Pr[K = k] =
gamma^(k-1)/(k-1)! (1 - gamma/k) and Pr[K odd] = cosh(gamma) - sinh(gamma) = exp(-gamma) for
gamma in [0, 1] (the series is summed below); larger gamma multiplies floor(gamma) trials of
exp(-1). (b) rho(s^2) = Delta^2/(2 s^2) is decreasing in s^2, and
Delta^2/(2 sigma^2) - Delta^2/(2 s^2) = Delta^2 (s^2 - sigma^2) / (2 sigma^2 s^2) >= 0; the
code's s^2 is checked to be >= sigma^2 (and within 2^-40 relative) on many sigmas. (c) The
neighbour changes one cell x of C to x' with |x' - x| <= G: for integer counts x' = x +- G; for
weights, floor(y + dG) - floor(y) lies in [0, ceil(dG)] with ceil(dG) <= G. By the triangle
inequality | |x' - R| - |x - R| | <= |x' - x| <= G, other cells are unchanged, so the sum
moves by <= G and Q_r by <= W_r G. Checked exhaustively on small integer instances, and on the
curator's own scoring helper with random neighbouring datasets.
"""
import itertools
import random
from fractions import Fraction

import numpy as np
import sympy as sp

from ._support import assert_equal, assert_true

CLAIM = "exact EM sampler has the EM law; s^2 >= sigma^2 costs <= charge; grid score sensitivity <= max w"


def _check_rejection_law() -> None:
    # Symbolic: sum_n (1 - A)^n a_r = a_r / A for 0 < A <= 1.
    a_r, A = sp.symbols("a_r A", positive=True)
    n = sp.Symbol("n", integer=True, nonnegative=True)
    total = sp.summation((1 - A) ** n * a_r, (n, 0, sp.oo))
    total = sp.piecewise_fold(total)
    if isinstance(total, sp.Piecewise):  # sympy keeps the |1 - A| < 1 condition; 0 < A < 1 here
        total = total.args[0][0]
    assert_equal(total, a_r / A, "geometric series of failed rounds")
    # Enumerated instances: exact rational acceptance probabilities, compared with the EM law.
    gammas = [sp.Rational(0), sp.Rational(1, 3), sp.Rational(5, 2), sp.Rational(40)]
    for k in range(1, len(gammas) + 1):
        for chosen in itertools.combinations(gammas, k):
            if chosen[0] != 0:
                continue  # the maximiser has gamma = 0
            acc = [sp.exp(-g) / k for g in chosen]
            A_val = sum(acc)
            assert_true(A_val >= sp.Rational(1, k), "a round succeeds with probability >= 1/k")
            z = sum(sp.exp(-g) for g in chosen)
            for r in range(k):
                out = acc[r] / A_val  # the geometric-series law above
                assert_equal(out, sp.exp(-chosen[r]) / z, f"EM law, gammas {chosen}, r = {r}")
    # Alg. 1: Pr[K odd] = exp(-gamma) for gamma in [0, 1].
    g = sp.Symbol("gamma", nonnegative=True)
    j = sp.Symbol("j", integer=True, nonnegative=True)
    odd = sp.summation(g ** (2 * j) / sp.factorial(2 * j) - g ** (2 * j + 1) / sp.factorial(2 * j + 1),
                       (j, 0, sp.oo))
    assert_equal(sp.simplify(odd.rewrite(sp.exp)), sp.exp(-g), "Alg. 1: Pr[K odd]")


def _check_code_gammas() -> None:
    """The code's acceptance trials use exactly gamma_r = eps (q_max - q_r) / (2 Delta)."""
    from dpcore.accounting import noise
    from dpcore.accounting.noise import exact_exponential_mechanism, make_rng

    seen = []
    real = noise._bernoulli_exp

    def recording(p, q, src):
        seen.append(Fraction(p, q))
        return real(p, q, src)

    scores = [Fraction(-7, 3), 4, Fraction(1, 5), 4, 0.75]
    eps, delta = 0.3, Fraction(5, 4)
    noise._bernoulli_exp = recording
    try:
        rng = make_rng(1)
        for _ in range(200):
            seen.clear()
            exact_exponential_mechanism(scores, eps, delta, rng)
            allowed = {Fraction(eps) * (4 - Fraction(s)) / (2 * delta) for s in scores}
            top_level = seen[0]  # the first trial of a round is the acceptance test itself
            assert_true(top_level in allowed, f"acceptance exponent {top_level} not an EM gamma")
    finally:
        noise._bernoulli_exp = real


def _check_variance_rounding() -> None:
    Delta, sigma, s = sp.symbols("Delta sigma s", positive=True)
    gap = Delta ** 2 / (2 * sigma ** 2) - Delta ** 2 / (2 * s ** 2)
    assert_equal(gap, Delta ** 2 * (s ** 2 - sigma ** 2) / (2 * sigma ** 2 * s ** 2), "cost gap")
    from dpcore.accounting.noise import VARIANCE_SLACK, discrete_variance

    rng = random.Random(15)
    sigmas = [2.0 ** e * rng.uniform(1, 2) for e in range(-20, 40) for _ in range(20)]
    sigmas += [0.1, 1.0, 1 / 3, 2.0 ** -11, 2.0 ** 31, 1e-300, 1e300]
    for x in sigmas:
        s2, exact = discrete_variance(x), Fraction(x) ** 2
        assert_true(s2 >= exact, f"s^2 < sigma^2 at sigma = {x!r}")
        assert_true(s2 - exact < VARIANCE_SLACK * exact or s2 == exact, f"s^2 too large at {x!r}")


def _check_score_sensitivity() -> None:
    G = 4  # a small grid: the argument holds for every G >= 1
    # Integer counts: cells x in grid units, neighbour x +- G in one cell.
    for W, P in ((1, 0), (3, 5)):
        for cells in itertools.product(range(0, 3 * G, G), repeat=2):
            for ref in itertools.product(range(-G, 3 * G), repeat=2):
                def q(c):
                    return W * (sum(abs(a - b) for a, b in zip(c, ref)) - P)
                for i, step in itertools.product(range(2), (G, -G)):
                    moved = list(cells)
                    moved[i] += step
                    if moved[i] >= 0:
                        assert_true(abs(q(moved) - q(cells)) <= W * G, "integer score moved > W G")
    # Weighted: floor(y + d G) - floor(y) in [0, G] for d in [0, 1].
    for y in (Fraction(n, 7) for n in range(-30, 30)):
        for d in (Fraction(n, 13) for n in range(14)):
            step = sp.floor(y + d * G) - sp.floor(y)
            assert_true(0 <= step <= G, f"floored weighted cell moved by {step}")
    # The curator's helper on neighbouring datasets (add one record), real grid.
    from dpcore.curator import SCORE_GRID, _l1

    rng = np.random.default_rng(15)
    for _ in range(200):
        size = int(rng.integers(1, 6))
        counts = rng.integers(0, 50, size).astype(float)
        moved = counts.copy()
        moved[rng.integers(size)] += 1
        ref = np.rint(rng.uniform(-10, 60, size) * SCORE_GRID).astype(np.int64)
        a = _l1(np.floor(counts * SCORE_GRID), ref)
        b = _l1(np.floor(moved * SCORE_GRID), ref)
        assert_true(abs(a - b) <= SCORE_GRID, "curator L1 score moved by more than one count")
        weight = float(rng.uniform(0, 1))
        wmoved = counts.copy()
        wmoved[rng.integers(size)] += weight
        c = _l1(np.floor(wmoved * SCORE_GRID), ref)
        assert_true(abs(c - a) <= SCORE_GRID, "curator L1 score moved by more than 1 (weighted)")


def check() -> None:
    _check_rejection_law()
    _check_code_gammas()
    _check_variance_rounding()
    _check_score_sensitivity()
