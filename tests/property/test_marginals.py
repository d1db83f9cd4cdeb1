"""Marginal counting vs brute-force numpy on random domains: size-1 attributes, empty data,
one record, weights, C/Fortran/strided layouts, every integer dtype, repeated and permuted
subsets."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import _core
from dpcore.dataset import Dataset
from dpcore.domain import Domain

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def brute_force(codes, sizes, subset, weights):
    w = np.ones(len(codes)) if weights is None else weights
    if not subset:
        return np.array(w.sum())
    table = np.zeros(tuple(sizes[a] for a in subset))
    np.add.at(table, tuple(codes[:, a] for a in subset), w)
    return table


@st.composite
def problems(draw):
    d = draw(st.integers(0, 5))
    sizes = draw(st.lists(st.integers(1, 5), min_size=d, max_size=d))
    n = draw(st.sampled_from([0, 1, draw(st.integers(2, 80))]))
    codes = np.array([[draw(st.integers(0, s - 1)) for s in sizes] for _ in range(n)],
                     dtype=np.int64).reshape(n, d)
    subsets = draw(st.lists(
        st.permutations(range(d)).flatmap(lambda p: st.integers(0, len(p)).map(lambda k: p[:k])),
        max_size=8))
    if subsets and draw(st.booleans()):
        subsets.append(subsets[0])  # a repeated subset
    weights = None
    if draw(st.booleans()):
        weights = np.array(draw(st.lists(st.floats(-10, 10, allow_nan=False), min_size=n,
                                         max_size=n)))
    return codes, sizes, subsets, weights


def layouts(codes, dtype, layout):
    """The same logical array in another memory layout (no copy left to the kernel)."""
    x = codes.astype(dtype)
    if layout == "C":
        return np.ascontiguousarray(x)
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "strided":  # every other row and column of a bigger array
        big = np.zeros((2 * x.shape[0], 2 * x.shape[1]), dtype=dtype)
        big[::2, ::2] = x
        return big[::2, ::2]
    return np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]  # negative strides


@settings(max_examples=150, deadline=None)
@given(problem=problems(), dtype=st.sampled_from(DTYPES),
       layout=st.sampled_from(["C", "F", "strided", "reversed"]),
       threads=st.sampled_from([0, 1, 2]))
def test_count_marginals_matches_brute_force(problem, dtype, layout, threads):
    codes, sizes, subsets, weights = problem
    records = layouts(codes, dtype, layout)
    assert np.array_equal(records, codes)
    tables = _core.count_marginals(records, sizes, subsets, weights, threads=threads)
    assert len(tables) == len(subsets)
    for subset, table in zip(subsets, tables):
        want = brute_force(codes, sizes, subset, weights)
        assert table.dtype == np.float64 and table.shape == want.shape
        np.testing.assert_allclose(table, want, rtol=1e-12, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(problem=problems())
def test_dataset_marginals_are_factors_over_the_given_order(problem):
    codes, sizes, subsets, weights = problem
    domain = Domain([f"x{i}" for i in range(len(sizes))], sizes)
    ds = Dataset(codes, domain, weights)
    attr_sets = [tuple(domain.attrs[a] for a in s) for s in subsets]
    for attrs, factor, subset in zip(attr_sets, ds.marginals(attr_sets), subsets):
        assert factor.attributes == attrs
        np.testing.assert_allclose(factor.values, brute_force(codes, sizes, subset, weights),
                                   rtol=1e-12, atol=1e-9)


def test_large_input_takes_the_parallel_paths():
    """Enough rows that both schedules (rows split, groups split) run on two threads."""
    rng = np.random.default_rng(5)
    sizes = [3, 7, 2, 50, 4]
    codes = np.stack([rng.integers(0, s, 400_000) for s in sizes], axis=1).astype(np.int32)
    few = [[3, 1], []]  # the empty subset (the total) must survive the row split
    many = [[a, b] for a in range(5) for b in range(5) if a != b]
    for subsets in (few, many):
        tables = _core.count_marginals(codes, sizes, subsets, threads=2)
        for subset, table in zip(subsets, tables):
            if not subset:
                assert float(table) == len(codes)
                continue
            flat = np.ravel_multi_index(tuple(codes[:, a] for a in subset),
                                        [sizes[a] for a in subset])
            want = np.bincount(flat, minlength=table.size).reshape(table.shape)
            np.testing.assert_array_equal(table, want)
