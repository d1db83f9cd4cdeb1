"""Factor operations equal their direct numpy definitions on random domains (hypothesis)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from dpcore.domain import Domain
from dpcore.factor import Factor

NAMES = ("a", "b", "c", "d", "e")


@st.composite
def factors(draw, names=NAMES, sizes=None):
    attrs = draw(st.permutations(names).map(lambda p: p[:draw(st.integers(0, len(p)))]))
    shape = tuple(sizes[a] if sizes else draw(st.integers(1, 4)) for a in attrs)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1.0, 300.0]))
    return Factor(Domain(attrs, shape), scale * rng.standard_normal(shape))


@st.composite
def factor_pairs(draw):
    sizes = {a: draw(st.integers(1, 4)) for a in NAMES}
    return draw(factors(sizes=sizes)), draw(factors(sizes=sizes))


def reference_aligned(f, attrs):
    """f's values as an array with axes ``attrs`` (size-1 axes where f lacks an attribute)."""
    own = f.attributes
    present = [a for a in attrs if a in own]
    v = f.values.transpose([own.index(a) for a in present])
    return v.reshape([f.domain[a] if a in own else 1 for a in attrs])


@settings(max_examples=80, deadline=None)
@given(factors(), st.data())
def test_project_and_logsumexp_match_numpy(f, data):
    keep = data.draw(st.permutations(f.attributes).map(
        lambda p: p[:data.draw(st.integers(0, len(p)))]))
    own = f.attributes
    drop = tuple(i for i, a in enumerate(own) if a not in keep)
    kept = [a for a in own if a in keep]
    perm = [kept.index(a) for a in keep]
    want = f.values.sum(axis=drop).transpose(perm)
    want_log = logsumexp(f.values, axis=drop).transpose(perm) if drop else f.values.transpose(perm)
    np.testing.assert_allclose(f.project(keep).values, want, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(f.project(keep, log=True).values, want_log, rtol=1e-12, atol=1e-12)
    assert f.project(keep).attributes == tuple(keep)
    assert np.isclose(f.logsumexp(), logsumexp(f.values), rtol=1e-12)


@settings(max_examples=80, deadline=None)
@given(factor_pairs())
def test_broadcast_arithmetic_matches_numpy(pair):
    f, g = pair
    union = f.attributes + tuple(a for a in g.attributes if a not in f.attributes)
    fv, gv = reference_aligned(f, union), reference_aligned(g, union)
    for got, want in [(f + g, fv + gv), (f - g, fv - gv), (f * g, fv * gv)]:
        assert got.attributes == union
        np.testing.assert_array_equal(got.values, np.broadcast_to(want, got.values.shape))
    np.testing.assert_array_equal((2.5 * f - 1).values, 2.5 * f.values - 1)


@settings(max_examples=60, deadline=None)
@given(factors(), st.data())
def test_expand_transpose_normalize_roundtrip(f, data):
    extra = data.draw(st.lists(st.sampled_from([n for n in "pqr"]), unique=True))
    big = f.domain.merge(Domain(tuple(extra), tuple(2 for _ in extra)))
    order = data.draw(st.permutations(big.attrs))
    expanded = f.expand(big).transpose(order)
    assert expanded.attributes == tuple(order)
    back = expanded.project(f.attributes)
    np.testing.assert_allclose(back.values, f.values * 2 ** len(extra), rtol=1e-12, atol=1e-9)
    p = f.normalize(log=True).exp()
    assert np.isclose(p.sum(), 1.0, rtol=1e-12)
    assert np.isclose(p.normalize(total=3.0).sum(), 3.0, rtol=1e-12)
    finite = p.values > 1e-200  # exp underflows below that
    np.testing.assert_allclose(p.log().values[finite], f.normalize(log=True).values[finite],
                               atol=1e-9)


@st.composite
def large_factor_pairs(draw):
    """Tables of 1e5+ cells, so the kernels split them over threads (factor.cpp, kGrain)."""
    sizes = {a: draw(st.integers(10, 18)) for a in NAMES}
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    big = draw(st.permutations(NAMES))
    small = draw(st.permutations(NAMES).map(lambda p: p[:draw(st.integers(0, 3))]))
    make = lambda attrs: Factor(Domain(attrs, [sizes[a] for a in attrs]),  # noqa: E731
                                30.0 * rng.standard_normal([sizes[a] for a in attrs]))
    return make(tuple(big)), make(tuple(small))


@settings(max_examples=12, deadline=None)
@given(large_factor_pairs())
def test_threaded_kernels_on_large_tables_match_numpy(pair):
    f, g = pair
    keep = g.attributes
    drop = tuple(i for i, a in enumerate(f.attributes) if a not in keep)
    kept = [a for a in f.attributes if a in keep]
    perm = [kept.index(a) for a in keep]
    np.testing.assert_allclose(f.project(keep).values, f.values.sum(axis=drop).transpose(perm),
                               rtol=1e-11, atol=1e-9)
    np.testing.assert_allclose(f.project(keep, log=True).values,
                               logsumexp(f.values, axis=drop).transpose(perm), rtol=1e-12)
    gv = reference_aligned(g, f.attributes)
    np.testing.assert_array_equal((f + g).values, f.values + gv)
    np.testing.assert_array_equal((f * g).values, f.values * gv)
    assert np.isclose(f.logsumexp(), logsumexp(f.values), rtol=1e-13)
