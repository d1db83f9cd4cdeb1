"""Claim: for one-hot records of a domain with attribute sizes k_1..k_m, the d = sum k_a binary
features q_j(x) = x_j form a separator set of the query class (Vietri et al. 2020, Def. 4.1),
so sepFEM's data player (Alg. 3) perturbs with d Laplace weights, which is the linear oracle
argmax_x sum_i w_i q_i(x) - <x, sigma> with sigma = -lambda; and sepFEM's privacy is FEM's:
the same charges (proofs/fem_selection.py), since its data player never reads the data.

Sources: Vietri, Tian, Bun, Steinke, Wu (ICML 2020), Def. 4.1, Alg. 3, Thm. 6 (the data
player's update does not use D, so privacy is the composition of the T exponential mechanisms).

Preconditions: records are one-hot (exactly one feature per attribute is 1); the perturbation
is drawn from public randomness.

Proof. Two distinct records differ in some attribute a: x_a = v != v' = x'_a, so feature
(a, v) is 1 on x and 0 on x' (checked exhaustively on small shapes, with the d features as the
only queries and no smaller coordinate set doing it when some k_a >= 2: dropping feature (a, v)
with k_a = 2 leaves (a, 0) and (a, 1) told apart by the other, so the check is only that the
full set separates). sum_j lambda_j q_j(x) = <lambda, x> = -<x, -lambda>. Privacy: the mechanism
charges the same events as FEM for the same options (checked on the code: identical ledgers of
events for FEM and sepFEM on the same data, seed and options).
"""
import itertools

import numpy as np

from ._support import assert_true

CLAIM = "one-hot features separate records; sepFEM charges exactly FEM's events"


def check() -> None:
    for shape in [(2,), (3, 2), (2, 2, 2), (1, 3, 2), (4, 1)]:
        offsets = np.concatenate([[0], np.cumsum(shape)[:-1]])
        d = int(sum(shape))
        records = list(itertools.product(*(range(k) for k in shape)))
        onehot = {}
        for r in records:
            x = np.zeros(d, dtype=int)
            x[offsets + np.array(r)] = 1
            onehot[r] = x
        for r, s in itertools.combinations(records, 2):
            assert_true(bool(np.any(onehot[r] != onehot[s])), f"{r} and {s} separated in {shape}")
    # sepFEM's perturbation is the linear oracle's with sigma = -lambda
    from mechanisms.fem import perturb
    rng = np.random.default_rng(0)
    lam = -perturb(np.random.default_rng(1), 2.0, 6, "separator")
    x = rng.integers(0, 2, size=6)
    assert abs(float(lam @ x) - (-float(x @ -lam))) < 1e-12
    # same charges as FEM
    from dpcore import Curator, Dataset, Domain
    from dpcore.accounting import PrivacyFilter
    from mechanisms.fem import fem
    domain = Domain(("a", "b", "c"), (3, 2, 2))
    records = np.random.default_rng(2).integers(0, 2, size=(60, 3))
    events = {}
    for kind in ("exponential", "separator"):
        curator = Curator(Dataset(records, domain), PrivacyFilter.from_approx_dp(1.0, 1e-6), seed=4)
        result = fem(curator, [("a", "b"), ("b", "c")], rounds=4, samples=2, perturbation=kind, seed=4)
        events[kind] = [e.event for e in result.ledger.entries]
    assert_true(events["exponential"] == events["separator"], "sepFEM charges FEM's events")
