"""Claim: DQRS's keep flag (``Curator.reject_queries``), keep query q with probability
p(D) = exp(-e(D)), e(D) = eta + gamma - eta min(c_q(D), n)/n + eta s_q (s_q in {0, 1} public,
n a public count), is eps-DP with eps = (eta/n) max(1, 1/gamma) (the paper's Lemma 9); a fresh
draw with ``select_query`` at eps_t = eta t / n and offsets 2 n S_q / t samples the MW
distribution exp(eta (t c_q / n - S_q)); and ``dqrs_rounds``'s T fits the budget.

Sources: Vietri, Tian, Bun, Steinke, Wu (ICML 2020), Alg. 4, Lemmas 8-9; Gaboardi et al. 2014
(DualQuery, the MW sign convention); proofs/pure_dp.py (eps-DP => eps^2/2-zCDP);
proofs/fem_selection.py (the selection's sensitivity 1).

Preconditions: add/remove-one neighbours change one count c_q by at most 1; eta, gamma, n > 0
public; s_q public (the query on a synthetic record).

Proof. m(c) = min(c, n)/n is 1/n-Lipschitz in c and lies in [0, 1], so e >= gamma > 0 (p <= 1)
and e moves by at most a = eta/n between neighbours. log p = -e moves by at most a. The reject
probability 1 - e^-e: d/dx log(1 - e^-x) = 1/(e^x - 1) <= 1/x <= 1/gamma for x >= gamma (as
e^x - 1 >= x), so by the mean value theorem log(1 - p) moves by at most a/gamma. Both outcomes'
log ratios are at most a max(1, 1/gamma) = eps. Fresh draws: the curator's EM has
Pr[q] ∝ exp(eps (2 c_q - n_true - off_q) / 2); with eps = eta t / n and off_q = 2 n S_q / t this
is exp(eta t c_q / n - eta S_q) times a factor common to all q (checked symbolically). Numeric
checks: the exact log ratios on a grid of (c, n, eta, gamma, s) never exceed eps; the real
``Curator.reject_queries`` on neighbouring datasets, its keep exponents observed at the exact
Bernoulli sampler, moves both log-probabilities by at most the eps it charged; the code's
round count fits its worst-case cost.
"""
from fractions import Fraction

import mpmath
import sympy as sp

from ._neighbours import neighbour_pairs, patched
from ._support import assert_equal, assert_true

CLAIM = "DQRS keep flag is (eta/n)max(1,1/gamma)-DP; fresh draws are the MW law; T fits"


def check() -> None:
    x = sp.Symbol("x", positive=True)
    assert_equal(sp.diff(sp.log(1 - sp.exp(-x)), x), 1 / (sp.exp(x) - 1), "slope of log(1 - e^-x)")
    # e^x - 1 - x >= 0: zero at 0, derivative e^x - 1 >= 0
    assert_equal((sp.exp(x) - 1 - x).subs(x, 0), 0, "e^x - 1 - x at 0")
    assert_true(sp.simplify(sp.diff(sp.exp(x) - 1 - x, x) - (sp.exp(x) - 1)) == 0, "derivative")
    # the exponent is >= gamma for a share in [0, 1] and s in {0, 1}
    eta, gamma, m = sp.symbols("eta gamma m", positive=True)
    for s in (0, 1):
        e = eta + gamma - eta * m + eta * s
        assert_equal(e - gamma, eta * (1 - m) + eta * s, "e - gamma = eta (1 - m) + eta s >= 0")
    # fresh draws: eps (2c - off)/2 with eps = eta t / n, off = 2 n S / t
    c, S, t, n = sp.symbols("c S t n", positive=True)
    eps_t = eta * t / n
    assert_equal(eps_t * (2 * c - 2 * n * S / t) / 2, eta * t * c / n - eta * S, "MW exponent")
    # exact log ratios on a grid
    mpmath.mp.dps = 50
    for nn in (7, 50, 1000):
        for et in (Fraction(1, 10), Fraction(1), Fraction(3)):
            for gm in (Fraction(1, 2), Fraction(1, 50), Fraction(2)):
                eps = et / nn * max(Fraction(1), 1 / gm)
                eps = mpmath.mpf(eps.numerator) / eps.denominator
                for cc in range(0, nn + 3):
                    for sq in (0, 1):
                        def p(count):
                            share = min(Fraction(count), Fraction(nn)) / nn
                            v = et + gm - et * share + et * sq
                            return mpmath.exp(-mpmath.mpf(v.numerator) / v.denominator)
                        a, b = p(cc), p(cc + 1)
                        keep = abs(mpmath.log(a / b))
                        drop = abs(mpmath.log((1 - a) / (1 - b)))
                        tol = mpmath.mpf(10) ** -40     # mpmath rounding at 50 digits
                        assert keep <= eps + tol and drop <= eps + tol, (nn, et, gm, cc)
    _check_real_code()
    # the planned rounds fit the budget in the worst case
    from mechanisms.dqrs import dqrs_rounds, round_cost
    for rho, eta_v, s_v, total in ((Fraction(1, 100), 0.1, 50, 48842.0), (Fraction(1, 10 ** 4), 0.05, 20, 1000.0)):
        T = dqrs_rounds(rho, eta_v, s_v, total)
        cost = sum((round_cost(tt, eta_v, s_v, total) for tt in range(1, T)), Fraction(0))
        assert cost <= rho, (rho, T)
        assert cost + round_cost(T, eta_v, s_v, total) > rho * (1 - Fraction(1, 10 ** 9)) or T == 5000


def _check_real_code() -> None:
    """The keep exponents the real curator computes for D and D + one record (every query of
    two marginals, random public flags): each flag's log keep- and reject-probabilities move
    by at most the eps charged for it."""
    import random

    import numpy as np

    import dpcore.curator as curator
    from dpcore import Curator, Dataset, Domain
    from dpcore.accounting import PrivacyFilter
    domain = Domain(("a", "b"), (3, 2))
    cliques = [("a",), ("a", "b")]
    queries = np.array([(j, y, s) for j, size in enumerate((3, 6)) for y in range(size)
                        for s in (1, -1)], dtype=np.int64)
    rng = random.Random(11)
    mpmath.mp.dps = 50
    tol = mpmath.mpf(10) ** -40
    for eta, gamma, total in ((0.5, 0.25, 3.0), (2.0, 1.5, 5.0), (0.1, 0.02, 1.0)):
        flags = np.array([rng.randint(0, 1) for _ in range(len(queries))])
        for small, large in neighbour_pairs(domain, rng, datasets=3):
            seen = []

            def spy(num, den, src):
                seen.append(mpmath.mpf(num) / den)
                return True
            charged = []
            with patched(curator, "_bernoulli_exp", spy):
                for records in (small, large):
                    f = PrivacyFilter(10 ** 4)
                    Curator(Dataset(records, domain), f, seed=0).reject_queries(
                        cliques, queries, flags, eta, gamma, total)
                    charged.append(f.ledger.charges[-1].event.event.epsilon)
            assert charged[0] == charged[1]
            eps = mpmath.mpf(charged[0].numerator) / charged[0].denominator \
                if isinstance(charged[0], Fraction) else mpmath.mpf(charged[0])
            k = len(queries)
            assert len(seen) == 2 * k, len(seen)      # one exponent a query, for each dataset
            for e0, e1 in zip(seen[:k], seen[k:]):
                keep = abs(e0 - e1)
                drop = abs(mpmath.log(1 - mpmath.exp(-e0)) - mpmath.log(1 - mpmath.exp(-e1)))
                assert keep <= eps + tol and drop <= eps + tol, (eta, gamma, total, e0, e1, eps)
