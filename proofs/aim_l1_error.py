"""Claim (AIM Theorem 5): for x ~ N(0, sigma^2)^n, E||x||_1 = sqrt(2/pi) sigma n. AIM's quality
score and annealing test use sqrt(2/pi) sigma_t n_r as the expected L1 error of a noisy
marginal with n_r cells.

Source: McKenna, Mullins, Sheldon & Miklau 2022 (AIM), Appendix B, Theorem 5 (papers/aim.txt).

Preconditions: i.i.d. Gaussian noise with standard deviation sigma > 0 on each of n cells.

Proof. |x_i| is half-normal: E|x_i| = 2 int_0^inf x phi_sigma(x) dx = sqrt(2/pi) sigma (checked
below); linearity of expectation over the n cells gives sqrt(2/pi) sigma n. This is a utility
statement, not a privacy one: the score's *sensitivity* is unaffected by this data-independent
offset.
"""
import sympy as sp

from ._support import assert_equal

CLAIM = "expected L1 norm of N(0, sigma^2)^n is sqrt(2/pi) sigma n (AIM Thm 5)"


def check() -> None:
    x = sp.Symbol("x", real=True)
    sigma = sp.Symbol("sigma", positive=True)
    n = sp.Symbol("n", positive=True, integer=True)
    phi = sp.exp(-x ** 2 / (2 * sigma ** 2)) / (sigma * sp.sqrt(2 * sp.pi))
    assert_equal(sp.integrate(phi, (x, -sp.oo, sp.oo)), 1, "phi is a density")
    mean_abs = 2 * sp.integrate(x * phi, (x, 0, sp.oo))
    assert_equal(mean_abs, sp.sqrt(2 / sp.pi) * sigma, "half-normal mean")
    assert_equal(n * mean_abs, sp.sqrt(2 / sp.pi) * sigma * n, "n cells")
