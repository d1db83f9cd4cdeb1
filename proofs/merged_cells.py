"""Claim (merged cells): aggregating a marginal's cells by a public map phi (Curator.compress:
new cell j holds the sum of the old cells c with phi(c) = j, per attribute, composed over
repeated compressions) keeps its L1 and L2 sensitivity at 1 under add/remove-one, so a
compressed curator still charges GaussianEvent(sigma, 1) per marginal.

Source: McKenna, Miklau & Sheldon 2021 (NIST-MST), Alg. 4 (compress domain) and Sec. 3
(papers/nist-mst.txt); the sensitivity argument is the one below.

Preconditions: phi is fixed independently of the private data (in MST it is computed from
noisy one-way marginals, i.e. post-processing); every record adds a weight in [0, 1] to
exactly one cell of the uncompressed marginal.

Proof. The compressed marginal is A M(D) with A the 0/1 matrix with A[j, c] = 1 iff phi(c) = j:
every column of A has exactly one 1. A neighbour changes M by c e_k (|c| <= 1), hence A M by
c A e_k = c e_{phi(k)}, whose L1 and L2 norms are both |c| <= 1. For a clique the map is the
product of per-attribute maps, again one 1 per column. The check verifies A e_k = e_{phi(k)}
for every surjection of 4 cells onto 1..4 merged cells with sympy, and runs the real
Curator.compress (twice, so composition of maps is exercised) + measure on add-one neighbours
of random datasets, with the sampler's noise replaced by zeros to observe the exact merged
marginals.
"""
import itertools
import random

import numpy as np
import sympy as sp

from ._neighbours import neighbour_pairs, patched

CLAIM = "merging a marginal's cells by a public map keeps L1 and L2 sensitivity 1"


def _surjections(n):
    for k in range(1, n + 1):
        for phi in itertools.product(range(k), repeat=n):
            if set(phi) == set(range(k)):
                yield k, phi


def _exact_marginals(dataset, maps, cliques):
    """Run the real curator (compressed by ``maps`` in sequence) with zero noise."""
    from dpcore.accounting import PrivacyFilter
    from dpcore.curator import Curator
    import dpcore.curator as curator_module

    curator = Curator(dataset, PrivacyFilter(10), seed=0)
    for mapping in maps:
        curator = curator.compress(mapping)
    with patched(curator_module, "discrete_gaussian_noise",
                 lambda sigma, size, rng: np.zeros(size, dtype=np.int64)):
        out = [curator.measure(c, 1.0) for c in cliques]
    events = [e.event for e in curator.privacy_filter.ledger.entries]
    assert all(e.sensitivity == 1 for e in events), events
    return out


def check() -> None:
    for k, phi in _surjections(4):
        A = sp.Matrix(k, 4, lambda j, c: 1 if phi[c] == j else 0)
        for cell in range(4):
            moved = A * sp.Matrix(4, 1, lambda i, _: 1 if i == cell else 0)
            assert moved == sp.Matrix(k, 1, lambda j, _: 1 if j == phi[cell] else 0), (phi, cell)
            assert sum(abs(x) for x in moved) == 1 and sp.sqrt(sum(x ** 2 for x in moved)) == 1

    from dpcore import Dataset, Domain
    domain = Domain(("a", "b", "c"), (4, 3, 2))
    cliques = [("a",), ("a", "b"), ("a", "b", "c")]
    rng = random.Random(2021)
    for trial, (small, large) in enumerate(neighbour_pairs(domain, rng, datasets=3)):
        # a: 4 -> 3 -> 2 cells (two compressions compose), b: 3 -> 2 cells; random merges
        first = {"a": [0, 1, 2, rng.randrange(3)], "b": [0, rng.randrange(2), 1]}
        second = {"a": [0, 1, rng.randrange(2)]}
        weights = None if trial % 2 else [rng.choice([0.0, 0.5, 1.0]) for _ in range(len(large))]
        m_small = _exact_marginals(Dataset(small, domain, None if weights is None else weights[:-1]),
                                   [first, second], cliques)
        m_large = _exact_marginals(Dataset(large, domain, weights), [first, second], cliques)
        added = 1.0 if weights is None else weights[-1]
        for x, y in zip(m_small, m_large):
            diff = y - x
            assert np.sum(np.abs(diff)) <= 1 and np.sqrt(np.sum(diff ** 2)) <= 1, diff
            # exactly one merged cell moves, by the added record's weight
            assert np.isclose(np.sum(np.abs(diff)), added) and np.count_nonzero(diff) <= 1, diff
