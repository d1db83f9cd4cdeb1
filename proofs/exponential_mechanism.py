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
sub-Gaussian with variance proxy eta^2/4 by Hoeffding's lemma). The module also checks
numerically, at 30 digits, that D_alpha <= alpha eps^2/8 on random and adversarial instances.
Gumbel-max: with t = e^{-g}, Pr[argmax = i] = int e^{-g} exp(-e^{-g} sum_j e^{u_j - u_i}) dg
= 1 / sum_j e^{u_j - u_i} = softmax(u)_i (the integral is checked below).
"""
import random

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
    # worst case of the bracket difference is 2 Delta -> range eps
    assert_equal((eps / (2 * Delta)) * (2 * Delta), eps, "range length")

    # Gumbel-max integral
    g = sp.Symbol("g", real=True)
    S = sp.Symbol("S", positive=True)
    assert_equal(sp.integrate(sp.exp(-g) * sp.exp(-S * sp.exp(-g)), (g, -sp.oo, sp.oo)), 1 / S,
                 "Gumbel-max integral")

    # numeric: D_alpha(EM(D) || EM(D')) <= alpha eps^2 / 8
    rng = random.Random(20240527)
    with mpmath.workdps(30):
        for trial in range(60):
            k = rng.randint(2, 6)
            e = mpmath.mpf(rng.choice([0.01, 0.3, 1.0, 3.0, 8.0]))
            d = mpmath.mpf(rng.choice([1, 2.5]))
            q = [mpmath.mpf(rng.uniform(-5, 5)) for _ in range(k)]
            if trial % 2:
                shift = [d if i % 2 else -d for i in range(k)]  # adversarial: extremes
            else:
                shift = [mpmath.mpf(rng.uniform(-1, 1)) * d for _ in range(k)]
            p1, p2 = _em(q, e, d), _em([a + b for a, b in zip(q, shift)], e, d)
            for a in (1.01, 1.5, 2, 4, 16, 64):
                a = mpmath.mpf(a)
                for x, y in ((p1, p2), (p2, p1)):
                    div = _renyi(x, y, a)
                    assert div <= a * e ** 2 / 8 * (1 + mpmath.mpf(10) ** -20), (trial, a, div)
