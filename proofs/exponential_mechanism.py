"""Claim: the exponential mechanism Pr[r] ∝ exp(eps q(D, r) / (2 Delta)), Delta >= the
sensitivity of every q(., r), is eps-bounded-range and hence eps^2/8-zCDP; the Gumbel-max
sampler argmax_r (eps q(D, r)/(2 Delta) + G_r), G_r i.i.d. standard Gumbel, has exactly this
distribution.

Sources: bounded range: Durfee & Rogers 2019 (definition); Cesar & Rogers 2021 (arXiv
2004.07223): eta-bounded range implies eta^2/8-zCDP (we did not check the theorem number; it
is restated as Thm 5 / Cor. 7 of Steinke's differentialprivacy.org post of 2024-05-27, which
also warns that report-noisy-max with exponential noise = permute-and-flip does *not* get this
bound). Gumbel-max: e.g. Yellott 1977; Maddison et al. 2014. AIM (Alg. 4) and MST use this
parameterisation.

Preconditions: |q(D, r) - q(D', r)| <= Delta for all neighbours D, D' and every candidate r;
eps > 0; a finite candidate set fixed independently of the data.

Proof. For neighbours D, D' and candidate y,
    L(y) = log(P_D(y) / P_D'(y)) = eps (q(D,y) - q(D',y)) / (2 Delta) + log(Z_D' / Z_D),
so for any two candidates L(y) - L(y') = eps/(2 Delta) [(q(D,y)-q(D',y)) - (q(D,y')-q(D',y'))]
(algebra checked below), and each bracket lies in [-Delta, Delta], so the difference is at most
eps: the privacy loss lies in an interval of length eps (eps-bounded range). Cesar & Rogers
show an eta-bounded-range mechanism is eta^2/8-zCDP (the privacy loss, centred, is
sub-Gaussian with variance proxy eta^2/4 by Hoeffding's lemma). The check computes exact Renyi
divergences (30 digits) on enumerated instances, every shift in {-Delta, 0, Delta}^k of several
score vectors (k <= 4), at several orders, against alpha times the accountant's cost for the same
(eps, Delta), and shows eps^2/8 is tight for small eps (D_1 -> eps^2/8), so a smaller constant
would fail; plus random instances.
Gumbel-max: with t = e^{-g}, Pr[argmax = i] = int e^{-g} exp(-e^{-g} sum_j e^{u_j - u_i}) dg
= 1 / sum_j e^{u_j - u_i} = softmax(u)_i (the integral is checked below).
"""
import itertools
import math
import random
from fractions import Fraction

import mpmath
import sympy as sp

from ._support import assert_equal

CLAIM = "exponential mechanism is eps^2/8-zCDP (bounded range); Gumbel-max samples it"


def _renyi(p, q, alpha):
    return mpmath.log(mpmath.fsum(pi ** alpha * qi ** (1 - alpha) for pi, qi in zip(p, q))) / (alpha - 1)


def _em(scores, eps, delta):
    w = [mpmath.exp(eps * s / (2 * delta)) for s in scores]
    z = mpmath.fsum(w)
    return [x / z for x in w]


def check() -> None:
    eps, Delta = sp.symbols("epsilon Delta", positive=True)
    qy, qy2, qyp, qy2p, ZD, ZDp = sp.symbols("q_y q_y2 qp_y qp_y2 Z_D Z_Dp", positive=True)
    L_y = eps * (qy - qyp) / (2 * Delta) + sp.log(ZDp) - sp.log(ZD)
    L_y2 = eps * (qy2 - qy2p) / (2 * Delta) + sp.log(ZDp) - sp.log(ZD)
    assert_equal(L_y - L_y2, eps / (2 * Delta) * ((qy - qyp) - (qy2 - qy2p)), "normalisers cancel")

    # Gumbel-max integral
    g = sp.Symbol("g", real=True)
    S = sp.Symbol("S", positive=True)
    assert_equal(sp.integrate(sp.exp(-g) * sp.exp(-S * sp.exp(-g)), (g, -sp.oo, sp.oo)), 1 / S,
                 "Gumbel-max integral")

    from dpcore.accounting import ExponentialEvent, ZCDPAccountant, exponential_epsilon
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", acc.rho)
    orders = [mpmath.mpf(a) for a in ("1.001", "1.5", "2", "4", "16", "64")]
    with mpmath.workdps(30):
        # Enumerated instances: every neighbour shift in {-Delta, 0, Delta}^k (the extremes of
        # |q(D, r) - q(D', r)| <= Delta) of a few score vectors, k = 2, 3, 4.
        worst_kl = mpmath.mpf(0)
        for e, d in ((0.1, 1.0), (1.0, 2.5), (3.0, 1.0), (0.9, 0.5)):
            cost = exact_rho(ExponentialEvent(e, d))  # the accountant's rho for this (eps, Delta)
            e, d = mpmath.mpf(e), mpmath.mpf(d)
            for q in ([0, 0], [1.5, -2], [0, 0, 0], [3, -1, 0.25], [0, 0, 0, 0], [2, -2, 1, 5]):
                q = [mpmath.mpf(x) * d for x in q]
                p1 = _em(q, e, d)
                for shift in itertools.product((-d, 0, d), repeat=len(q)):
                    p2 = _em([a + b for a, b in zip(q, shift)], e, d)
                    for a in orders:
                        bound = a * mpmath.mpf(cost.numerator) / cost.denominator
                        div = _renyi(p1, p2, a)
                        assert div <= bound * (1 + mpmath.mpf(10) ** -20), (float(e), q, shift, a, div)
                    if e == mpmath.mpf(0.1):
                        worst_kl = max(worst_kl, _renyi(p1, p2, orders[0]) / orders[0])
        # eps^2/8 is tight as eps -> 0: two candidates shifted (+Delta, -Delta) give
        # D_1 = log cosh(eps/2) ~ eps^2/8, so no smaller constant is valid.
        assert worst_kl >= mpmath.mpf(0.1) ** 2 / 8 * mpmath.mpf(0.99), worst_kl

        # random instances and random in-range shifts
        rng = random.Random(20240527)
        for trial in range(60):
            k = rng.randint(2, 6)
            e = mpmath.mpf(rng.choice([0.01, 0.3, 1.0, 3.0, 8.0]))
            d = mpmath.mpf(rng.choice([1, 2.5]))
            q = [mpmath.mpf(rng.uniform(-5, 5)) for _ in range(k)]
            shift = [mpmath.mpf(rng.uniform(-1, 1)) * d for _ in range(k)]
            p1, p2 = _em(q, e, d), _em([a + b for a, b in zip(q, shift)], e, d)
            for a in orders:
                for x, y in ((p1, p2), (p2, p1)):
                    div = _renyi(x, y, a)
                    assert div <= a * e ** 2 / 8 * (1 + mpmath.mpf(10) ** -20), (trial, a, div)

    # calibration: the largest float epsilon whose cost fits
    for rho in (Fraction(1, 8), Fraction(1, 3000), 0.0243559703595):
        e = exponential_epsilon(rho)
        assert acc.rho(ExponentialEvent(e, 1)) <= Fraction(rho)
        larger = ExponentialEvent(math.nextafter(e, math.inf), 1)
        assert exact_rho(larger) > Fraction(rho) * (1 - Fraction(1, 10 ** 14))
