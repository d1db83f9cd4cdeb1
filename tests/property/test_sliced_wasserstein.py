"""The sliced Wasserstein kernels against their NumPy definition, a finite-difference gradient,
and brute-force snapping; the sparse Adam step against PyTorch SparseAdam's update rule."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcore import _core
from dpcore.errors import DpcoreTypeError, InvalidArgumentError
from dpcore.sliced_wasserstein import (particle_adam_step, reference_sliced_wasserstein,
                                       sliced_wasserstein, snap_to_grid)


def _case(seed, m, d, targets, K, sparse):
    rng = np.random.default_rng(seed)
    x = rng.random((m, d))
    pairs = [tuple(int(a) for a in rng.choice(d, 2, replace=False)) for _ in range(targets)]
    tables = []
    for _ in pairs:
        t = rng.random((int(rng.integers(1, 6)), int(rng.integers(1, 6))))
        if sparse:
            t[rng.random(t.shape) < 0.5] = 0.0
            t.flat[int(rng.integers(t.size))] = 1.0
        tables.append(t)
    dirs = rng.normal(size=(targets, K, 2))
    dirs /= np.linalg.norm(dirs, axis=2, keepdims=True)
    return x, pairs, tables, dirs


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(1, 300), d=st.integers(2, 5),
       targets=st.integers(0, 11), K=st.integers(1, 4), sparse=st.booleans(),
       order=st.sampled_from("CF"), threads=st.integers(0, 3))
def test_kernel_matches_numpy_definition(seed, m, d, targets, K, sparse, order, threads):
    x, pairs, tables, dirs = _case(seed, m, d, targets, K, sparse)
    want_loss, want_grad = reference_sliced_wasserstein(x, pairs, tables, dirs.reshape(targets, K, 2))
    loss, grad = sliced_wasserstein(np.asarray(x, order=order), pairs, tables,
                                    dirs.reshape(targets, K, 2), threads=threads)
    assert loss == pytest.approx(want_loss, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-15)


def test_ties_and_clusters_match_definition():
    # particles piled on a few points (as they are once the descent converges): many equal keys
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, size=(5000, 3)) / 2.0
    pairs, tables = [(0, 1), (1, 2)], [rng.random((3, 4)), rng.random((2, 2))]
    dirs = rng.normal(size=(2, 3, 2))
    want = reference_sliced_wasserstein(x, pairs, tables, dirs)
    got = sliced_wasserstein(x, pairs, tables, dirs)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-15)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), order=st.sampled_from("CF"))
def test_many_atoms_and_buckets_match_definition(seed, order):
    # 30k particles (2^14 buckets) against dense 40 x 40 and 100 x 3 tables: hundreds of atom
    # boundaries, so many buckets straddle one and the rank walk crosses many buckets; in
    # either memory order (a column-major matrix is read in place)
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.random((30000, 3)) ** 2, order=order)
    pairs, tables = [(0, 1), (2, 0)], [rng.random((40, 40)), rng.random((100, 3))]
    tables[0][rng.random((40, 40)) < 0.3] = 0.0
    dirs = rng.normal(size=(2, 4, 2))
    dirs /= np.linalg.norm(dirs, axis=2, keepdims=True)
    want = reference_sliced_wasserstein(x, pairs, tables, dirs)
    got = sliced_wasserstein(x, pairs, tables, dirs)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-15)


def test_result_is_the_same_for_every_thread_count():
    x, pairs, tables, dirs = _case(5, 20000, 6, 10, 10, False)
    one = sliced_wasserstein(x, pairs, tables, dirs, threads=1)
    for threads in (2, 3, 0):
        other = sliced_wasserstein(x, pairs, tables, dirs, threads=threads)
        assert other[0] == one[0]
        assert np.array_equal(other[1], one[1])


def test_gradient_matches_finite_differences():
    # W2^2 of sorted samples is smooth away from rank changes: a small step keeps the ranks
    x, pairs, tables, dirs = _case(11, 40, 4, 3, 3, False)
    x = 0.1 + 0.8 * x
    loss, grad = sliced_wasserstein(x, pairs, tables, dirs)
    h = 1e-7
    for r, c in [(0, 0), (5, 1), (17, 2), (39, 3), (20, 0)]:
        step = np.zeros_like(x)
        step[r, c] = h
        up = sliced_wasserstein(x + step, pairs, tables, dirs, gradient=False)[0]
        down = sliced_wasserstein(x - step, pairs, tables, dirs, gradient=False)[0]
        assert (up - down) / (2 * h) == pytest.approx(grad[r, c], rel=1e-4, abs=1e-9)


def test_loss_is_zero_on_the_target_itself():
    # a cloud with 1/4 of its particles on each centre of a 2 x 2 table with equal weights
    x = np.repeat(np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]]), 25, axis=0)
    dirs = np.random.default_rng(0).normal(size=(1, 8, 2))
    loss, grad = sliced_wasserstein(x, [(0, 1)], [np.ones((2, 2))], dirs)
    assert loss == pytest.approx(0.0, abs=1e-20)
    assert np.abs(grad).max() < 1e-15


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(0, 50), d=st.integers(1, 5))
def test_snap_matches_numpy(seed, m, d):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=d)
    x = rng.random((m, d))
    x[rng.random((m, d)) < 0.1] = 1.0
    want = np.minimum(np.floor(x * sizes).astype(np.int64), sizes - 1)
    assert np.array_equal(snap_to_grid(x, sizes), want)
    assert np.array_equal(snap_to_grid(np.asfortranarray(x), sizes), want)
    # each code's cell centre is the nearest centre to the coordinate
    if m:
        centres = (want + 0.5) / sizes
        assert np.all(np.abs(x - centres) <= 0.5 / sizes + 1e-12)


def _sparse_adam(x, g, avg, sq, cols, step, lr, b1, b2, eps):
    """PyTorch SparseAdam's rule on the non-zero entries (no dropping), then clipping."""
    x, avg, sq = x.copy(), avg.copy(), sq.copy()
    mask = np.zeros_like(g, dtype=bool)
    mask[:, cols] = g[:, cols] != 0
    avg[mask] = b1 * avg[mask] + (1 - b1) * g[mask]
    sq[mask] = b2 * sq[mask] + (1 - b2) * g[mask] ** 2
    denom = np.sqrt(sq[mask]) / np.sqrt(1 - b2 ** step) + eps
    x[mask] = np.clip(x[mask] - lr / (1 - b1 ** step) * avg[mask] / denom, 0, 1)
    return x, avg, sq


@pytest.mark.parametrize("order", ["C", "F"])
def test_adam_step_matches_sparse_adam(order):
    rng = np.random.default_rng(1)
    x = np.asarray(rng.random((300, 4)), order=order)
    avg, sq = np.zeros_like(x), np.zeros_like(x)
    want_x, want_avg, want_sq = x.copy(), avg.copy(), sq.copy()
    for step in range(1, 6):
        g = np.asarray(rng.normal(size=x.shape), order=order)
        g[rng.random(g.shape) < 0.3] = 0.0
        want_x, want_avg, want_sq = _sparse_adam(want_x, g, want_avg, want_sq, [0, 2], step,
                                                 0.1, 0.9, 0.999, 1e-8)
        particle_adam_step(x, g, avg, sq, [0, 2], step, learning_rate=0.1)
        assert not g[:, [0, 2]].any()             # the used columns are reset
        assert g[:, [1, 3]].any()                 # the others are left alone
    np.testing.assert_allclose(x, want_x, rtol=1e-12)
    np.testing.assert_allclose(avg, want_avg, rtol=1e-12)
    np.testing.assert_allclose(sq, want_sq, rtol=1e-12)


def test_adam_drops_entries_at_the_keep_rate_reproducibly():
    rng = np.random.default_rng(2)
    x0 = rng.random((20000, 3))
    moved = []
    for _ in range(2):
        x, avg, sq = x0.copy(), np.zeros_like(x0), np.zeros_like(x0)
        g = np.full_like(x0, 0.5)
        particle_adam_step(x, g, avg, sq, [0, 1, 2], 1, keep=0.2, seed=7, threads=2)
        moved.append(x != x0)
    assert np.array_equal(moved[0], moved[1])
    # 60000 entries kept w.p. 0.2: 5 standard deviations is ~0.008
    assert abs(moved[0].mean() - 0.2) < 0.01


def test_bad_inputs_are_refused_with_typed_errors():
    x = np.random.default_rng(0).random((10, 3))
    dirs = np.ones((1, 2, 2))
    with pytest.raises(InvalidArgumentError, match="distinct columns"):
        sliced_wasserstein(x, [(0, 0)], [np.ones((2, 2))], dirs)
    with pytest.raises(InvalidArgumentError, match="distinct columns"):
        sliced_wasserstein(x, [(0, 3)], [np.ones((2, 2))], dirs)
    with pytest.raises(InvalidArgumentError, match="sum > 0"):
        sliced_wasserstein(x, [(0, 1)], [np.zeros((2, 2))], dirs)
    with pytest.raises(InvalidArgumentError, match=">= 0"):
        sliced_wasserstein(x, [(0, 1)], [-np.ones((2, 2))], dirs)
    with pytest.raises(InvalidArgumentError, match="finite"):
        sliced_wasserstein(x, [(0, 1)], [np.ones((2, 2))], np.full((1, 2, 2), np.nan))
    with pytest.raises(InvalidArgumentError, match="shape"):
        sliced_wasserstein(x, [(0, 1)], [np.ones((2, 2))], np.ones((2, 2, 2)))
    bad = x.copy()
    bad[3, 1] = 1.5
    with pytest.raises(InvalidArgumentError, match=r"\[0, 1\]"):
        sliced_wasserstein(bad, [(0, 1)], [np.ones((2, 2))], dirs)
    # the range is checked once per column before the tasks, in either memory order
    for order in "CF":
        for value in (np.nan, -1e-9):
            bad = np.array(x, order=order)
            bad[9, 2] = value
            with pytest.raises(InvalidArgumentError, match=r"\[0, 1\]"):
                sliced_wasserstein(bad, [(0, 1), (2, 1)], [np.ones((2, 2))] * 2,
                                   np.ones((2, 2, 2)) / np.sqrt(2))
            sliced_wasserstein(bad, [(0, 1)], [np.ones((2, 2))], dirs)  # column 2 unused: fine
    with pytest.raises(InvalidArgumentError, match=r"\[0, 1\]"):
        snap_to_grid(bad, [2, 2, 2])
    with pytest.raises(InvalidArgumentError, match="one entry per column"):
        snap_to_grid(x, [2, 2])
    with pytest.raises(DpcoreTypeError):
        sliced_wasserstein(x, [(0, 1)], [np.array([["a"]])], dirs)
    with pytest.raises(DpcoreTypeError):
        _core.sliced_wasserstein(x, "ab", [np.ones((2, 2))], dirs)
    g, avg, sq = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    with pytest.raises(InvalidArgumentError, match="memory order"):
        particle_adam_step(x, np.asfortranarray(g), avg, sq, [0], 1)
    with pytest.raises(InvalidArgumentError, match="distinct"):
        particle_adam_step(x, g, g, sq, [0], 1)
    with pytest.raises(InvalidArgumentError, match="step"):
        particle_adam_step(x, g, avg, sq, [0], 0)
    with pytest.raises(InvalidArgumentError, match="keep"):
        particle_adam_step(x, g, avg, sq, [0], 1, keep=0.0)
    with pytest.raises(InvalidArgumentError, match="column"):
        particle_adam_step(x, g, avg, sq, [5], 1)
