"""mechanisms.consistency: the simplex projection against its optimality conditions and random
feasible points, and the consistency step against what it promises (valid tables, agreement on
shared attributes when no clipping binds, exact tables left alone, noise reduced)."""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore.errors import InvalidArgumentError
from mechanisms.consistency import consistent_tables, project_simplex

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=30), st.floats(0.1, 100),
       st.integers(0, 2 ** 32))
def test_simplex_projection_is_the_nearest_point(values, total, seed):
    v = np.array(values)
    p = project_simplex(v, total)
    assert np.all(p >= 0) and p.sum() == pytest.approx(total, rel=1e-9, abs=1e-9)
    # brute force: no random point of the scaled simplex (nor a vertex) is nearer
    rng = np.random.default_rng(seed)
    candidates = np.vstack([rng.dirichlet(np.ones(v.size), 200) * total,
                            np.eye(v.size) * total])
    best = np.min(np.linalg.norm(candidates - v, axis=1))
    assert np.linalg.norm(p - v) <= best + 1e-9
    # KKT: the positive cells are v shifted by one constant
    shift = (v - p)[p > 0]
    assert np.ptp(shift) <= 1e-9 * max(1.0, np.abs(v).max())


def random_records(draw_seed, d, n):
    rng = np.random.default_rng(draw_seed)
    sizes = rng.integers(1, 5, size=d)
    records = np.stack([rng.integers(0, k, size=n) for k in sizes], axis=1)
    return records, sizes, rng


def true_tables(records, sizes, cols):
    out = []
    for i, j in cols:
        t = np.zeros((sizes[i], sizes[j]))
        np.add.at(t, (records[:, i], records[:, j]), 1.0)
        out.append(t)
    return out


@SETTINGS
@given(st.integers(0, 2 ** 32), st.integers(2, 5), st.integers(1, 5))
def test_exact_tables_are_a_fixed_point(seed, d, rounds):
    records, sizes, _ = random_records(seed, d, 200)
    cols = list(itertools.combinations(range(d), 2))
    truth = true_tables(records, sizes, cols)
    out = consistent_tables(truth, cols, 200.0, rounds=rounds)
    for t, q in zip(truth, out):
        np.testing.assert_allclose(q, t / 200.0, atol=1e-12)


@SETTINGS
@given(st.integers(0, 2 ** 32), st.integers(2, 5))
def test_shared_margins_agree_when_nothing_is_clipped(seed, d):
    # large counts and small noise: the simplex projection never clips, so one round must
    # leave every pair of tables agreeing exactly on the attribute they share
    records, sizes, rng = random_records(seed, d, 5000)
    records = np.vstack([records, np.array(list(itertools.product(*[range(k) for k in sizes])))
                         .repeat(50, axis=0)])          # every cell well above the noise
    n = float(len(records))
    cols = list(itertools.combinations(range(d), 2))
    noisy = [t + rng.normal(0, 2.0, t.shape) for t in true_tables(records, sizes, cols)]
    out = consistent_tables(noisy, cols, n, rounds=1)
    for q in out:
        assert np.all(q >= 0) and q.sum() == pytest.approx(1.0)
    for (s, (i, j)), (t, (k, l)) in itertools.combinations(list(enumerate(cols)), 2):
        for a in {i, j} & {k, l}:
            ms = out[s].sum(axis=1 if a == i else 0)
            mt = out[t].sum(axis=1 if a == k else 0)
            np.testing.assert_allclose(ms, mt, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2 ** 32))
def test_consistency_reduces_the_error_of_noisy_tables(seed):
    # averaged over many tables, pooling the shared margins can only help: the consistent
    # tables are nearer the truth than each table projected alone (d = 6: 5 tables share each
    # attribute)
    records, sizes, rng = random_records(seed, 6, 400)
    cols = list(itertools.combinations(range(6), 2))
    truth = true_tables(records, sizes, cols)
    noisy = [t + rng.normal(0, 8.0, t.shape) for t in truth]
    alone = [project_simplex(y, 400.0) / 400.0 for y in noisy]
    pooled = consistent_tables(noisy, cols, 400.0)
    err = lambda tabs: np.mean([np.abs(q - t / 400.0).sum() for q, t in zip(tabs, truth)])
    assert err(pooled) < err(alone)


def test_bad_input_is_refused():
    t = np.ones((2, 2))
    with pytest.raises(InvalidArgumentError):
        consistent_tables([t], [(0, 1)], 0.0)
    with pytest.raises(InvalidArgumentError):
        consistent_tables([t], [(0, 1)], 4.0, rounds=0)
    with pytest.raises(InvalidArgumentError):
        consistent_tables([t, np.ones((3, 2))], [(0, 1), (0, 2)], 4.0)   # column 0: 2 vs 3
    with pytest.raises(InvalidArgumentError):
        consistent_tables([t], [(0, 1), (0, 2)], 4.0)


@SETTINGS
@given(st.integers(0, 2 ** 32), st.integers(2, 5), st.integers(1, 5))
def test_margins_are_the_pooled_noisy_margins(seed, d, noise):
    # nothing clipped: after one round every table's margin on an attribute is the
    # inverse-variance pooled margin of the *noisy* tables (recomputed here from its definition)
    records, sizes, rng = random_records(seed, d, 5000)
    records = np.vstack([records, np.array(list(itertools.product(*[range(k) for k in sizes])))
                         .repeat(50, axis=0)])
    n = float(len(records))
    cols = list(itertools.combinations(range(d), 2))
    sigmas = rng.uniform(0.5, 2.0, len(cols)) * noise
    noisy = [t + rng.normal(0, s, t.shape) for t, s in zip(true_tables(records, sizes, cols), sigmas)]
    out = consistent_tables(noisy, cols, n, sigmas, rounds=1)
    for a in range(d):
        num, den = 0.0, 0.0
        for (i, j), y, s in zip(cols, noisy, sigmas):
            if a in (i, j):
                y = y + (n - y.sum()) / y.size
                other = y.shape[1] if a == i else y.shape[0]
                num = num + y.sum(axis=1 if a == i else 0) / (s ** 2 * other)
                den += 1.0 / (s ** 2 * other)
        pooled = num / den / n
        for (i, j), q in zip(cols, out):
            if a in (i, j):
                np.testing.assert_allclose(q.sum(axis=1 if a == i else 0), pooled, atol=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2 ** 32))
def test_heavy_noise_leaves_the_margins_at_the_pooled_noisy_margins(seed):
    # noise far above the counts of a 40 x 40 table (as on adult-pgm's 100 x 100 tables):
    # the simplex projection keeps positive noise on the empty cells. The margins must stay at
    # the projection of the pooled *noisy* margins (unbiased), up to the last clipping; session
    # 11 re-pooled the projected tables every round and drifted 0.13 (L1) away from it,
    # towards the far mass (variance of a column 40 where the data's is 2)
    rng = np.random.default_rng(seed)
    d, k, n = 6, 40, 20000
    records = np.minimum(rng.geometric(0.5, size=(n, d)) - 1, k - 1)
    cols = list(itertools.combinations(range(d), 2))
    noisy = [t + rng.normal(0, 30.0, t.shape)
             for t in true_tables(records, np.full(d, k), cols)]
    out = consistent_tables(noisy, cols, float(n))
    for a in range(d):
        held = [(y + (n - y.sum()) / y.size).sum(axis=1 if a == i else 0)
                for (i, j), y in zip(cols, noisy) if a in (i, j)]
        target = project_simplex(np.mean(held, axis=0), float(n)) / n
        for (i, j), q in zip(cols, out):
            if a in (i, j):
                assert np.abs(q.sum(axis=1 if a == i else 0) - target).sum() < 0.01
