"""The shortcuts that make AIM and MST fast on wide tables (issue 22), each held to the answer
it replaces, recomputed the slow way on random inputs."""
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Domain, JunctionTree
from mechanisms.workload import candidate_weights, downward_closure


def brute_weights(candidates, workload):
    """AIM's w_r = sum_s c_s |r ∩ s| over the whole workload, in workload order."""
    return [sum(c * len(frozenset(r) & frozenset(s)) for s, c in workload) for r in candidates]


@st.composite
def workloads(draw):
    d = draw(st.integers(1, 7))
    attrs = tuple(f"a{i}" for i in range(d))
    subsets = [c for k in range(1, min(d, 3) + 1) for c in itertools.combinations(attrs, k)]
    cliques = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=12, unique=True))
    weights = draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=len(cliques),
                            max_size=len(cliques)))
    return tuple(zip(cliques, weights))


@settings(max_examples=100, deadline=None)
@given(workloads())
def test_candidate_weights_equal_the_sum_over_the_whole_workload_bit_for_bit(workload):
    candidates = downward_closure([c for c, _ in workload]) + (("zz",),)   # one touching nothing
    got = candidate_weights(candidates, workload).tolist()
    assert got == brute_weights(candidates, workload)


@st.composite
def trees(draw):
    d = draw(st.integers(1, 9))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=d, max_size=d)))
    domain = Domain(tuple(f"x{i}" for i in range(d)), shape)
    subsets = [c for k in range(1, min(d, 3) + 1) for c in itertools.combinations(domain.attrs, k)]
    base = draw(st.lists(st.sampled_from(subsets), max_size=8))
    candidates = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=15))
    return domain, base, candidates


@settings(max_examples=100, deadline=None)
@given(trees())
def test_hypothetical_sizes_equal_the_size_of_the_tree_built_with_the_candidate(case):
    # The batch builds the base graph once and answers "no new edge" from the tree's own size.
    domain, base, candidates = case
    tree = JunctionTree(domain, base)
    got = tree.hypothetical_sizes_mb(candidates)
    assert got == [JunctionTree(domain, list(base) + [c]).size_mb for c in candidates]
    assert got == [tree.hypothetical_size_mb([c]) for c in candidates]


@settings(max_examples=60, deadline=None)
@given(trees(), st.data())
def test_aim_jt_sizes_cache_equals_the_recomputed_sizes_after_every_measurement(case, data):
    # AIM re-measures cliques and 1-way marginals (no new edge: the cache is kept) and new
    # ones (the graph grows: recomputed); after every step it must match a fresh tree.
    from mechanisms.aim import JTSizes

    domain, base, candidates = case
    cache = JTSizes(domain, candidates)
    added = []
    for clique in base + data.draw(st.lists(st.sampled_from(base + candidates), max_size=10)):
        cache.add(clique)
        added.append(clique)
        fresh = JunctionTree(domain, added).hypothetical_sizes_mb(candidates)
        assert cache.sizes_mb() == fresh
