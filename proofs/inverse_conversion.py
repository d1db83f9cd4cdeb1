"""Claim: approx_dp_to_zcdp(epsilon, delta) returns rho with zcdp_to_approx_dp(rho, delta) <=
epsilon (conservative), and it is the largest such rho up to float rounding; the classic
inverse is (sqrt(epsilon + L) - sqrt(L))^2 with L = log(1/delta).

Source: the CKS bound (proofs/cks_conversion.py); private-pgm's cdp_rho computes the same
quantity by bisection. Known answer: epsilon = 1, delta = 1e-9 gives rho = 0.01497305767358853.

Preconditions: epsilon > 0, 0 < delta < 1.

Proof. epsilon_CKS(rho) = min_alpha f_rho(alpha) is increasing in rho (each f_rho(alpha) is),
so the target is the rho* with epsilon_CKS(rho*) = epsilon. At the minimising alpha,
g(alpha) = rho (alpha-1)^2 + log(delta alpha) = 0, i.e.
    rho(alpha) = -log(delta alpha) / (alpha - 1)^2,                                   (1)
positive exactly for 1 < alpha < 1/delta, with
    rho'(alpha) = (2 log(delta alpha) - (alpha-1)/alpha) / (alpha-1)^3 < 0 there       (2)
(both terms of the numerator are negative). So alpha -> F(alpha) = f_{rho(alpha)}(alpha) =
epsilon_CKS(rho(alpha)) is decreasing, from +inf at 1+ to 0 at 1/delta, and the code bisects
F(alpha) = epsilon. Whatever the search returns, the result is then *certified*: it is rounded
down and stepped down one ulp at a time until the public forward conversion (itself rounded
up) gives <= epsilon. Hence conservativeness never depends on the search.
Classic inverse: with s = sqrt(rho), rho + 2 sqrt(rho L) = epsilon is the quadratic
s^2 + 2 sqrt(L) s - epsilon = 0 whose positive root is sqrt(epsilon + L) - sqrt(L) (3).
"""
import sympy as sp

from ._support import assert_equal

CLAIM = "inverse (eps,delta)->rho is conservative"


def check() -> None:
    a = sp.Symbol("alpha", positive=True)
    rho, L, eps = sp.symbols("rho L epsilon", positive=True)
    g = rho * (a - 1) ** 2 + sp.log(a) - L           # log(delta alpha) = log(alpha) - L
    sol = sp.solve(sp.Eq(g, 0), rho)
    assert len(sol) == 1
    rho_of_alpha = (L - sp.log(a)) / (a - 1) ** 2     # (1)
    assert_equal(sol[0], rho_of_alpha, "rho(alpha)")
    assert_equal(sp.diff(rho_of_alpha, a),             # (2)
                 (2 * (sp.log(a) - L) - (a - 1) / a) / (a - 1) ** 3, "rho'(alpha)")
    s = sp.sqrt(eps + L) - sp.sqrt(L)                  # (3)
    assert_equal(s ** 2 + 2 * sp.sqrt(L) * s, eps, "classic inverse")

    from dpcore.accounting import approx_dp_to_zcdp, zcdp_to_approx_dp
    r = approx_dp_to_zcdp(1, 1e-9)
    assert abs(r / 0.01497305767358853 - 1) < 1e-12 and zcdp_to_approx_dp(r, 1e-9) <= 1
    from dpcore.accounting import approx_dp_to_zcdp_classic
    for e, d in [(0.1, 1e-12), (1, 1e-6), (8, 1e-5), (30, 0.2), (1, 1e-300), (1e-3, 1e-300), (1e100, 1e-6)]:
        r = approx_dp_to_zcdp(e, d)
        assert zcdp_to_approx_dp(r, d) <= e                    # conservative
        assert zcdp_to_approx_dp(r * (1 + 1e-12), d) > e       # and the largest such rho
        assert r >= approx_dp_to_zcdp_classic(e, d) > 0        # never below the classic inverse
