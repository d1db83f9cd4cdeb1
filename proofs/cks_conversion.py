"""Claim: rho-zCDP implies (epsilon, delta)-DP for
    epsilon(rho, delta) = inf_{alpha > 1} f(alpha),
    f(alpha) = alpha rho + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1),
the minimiser is the unique root of g(alpha) = rho (alpha-1)^2 + log(delta alpha) in
(1, 1 + sqrt(log(1/delta)/rho)], and this is never larger than the classic bound
rho + 2 sqrt(rho log(1/delta)).

Sources: Canonne, Kamath & Steinke 2020 (arXiv 2004.00010 v4, Prop. 12); Asoodeh et al. 2020;
Balle et al. 2020 (arXiv 1905.09982) Thm 21; classic bound Bun & Steinke 2016 Prop. 1.3.
Known answer: rho = 5, delta = 1e-6 gives 20.5519488140 (CKS) and 21.6225813627 (classic),
matching OpenDP and mpmath (notes-accounting.md, section 6).

Preconditions: 0 < delta < 1, rho > 0 (rho = 0 gives epsilon = 0).

Proof. CKS Prop. 12: an (alpha, tau)-RDP mechanism is (epsilon, delta)-DP with
    delta = exp((alpha-1)(tau - epsilon)) / (alpha-1) * (1 - 1/alpha)^alpha.          (1)
Solving (1) for epsilon gives epsilon = tau + log(1-1/alpha) - (log delta + log alpha)/(alpha-1)
(algebra checked below), and zCDP gives tau = alpha rho for every alpha, so every alpha > 1
yields a valid epsilon and the infimum is valid too. Differentiating,
    f'(alpha) = rho + log(delta alpha) / (alpha-1)^2 = g(alpha) / (alpha-1)^2,         (2)
g'(alpha) = 2 rho (alpha-1) + 1/alpha > 0, g(1+) = log(delta) < 0 and
g(1 + sqrt(L/rho)) = log(1 + sqrt(L/rho)) > 0 with L = log(1/delta) (3): f decreases then
increases, with the unique minimiser in that bracket, found by bisection at 40 digits and
rounded up. If f(alpha*) < 0 we report 0 ((epsilon', delta)-DP with epsilon' < 0 implies (0, delta)).
Never looser than classic: f(alpha) = [alpha rho + L/(alpha-1)] + [log(1-1/alpha) - log(alpha)/(alpha-1)]
(4); the second bracket is negative for alpha > 1, so f(alpha) is below Mironov's basic bound at
every alpha, and the basic bound's minimum over alpha is rho + 2 sqrt(rho L), attained at
alpha = 1 + sqrt(L/rho) (5).
The code bisects log(alpha - 1) (alpha* - 1 ranges from 1e-150 to 1e150 over the float inputs),
so the check also compares it with an independent 400-digit root at delta = 1e-300 and rho = 1e100.
For zcdp_delta (delta at a given epsilon): d/dalpha log delta(alpha) = (2alpha-1) rho - epsilon
+ log(1-1/alpha) (6) is increasing, -> -inf at 1+, and positive at (epsilon+1)/(2rho) + 2 (7).
"""
import sympy as sp

from ._support import assert_equal

CLAIM = "CKS zCDP->(eps,delta) bound, its optimiser, and CKS <= classic"


def check() -> None:
    a = sp.Symbol("alpha", positive=True)
    rho, eps, tau, L = sp.symbols("rho epsilon tau L", positive=True)
    delta = sp.exp(-L)  # 0 < delta < 1  <=>  L > 0
    # (1) -> epsilon form
    log_delta_1 = (a - 1) * (tau - eps) - sp.log(a - 1) + a * sp.log(1 - 1 / a)
    eps_solved = sp.solve(sp.Eq(log_delta_1, -L), eps)[0]
    eps_form = tau + sp.log(1 - 1 / a) - (-L + sp.log(a)) / (a - 1)
    assert_equal(sp.expand_log(eps_solved.subs(a, 1 + sp.Symbol("u", positive=True)), force=True),
                 sp.expand_log(eps_form.subs(a, 1 + sp.Symbol("u", positive=True)), force=True),
                 "epsilon form of the CKS bound")
    f = a * rho + sp.log(1 - 1 / a) - (sp.log(delta) + sp.log(a)) / (a - 1)
    # (2) derivative
    assert_equal(sp.diff(f, a), rho + (sp.log(a) - L) / (a - 1) ** 2, "f'(alpha)")
    g = rho * (a - 1) ** 2 + sp.log(a) - L
    assert_equal(sp.diff(g, a), 2 * rho * (a - 1) + 1 / a, "g'(alpha)")
    # (3) g at the upper bracket
    assert_equal(g.subs(a, 1 + sp.sqrt(L / rho)), sp.log(1 + sp.sqrt(L / rho)), "g at bracket")
    # (4) decomposition against the basic bound
    basic = a * rho + L / (a - 1)
    assert_equal(f - basic, sp.log(1 - 1 / a) - sp.log(a) / (a - 1), "f - basic")
    # (5) the basic bound's minimiser and minimum
    crit = sp.solve(sp.diff(basic, a), a)
    assert any(sp.simplify(c - (1 + sp.sqrt(L / rho))) == 0 for c in crit), crit
    assert_equal(basic.subs(a, 1 + sp.sqrt(L / rho)), rho + 2 * sp.sqrt(rho * L), "classic minimum")
    # (6) derivative of log delta(alpha) at fixed epsilon, tau = alpha rho
    log_delta = (a - 1) * (a * rho - eps) + a * sp.log(1 - 1 / a) - sp.log(a - 1)
    u = sp.Symbol("u", positive=True)
    assert_equal(sp.expand_log(sp.diff(log_delta, a).subs(a, 1 + u), force=True),
                 sp.expand_log(((2 * a - 1) * rho - eps + sp.log(1 - 1 / a)).subs(a, 1 + u), force=True),
                 "d log delta / d alpha")
    # (7) at alpha0 = (eps+1)/(2 rho) + 2 >= 2: (2 alpha0 - 1) rho - eps = 1 + 3 rho > log 2
    a0 = (eps + 1) / (2 * rho) + 2
    assert_equal((2 * a0 - 1) * rho - eps, 1 + 3 * rho, "bracket of zcdp_delta")

    from dpcore.accounting import zcdp_to_approx_dp, zcdp_to_approx_dp_classic
    assert abs(zcdp_to_approx_dp(5, 1e-6) / 20.5519488140 - 1) < 1e-11
    assert abs(zcdp_to_approx_dp_classic(5, 1e-6) / 21.6225813627 - 1) < 1e-11
    for r in (1e-4, 0.1, 5, 300):
        for d in (1e-12, 1e-6, 0.1):
            assert zcdp_to_approx_dp(r, d) <= zcdp_to_approx_dp_classic(r, d)
    # At the extremes the code must still land on f(alpha*), found here independently: Newton on
    # g(1 + e^t) = 0 at 400 digits in the alpha form (no rewriting: 1 - 1/alpha with alpha = 1e151
    # needs them), from the classic order.
    import mpmath
    for r, d in ((1e-300, 1e-300), (1.0, 1e-300), (1e100, 1e-300), (1e100, 0.5), (5.0, 1e-122)):
        with mpmath.workdps(400):
            rm, dm = mpmath.mpf(r), mpmath.mpf(d)
            t = mpmath.findroot(lambda t: rm * mpmath.exp(2 * t) + mpmath.log(dm * (1 + mpmath.exp(t))),
                                mpmath.log(mpmath.sqrt(-mpmath.log(dm) / rm)) - mpmath.mpf(0.1))
            am = 1 + mpmath.exp(t)
            best = am * rm + mpmath.log(1 - 1 / am) - (mpmath.log(dm) + mpmath.log(am)) / (am - 1)
            assert mpmath.fabs(rm * (am - 1) ** 2 + mpmath.log(dm * am)) < mpmath.mpf(10) ** -60 * (1 + rm)
        got = zcdp_to_approx_dp(r, d)
        assert best <= got <= best * (1 + mpmath.mpf(5e-16)), (r, d, got, best)
        assert got <= zcdp_to_approx_dp_classic(r, d)
