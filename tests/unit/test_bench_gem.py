"""bench/gem.py's scorer, which scores dpcore's and the authors' GEM / RAP-softmax alike, against
brute force: the one-hot mixture's marginals, the records' marginals, and the two errors."""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "gem.py")
_spec = importlib.util.spec_from_file_location("bench_gem", _PATH)
gem = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gem
_spec.loader.exec_module(gem)


@st.composite
def _case(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=3, max_size=4))
    attrs = [f"a{i}" for i in range(len(sizes))]
    seed = draw(st.integers(0, 2 ** 32 - 1))
    components = draw(st.integers(1, 5))
    return attrs, dict(zip(attrs, sizes)), seed, components


def _onehot(sizes, attrs, components, rng):
    """Random per-component probabilities in the one-hot layout (rows sum to 1 per block)."""
    blocks = [rng.dirichlet(np.ones(sizes[a]), size=components) for a in attrs]
    return np.concatenate(blocks, axis=1), blocks


@settings(max_examples=30, deadline=None)
@given(_case())
def test_mixture_marginal_is_the_average_of_products(case):
    attrs, sizes, seed, components = case
    rng = np.random.default_rng(seed)
    onehot, blocks = _onehot(sizes, attrs, components, rng)
    model = gem.mixture(attrs, sizes, onehot)
    for clique in itertools.combinations(attrs, 2):
        got = model.marginal(clique)
        i, k = attrs.index(clique[0]), attrs.index(clique[1])
        for u, v in itertools.product(range(sizes[clique[0]]), range(sizes[clique[1]])):
            brute = sum(blocks[i][j, u] * blocks[k][j, v] for j in range(components)) / components
            assert got[u, v] == pytest.approx(brute, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(_case())
def test_scores_and_records_marginal_match_brute_force(case):
    attrs, sizes, seed, _ = case
    rng = np.random.default_rng(seed)

    def table(n):
        return np.stack([rng.integers(0, sizes[a], n) for a in attrs], axis=1)

    codes, records = table(int(rng.integers(1, 40))), table(int(rng.integers(1, 40)))
    triples = list(itertools.combinations(attrs, 3))
    workload = triples[:2]
    error, top = gem.scores(gem.records_marginal(attrs, sizes, records), attrs, sizes, codes,
                            workload)

    def cells(clique, rows):
        idx = [attrs.index(a) for a in clique]
        counts = Counter(tuple(r[i] for i in idx) for r in rows)
        return {cell: counts[cell] / len(rows)
                for cell in itertools.product(*(range(sizes[a]) for a in clique))}

    def diffs(clique):
        p, q = cells(clique, codes), cells(clique, records)
        return [abs(p[c] - q[c]) for c in p]

    assert error == pytest.approx(np.mean([sum(diffs(c)) for c in triples]), abs=1e-12)
    assert top == pytest.approx(max(max(diffs(c)) for c in workload), abs=1e-12)


def test_same_model_scores_zero():
    attrs, sizes = ["x", "y", "z"], {"x": 2, "y": 3, "z": 2}
    codes = np.array([[0, 1, 1], [1, 2, 0], [1, 0, 1]])
    assert gem.scores(gem.records_marginal(attrs, sizes, codes), attrs, sizes, codes,
                      [("x", "y", "z")]) == (0.0, 0.0)
