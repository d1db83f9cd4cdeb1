"""Claim (MWEM+PGM per-round cost): with T rounds and a fraction a of each round's budget on
measurement, eps = sqrt(8 (1-a) rho / T) and sigma = sqrt(T / (2 a rho)) cost exactly rho/T per
round; the issue's instance a = 1/2 is eps = 2 sqrt(rho/T), sigma = sqrt(T/rho).

Source: McKenna, Mullins, Sheldon & Miklau 2022 (AIM paper), Alg. 1 (MWEM+PGM); private-pgm
mwem+pgm.py (notes-accounting.md, section 6).

Preconditions: T >= 1, 0 < a < 1, rho > 0; each round is one exponential mechanism
(proofs/exponential_mechanism.py) and one sensitivity-1 Gaussian measurement (proofs/gaussian.py).

Proof. eps^2/8 + 1/(2 sigma^2) = (1-a) rho/T + a rho/T = rho/T; T rounds compose to rho
(proofs/zcdp_composition.py). Checked symbolically below.
"""
import sympy as sp

from ._support import assert_equal

CLAIM = "MWEM+PGM costs exactly rho/T per round"


def check() -> None:
    rho, T = sp.symbols("rho T", positive=True)
    a = sp.Symbol("a", positive=True)
    eps = sp.sqrt(8 * (1 - a) * rho / T)
    sigma = sp.sqrt(T / (2 * a * rho))
    assert_equal(eps ** 2 / 8 + 1 / (2 * sigma ** 2), rho / T, "general split")
    eps_half, sigma_half = 2 * sp.sqrt(rho / T), sp.sqrt(T / rho)
    assert_equal(eps_half, eps.subs(a, sp.Rational(1, 2)), "eps at a = 1/2")
    assert_equal(sigma_half, sigma.subs(a, sp.Rational(1, 2)), "sigma at a = 1/2")
    assert_equal(eps_half ** 2 / 8 + 1 / (2 * sigma_half ** 2), rho / T, "issue's instance")
    assert_equal(T * (rho / T), rho, "T rounds")
