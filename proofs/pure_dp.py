"""Claim: an eps-DP mechanism is eps^2/2-zCDP, and its Renyi divergence of order alpha is at most
    eps - log((1 + e^-eps) / (1 + e^-(2 alpha - 1) eps)) / (alpha - 1),
the divergence of randomized response (the worst case), which RDPAccountant uses alongside
the line alpha eps^2/2.

Sources: Bun & Steinke 2016, Prop. 1.4 (eps-DP => eps^2/2-zCDP); the tight curve: Steinke,
differentialprivacy.org 2024-05-27 ("pure DP to zCDP"), as summarised in notes-accounting.md
section 6. The tightness (that randomized response is the worst case) is cited, not re-proved.

Preconditions: eps > 0; neighbours add/remove one record.

Proof. eps-DP bounds the privacy loss log(P_D(y)/P_D'(y)) to [-eps, eps], an interval of
length 2 eps, so the mechanism is 2 eps-bounded-range and (proofs/exponential_mechanism.py)
(2 eps)^2/8 = eps^2/2-zCDP. For randomized response with p = e^eps/(1+e^eps), q = 1 - p,
sum p^alpha q^(1-alpha) + q^alpha p^(1-alpha) = (e^(alpha eps) + e^((1-alpha) eps))/(1 + e^eps),
whose log over (alpha - 1) simplifies to the curve above (checked). Numerically the curve is
below min(eps, alpha eps^2/2) (also checked), so taking the minimum never loosens a bound. The
check also computes exact divergences of enumerated eps-DP output laws (randomized response and
random 3-outcome pairs at the eps-DP constraint) against the curve, alpha times the accountant's
cost and RDPAccountant, and shows eps^2/2 is tight as eps -> 0.
"""
import mpmath
import sympy as sp

from ._support import assert_equal

CLAIM = "eps-DP is eps^2/2-zCDP; randomized-response RDP curve"


def check() -> None:
    eps = sp.Symbol("epsilon", positive=True)
    a = sp.Symbol("alpha", positive=True)
    p = sp.exp(eps) / (1 + sp.exp(eps))
    q = 1 / (1 + sp.exp(eps))
    total = p ** a * q ** (1 - a) + q ** a * p ** (1 - a)
    assert_equal(sp.powsimp(sp.expand_power_base(total, force=True), force=True),
                 (sp.exp(a * eps) + sp.exp((1 - a) * eps)) / (1 + sp.exp(eps)), "RR sum")
    lhs = sp.log((sp.exp(a * eps) + sp.exp((1 - a) * eps)) / (1 + sp.exp(eps))) / (a - 1)
    curve = eps - sp.log((1 + sp.exp(-eps)) / (1 + sp.exp(-(2 * a - 1) * eps))) / (a - 1)
    # compare numerically at exact rational points (the log identity needs case analysis in sympy)
    for av in (sp.Rational(3, 2), 2, 7):
        for ev in (sp.Rational(1, 10), 1, 5):
            diff = (lhs - curve).subs({a: av, eps: ev})
            assert abs(sp.N(diff, 40)) < sp.Float("1e-35"), (av, ev, diff)
    with mpmath.workdps(30):
        for e in (0.01, 0.5, 1, 3, 10):
            e = mpmath.mpf(e)
            for al in (1.001, 1.5, 2, 10, 1000):
                al = mpmath.mpf(al)
                c = e - mpmath.log((1 + mpmath.exp(-e)) / (1 + mpmath.exp(-(2 * al - 1) * e))) / (al - 1)
                assert c <= min(e, al * e ** 2 / 2) * (1 + mpmath.mpf(10) ** -25)
    _enumerated_pairs()


def _enumerated_pairs() -> None:
    """Exact divergences of eps-DP output laws against the curve and the accountant's costs.

    Every pair (P, Q) on 2-3 outcomes with P(y)/Q(y) in {e^-eps, 1, e^eps} wherever possible
    (the extreme points of the eps-DP constraint) plus random interior pairs; RR is the
    two-outcome extreme pair, so the curve must be attained there and the line must be tight as
    eps -> 0 (D_1(RR) = eps tanh(eps/2) ~ eps^2/2): a smaller zCDP constant would fail.
    """
    import random
    from fractions import Fraction
    from dpcore.accounting import PureDPEvent, RDPAccountant, ZCDPAccountant
    acc = ZCDPAccountant()
    exact_rho = getattr(acc, "exact_rho", acc.rho)
    rng = random.Random(1605)
    with mpmath.workdps(30):
        for e_float in (0.1, 1.0, 3.0):
            e = mpmath.mpf(e_float)
            cost = exact_rho(PureDPEvent(e_float))
            cost = mpmath.mpf(cost.numerator) / cost.denominator
            rdp = RDPAccountant().compose(PureDPEvent(e_float))
            pairs = []
            p = mpmath.exp(e) / (1 + mpmath.exp(e))
            pairs.append(([p, 1 - p], [1 - p, p]))  # randomized response
            for _ in range(40):  # random eps-DP pairs on 3 outcomes: Q = P * exp(l), |l| <= eps
                while True:
                    P = [mpmath.mpf(rng.random()) + mpmath.mpf("1e-3") for _ in range(3)]
                    P = [x / mpmath.fsum(P) for x in P]
                    ratios = [mpmath.exp(e * rng.choice([-1, 1, rng.uniform(-1, 1)])) for _ in range(2)]
                    last = 1 - mpmath.fsum(P[i] * ratios[i] for i in range(2))  # Q sums to 1
                    if last > 0 and abs(mpmath.log(last / P[2])) <= e:
                        pairs.append((P, [P[0] * ratios[0], P[1] * ratios[1], last]))
                        break
            for P, Q in pairs:
                for al in (mpmath.mpf("1.001"), mpmath.mpf(2), mpmath.mpf(10)):
                    div = mpmath.log(mpmath.fsum(a ** al * b ** (1 - al) for a, b in zip(P, Q))) / (al - 1)
                    rr = (1 + mpmath.exp(-e)) / (1 + mpmath.exp(-(2 * al - 1) * e))
                    curve = e - mpmath.log(rr) / (al - 1)
                    assert div <= curve * (1 + mpmath.mpf(10) ** -20), (e_float, al, div, curve)
                    assert div <= al * cost * (1 + mpmath.mpf(10) ** -20)
                    assert rdp.rdp(float(al)) >= div * (1 - mpmath.mpf(10) ** -14)
            P, Q = pairs[0]
            kl = mpmath.fsum(a * mpmath.log(a / b) for a, b in zip(P, Q))
            assert abs(kl - e * mpmath.tanh(e / 2)) < mpmath.mpf(10) ** -25
            if e_float == 0.1:
                assert kl >= cost * mpmath.mpf(0.99), "eps^2/2 must be tight as eps -> 0"
