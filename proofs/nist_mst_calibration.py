"""Claim (NIST-MST calibration): with sigma = (sqrt(log(1/delta)) + sqrt(log(1/delta) + eps))/eps
and alpha = 1 + sigma sqrt(log(1/delta)), alpha/sigma^2 + log(1/delta)/(alpha - 1) = eps
exactly; alpha is the minimiser over alpha > 1, so two sensitivity-1 Gaussian measurements at
this sigma (1/sigma^2-zCDP in total) are (eps, delta)-DP by the classic RDP conversion.

Source: McKenna, Miklau & Sheldon 2021 ("Winning the NIST Contest"), Eq. (5.1), Theorem 2 and
the sympy check printed in Figure 4 (papers/nist-mst.txt), which this module re-runs.
RDP->DP conversion: Mironov 2017 Prop. 3 (their Proposition 4).

Preconditions: eps > 0, 0 < delta < 1 (so L = log(1/delta) > 0).

Proof. Two Gaussian measurements with sensitivity 1 compose to (alpha, alpha/sigma^2)-RDP; the
conversion gives (alpha/sigma^2 + L/(alpha-1), delta)-DP for every alpha > 1. The derivative in
alpha, 1/sigma^2 - L/(alpha-1)^2, vanishes at alpha = 1 + sigma sqrt(L), where the value is
(1 + 2 sigma sqrt(L))/sigma^2; setting it to eps and solving the quadratic in 1/sigma gives the
closed form, and substituting back simplifies to eps (checked, as in the paper's Figure 4).
nist_mst_sigma rounds sigma *up*, which only lowers the cost.
"""
import sympy as sp

from ._support import assert_equal

CLAIM = "NIST-MST closed-form sigma gives exactly epsilon (MST paper Fig. 4)"


def check() -> None:
    # The paper's Figure 4, verbatim in substance.
    alpha, epsilon, delta, sigma = sp.symbols("alpha epsilon delta sigma")
    expr = alpha / sigma ** 2 + sp.log(1 / delta) / (alpha - 1)
    expr = expr.subs(alpha, 1 + sigma * sp.sqrt(sp.log(1 / delta)))
    expr = expr.subs(sigma, (sp.sqrt(sp.log(1 / delta)) + sp.sqrt(sp.log(1 / delta) + epsilon)) / epsilon)
    assert_equal(expr, epsilon, "MST Figure 4")
    # The same with the preconditions explicit, plus the minimiser.
    a, s, e, L = sp.symbols("alpha sigma epsilon L", positive=True)
    bound = a / s ** 2 + L / (a - 1)
    assert_equal(sp.diff(bound, a).subs(a, 1 + s * sp.sqrt(L)), 0, "alpha is stationary")
    assert_equal(sp.diff(bound, a, 2), 2 * L / (a - 1) ** 3, "convex on alpha > 1")
    closed = (sp.sqrt(L) + sp.sqrt(L + e)) / e
    assert_equal(bound.subs(a, 1 + s * sp.sqrt(L)).subs(s, closed), e, "closed form, L > 0")

    from dpcore.accounting import nist_mst_sigma, zcdp_to_approx_dp_classic
    import math
    sig = nist_mst_sigma(1.0, 1e-6)
    assert sig >= (math.sqrt(math.log(1e6)) + math.sqrt(math.log(1e6) + 1)) / 1.0
    assert zcdp_to_approx_dp_classic(1 / sig ** 2, 1e-6) <= 1.0 + 1e-12
