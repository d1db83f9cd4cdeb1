"""Curator.select scores every candidate in one pass of array arithmetic; these tests hold it to
the definition: a brute-force score per candidate in Python integers, fed to the same exact
sampler with the same seed, picks the same candidate (issue 22's speedup changes nothing)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import PrivacyFilter
from dpcore.accounting.level_sampler import level_exponential_mechanism
from dpcore.accounting.noise import make_rng
from dpcore.curator import (SCORE_GRID, WEIGHT_GRID, Curator as _C, _draw, _draw_among, _l1,
                            _l1_cells, _l1_many, _l1_pool, _Pool)
from dpcore.errors import InvalidArgumentError


def brute_marginal(records, domain, attrs):
    axes = [domain.attrs.index(a) for a in attrs]
    out = np.zeros([domain.shape[i] for i in axes])
    for row in records:
        out[tuple(row[axes])] += 1
    return out.ravel()


def brute_score(true, ref, w, p):
    """Q_r = W_r (sum |floor(G c) - rint(G ref)| - P_r) in Python integers (Curator.select)."""
    l1 = sum(abs(int(np.floor(c * SCORE_GRID)) - int(np.rint(x * SCORE_GRID)))
             for c, x in zip(true.tolist(), ref.tolist()))
    return int(np.rint(w * SCORE_GRID)) * (l1 - int(np.rint(p * SCORE_GRID)))


@st.composite
def selections(draw):
    d = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    domain = Domain(tuple(f"x{i}" for i in range(d)), shape)
    n = draw(st.integers(0, 30))
    records = np.array([[draw(st.integers(0, s - 1)) for s in shape] for _ in range(n)],
                       dtype=np.int64).reshape(n, d)
    subsets = [c for k in range(1, d + 1) for c in itertools.combinations(domain.attrs, k)]
    cands = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=8))
    # Candidates in any attribute order: the curator puts them in domain order.
    cands = [tuple(draw(st.permutations(c))) for c in cands]
    values = st.floats(-50, 50, allow_nan=False, width=32)
    refs = [np.array(draw(st.lists(values, min_size=domain.size(c), max_size=domain.size(c))))
            for c in cands]
    weights = draw(st.lists(st.floats(0.01, 3), min_size=len(cands), max_size=len(cands)))
    penalties = draw(st.lists(st.floats(0, 20), min_size=len(cands), max_size=len(cands)))
    return domain, records, cands, refs, weights, penalties, draw(st.integers(0, 2 ** 32))


@settings(max_examples=60, deadline=None)
@given(selections())
def test_select_picks_what_brute_force_scores_pick(case):
    domain, records, cands, refs, weights, penalties, seed = case
    curator = Curator(Dataset(records, domain), PrivacyFilter(100), seed=seed)
    got = curator.select(cands, refs, 1.5, weights=weights, penalties=penalties)
    canon = [tuple(domain.canonical(c)) for c in cands]
    scores = [brute_score(brute_marginal(records, domain, c), r, w, p)
              for c, r, w, p in zip(canon, refs, weights, penalties)]
    top = max(int(np.rint(w * SCORE_GRID)) for w in weights)
    # scores are in units of 1/SCORE_GRID^2, so the sensitivity is top * SCORE_GRID there
    shifted = np.array([v - max(scores) for v in scores], dtype=np.int64)  # the same law
    want = level_exponential_mechanism(shifted, 1.5, top * SCORE_GRID, make_rng(seed))
    assert got == _draw(scores, 1.5, top * SCORE_GRID, make_rng(seed))
    assert got == want
    # The references were given in the candidates' own attribute order and used as flat
    # vectors over the canonical clique, as before: same length, no reordering.
    assert all(len(r) == domain.size(c) for r, c in zip(refs, canon))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.data())
def test_l1_many_equals_one_l1_per_candidate_including_the_exact_fallbacks(sizes, data):
    # Cells up to beyond 2^40 records take the Python-integer path; sums near 2^63 the per-
    # candidate fallback. Either way the answer is _l1's.
    big = data.draw(st.booleans())
    top = 2.0 ** 41 if big else 2.0 ** 39
    trues = [np.array(data.draw(st.lists(st.floats(0, top, allow_nan=False), min_size=n, max_size=n)))
             for n in sizes]
    refs = np.array(data.draw(st.lists(st.integers(-2 ** 59, 2 ** 59), min_size=sum(sizes),
                                       max_size=sum(sizes))), dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    want = [_l1(np.floor(t * SCORE_GRID), refs[s:s + n]) for t, s, n in zip(trues, starts, sizes)]
    assert _l1_many(trues, refs, np.array(sizes, dtype=np.int64)) == want


@settings(max_examples=40, deadline=None)
@given(selections(), st.data())
def test_select_among_is_select_on_the_subset_step_after_step(case, data):
    # A sequence of draws from subsets of one fixed list (as MST's Kruskal makes them), with
    # the flat reference kept, changed in place, or replaced: each draw and each ledger entry
    # equals what select on the explicit subset gives from a curator with the same seed.
    domain, records, cands, refs, weights, penalties, seed = case
    k = len(cands)
    flat = np.concatenate(refs)
    fast = Curator(Dataset(records, domain), PrivacyFilter(100), seed=seed)
    slow = Curator(Dataset(records, domain), PrivacyFilter(100), seed=seed)
    last = None    # a copy of the flat reference last given: what reference=None stands for
    starts = np.cumsum([0] + [r.size for r in refs]).tolist()
    for step in range(data.draw(st.integers(1, 5))):
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)))
        if not mask.any():
            mask[data.draw(st.integers(0, k - 1))] = True
        how = data.draw(st.sampled_from(["same", "in place", "new", "vectors", "none"]))
        if how in ("in place", "none"):
            flat[data.draw(st.integers(0, flat.size - 1))] += 1.0   # must not reuse old scores
        elif how == "new":
            flat = flat + 0.5
        among = mask if data.draw(st.booleans()) else np.flatnonzero(mask)
        live = np.flatnonzero(mask).tolist()
        if how == "none":
            # the curator's own copy of the last flat reference: the caller's array changed in
            # place since then does not matter; with none given, a typed error and no charge
            if last is None:
                entries = fast.privacy_filter.ledger.entries
                with pytest.raises(InvalidArgumentError, match="reference=None"):
                    fast.select(cands, None, 1.5, weights=weights, penalties=penalties, among=among)
                assert fast.privacy_filter.ledger.entries == entries
                continue
            pieces = [last[s:s + r.size] for s, r in zip(starts, refs)]
            reference = None
        else:
            pieces = [flat[s:s + r.size] for s, r in zip(starts, refs)]
            reference = pieces if how == "vectors" else flat
            last = None if how == "vectors" else flat.copy()
        got = fast.select(cands, reference, 1.5, weights=weights, penalties=penalties, among=among)
        sub_flat = np.concatenate([pieces[i] for i in live])
        want = slow.select([cands[i] for i in live], sub_flat, 1.5,
                           weights=[weights[i] for i in live], penalties=[penalties[i] for i in live])
        assert got == live[want]
        assert fast.privacy_filter.ledger.entries == slow.privacy_filter.ledger.entries
    assert fast.reads == slow.reads


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_draw_among_is_draw_on_the_python_integer_scores(data):
    # The int64 fast path of a remembered list's scores against the definition in Python
    # integers: L1s, weights and penalties up to far past int64 (the exact fallbacks) give the
    # same integers to the same sampler, so the same draw from the same seed.
    k = data.draw(st.integers(1, 12))
    big = data.draw(st.sampled_from([2 ** 20, 2 ** 40, 2 ** 61, 2 ** 70]))
    l1 = data.draw(st.lists(st.integers(0, big), min_size=k, max_size=k))
    live = np.flatnonzero(np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k))))
    if not live.size:
        live = np.array([k - 1])
    wbig = data.draw(st.sampled_from([SCORE_GRID, 2 ** 30, 2 ** 59]))
    w = np.array(data.draw(st.lists(st.integers(0, wbig), min_size=live.size, max_size=live.size)),
                 dtype=np.int64)
    w[0] = max(int(w[0]), 1)
    pbig = data.draw(st.sampled_from([SCORE_GRID, 2 ** 59]))
    p = np.array(data.draw(st.lists(st.integers(-pbig, pbig), min_size=live.size,
                                    max_size=live.size)), dtype=np.int64)
    pool = _Pool((), [], np.zeros(0, dtype=np.int64))
    pool.set_l1(l1, None)
    assert (pool.l1_array is None) == (max(l1) >= 2 ** 62)
    if pool.l1_array is not None:
        assert pool.l1_array.tolist() == l1
    scores = [int(wr) * (l1[r] - int(pr)) for r, wr, pr in zip(live.tolist(), w.tolist(), p.tolist())]
    seed = data.draw(st.integers(0, 2 ** 32))
    sens = int(w.max()) * SCORE_GRID
    assert (_draw_among(pool, live, w, p, 0.7, sens, make_rng(seed))
            == _draw(scores, 0.7, sens, make_rng(seed)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.data())
def test_l1_pool_equals_l1_cells_round_after_round(sizes, data):
    # A remembered list keeps its cells as int64 with their segment starts; every later
    # reference gets _l1_cells' integers, including past 2^40 records and near-2^63 sums;
    # an unrounded reference (the compiled path rounds and sums in one pass) the integers of
    # rounding it first.
    from dpcore.curator import _Unrounded
    big = data.draw(st.booleans())
    top = 2.0 ** 41 if big else 2.0 ** 39
    cells = np.floor(np.array(data.draw(st.lists(st.floats(0, top, allow_nan=False), min_size=sum(sizes),
                                                 max_size=sum(sizes)))) * SCORE_GRID)
    sizes = np.array(sizes, dtype=np.int64)
    pool = _Pool((), [], sizes)
    for _ in range(3):
        if data.draw(st.booleans()):
            refs = np.array(data.draw(st.lists(st.integers(-2 ** 59, 2 ** 59),
                                               min_size=cells.size, max_size=cells.size)),
                            dtype=np.int64)
            assert _l1_pool(pool, cells, refs) == _l1_cells(cells, refs, sizes)
        else:
            ref = np.array(data.draw(st.lists(st.floats(-2.0 ** 39, 2.0 ** 39),
                                              min_size=cells.size, max_size=cells.size)))
            rounded = np.rint(ref * SCORE_GRID).astype(np.int64)
            assert _l1_pool(pool, cells, _Unrounded(ref)) == _l1_cells(cells, rounded, sizes)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e3, 1e3)),
                min_size=1, max_size=12))
def test_grid_flat_is_the_checked_rint_or_the_same_error(values):
    # The one-pass check of a flat reference against the definition: rint(x * G) as int64
    # when every value is finite and below 2^40 in magnitude, else the same typed error.
    ref = np.array(values)
    sizes = np.array([ref.size], dtype=np.int64)
    finite = bool(np.all(np.isfinite(ref)))
    if finite and np.abs(ref).max() < 2 ** 40:
        got = _C._grid_flat(ref, sizes)
        assert got.dtype == np.int64 and got.tolist() == [int(np.rint(x * SCORE_GRID)) for x in values]
    else:
        with pytest.raises(InvalidArgumentError, match="finite" if not finite else "2\\^40"):
            _C._grid_flat(ref, sizes)
    assert np.array_equal(ref, np.array(values), equal_nan=True)     # the caller's array untouched


def test_select_among_checks_its_mask_before_any_charge():
    domain = Domain(("a", "b"), (2, 3))
    data = Dataset(np.array([[0, 1], [1, 2]]), domain)
    curator = Curator(data, PrivacyFilter(10), seed=0)
    cands = [("a",), ("b",)]
    import pytest
    from dpcore.errors import InvalidArgumentError
    for among, match in ((np.array([True]), "mask must hold 2"), (np.array([False, False]), "at least one"),
                         ([0, 2], "must index the 2"), ([1, 0], "increasing"), ([[0]], "1-D"),
                         (np.array([0.5]), "1-D integer")):
        with pytest.raises(InvalidArgumentError, match=match):
            curator.select(cands, np.zeros(5), 1.0, among=among)
    with pytest.raises(InvalidArgumentError, match="flat array must hold 5"):
        curator.select(cands, np.zeros(3), 1.0, among=[0])
    with pytest.raises(InvalidArgumentError, match="reference must be finite"):
        # every candidate's reference is checked, not only the subset's
        curator.select(cands, np.array([0, 0, np.nan, 0, 0]), 1.0, among=[0])
    for among in (None, [0]):    # no flat reference given yet: nothing for None to stand for
        with pytest.raises(InvalidArgumentError, match="reference=None"):
            curator.select(cands, None, 1.0, among=among)
    assert curator.privacy_filter.ledger.entries == () and curator.reads == 0
    assert curator.select(cands, np.zeros(5), 1.0, among=[1]) == 1
    assert curator.privacy_filter.ledger.entries[0].what["candidates"] == 1


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_a_compressed_view_reads_the_coarsened_marginals_counted_or_aggregated(data):
    # Integer counts are read from the re-coded records, weighted ones aggregated per read;
    # either way (and for a view of a view) a marginal is the brute-force coarsened count.
    d = data.draw(st.integers(2, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    domain = Domain(tuple(f"x{i}" for i in range(d)), shape)
    n = data.draw(st.integers(0, 20))
    records = np.array([[data.draw(st.integers(0, s - 1)) for s in shape] for _ in range(n)],
                       dtype=np.int64).reshape(n, d)
    weights = None
    if data.draw(st.booleans()):
        weights = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))

    def coarsening(sizes):
        maps = {}
        for a, s in zip(domain.attrs, sizes):
            if data.draw(st.booleans()):
                k = data.draw(st.integers(1, s))
                codes = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=s, max_size=s)))
                codes[:k] = np.arange(k)    # onto 0..k-1
                maps[a] = codes
        return maps

    curator = Curator(Dataset(records, domain, weights=weights), PrivacyFilter(100), seed=0)
    first = coarsening(shape)
    view = curator.compress(first)
    second = coarsening(view.domain.shape)
    view2 = view.compress(second)
    recoded = records.copy()
    for maps in (first, second):
        for a, codes in maps.items():
            recoded[:, domain.attrs.index(a)] = codes[recoded[:, domain.attrs.index(a)]]
    # the curator keeps weights floored onto 1/WEIGHT_GRID (exact sums: dpcore.curator)
    w = np.ones(n) if weights is None else np.floor(weights * WEIGHT_GRID) / WEIGHT_GRID
    for clique in [c for k in (1, 2) for c in itertools.combinations(domain.attrs, k)]:
        axes = [domain.attrs.index(a) for a in clique]
        want = np.zeros([view2.domain.shape[i] for i in axes])
        for row, wr in zip(recoded, w):
            want[tuple(row[axes])] += wr
        (got,) = view2._read([clique])
        np.testing.assert_allclose(got, want.ravel(), rtol=1e-12, atol=1e-12)
        if weights is None:
            assert np.array_equal(got, want.ravel())


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(0, 299), st.sampled_from([0.0, 1.0, -0.0, np.nan, np.inf]),
       st.booleans())
def test_reference_comparison_is_array_equal(n, where, value, reshape):
    # The early-out comparison of a flat reference with the remembered one is array_equal
    # wherever the difference sits (in or past the first cells, NaN, -0.0, another length).
    from dpcore.curator import _equal
    a = np.arange(n, dtype=np.float64)
    b = a.copy()
    b[where % n] = value
    if reshape:
        b = np.concatenate([b, [1.0]])
    assert _equal(a, b) == np.array_equal(a, b)
    assert _equal(a, a.copy())
