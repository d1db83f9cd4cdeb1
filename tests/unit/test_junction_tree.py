"""JunctionTree and CalibratedTree: hand-computed structure, sizes, sampling basics, errors."""
import itertools
import os
import signal
import time
import warnings

import numpy as np
import pytest

from dpcore.domain import Domain
from dpcore.errors import DpcoreTypeError, InvalidArgumentError, TableTooLargeError
from dpcore.factor import Factor
from dpcore.junction_tree import CalibratedTree, JunctionTree

CYCLE = Domain(("a", "b", "c", "d"), (2, 3, 4, 5))
CYCLE_CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]


def test_chain_structure_and_size():
    tree = JunctionTree(Domain(("a", "b", "c"), (2, 3, 4)), [("b", "a"), ("c", "b")])
    assert tree.cliques == (("a", "b"), ("b", "c"))
    assert tree.edges == ((0, 1),)
    assert tree.size == 6 + 12
    assert tree.size_mb == 18 * 8 / 2**20


def test_cycle_gets_the_cheapest_chord():
    # Elimination costs a: 2*3*5=30, b: 3*2*4=24, c: 4*3*5=60, d: 5*4*2=40, so b goes first
    # and the chord is a-c: cliques {a,b,c} (24 cells) and {a,c,d} (40 cells).
    tree = JunctionTree(CYCLE, CYCLE_CLIQUES)
    assert tree.cliques == (("a", "b", "c"), ("a", "c", "d"))
    assert tree.size == 64
    assert tree.containing_clique(("c", "a")) == 0  # both contain it: the smaller one
    assert tree.containing_clique(("d",)) == 1
    assert tree.containing_clique(("b", "d")) is None


def test_missing_attributes_become_singletons():
    tree = JunctionTree(CYCLE, [("a", "b")])
    assert tree.cliques == (("a", "b"), ("c",), ("d",))
    assert tree.size == 6 + 4 + 5
    assert len(tree.edges) == 2
    assert JunctionTree(CYCLE, []).size == 2 + 3 + 4 + 5


def test_hypothetical_size():
    tree = JunctionTree(CYCLE, [("a", "b"), ("c", "d")])
    assert tree.size == 26
    # adding (b, c) makes a chain: {a,b} 6 + {b,c} 12 + {c,d} 20
    assert tree.hypothetical_size_mb([("b", "c")]) == 38 * 8 / 2**20
    assert tree.hypothetical_size_mb([]) == tree.size_mb
    assert tree.hypothetical_sizes_mb([("b", "c"), ("a", "d")]) == [
        JunctionTree(CYCLE, [("a", "b"), ("c", "d"), c]).size_mb for c in [("b", "c"), ("a", "d")]]
    huge = Domain(tuple("pqrs"), (10**6,) * 4)
    assert JunctionTree(huge, []).hypothetical_size_mb([tuple("pqrs")]) == 1e24 * 8 / 2**20


def test_calibration_on_independent_attributes():
    domain = Domain(("a", "b"), (2, 3))
    tree = JunctionTree(domain, [])
    pa = Factor(domain.project("a"), np.log([0.25, 0.75]))
    cal = tree.calibrate([pa])
    assert isinstance(cal, CalibratedTree) and cal.tree is tree
    assert np.isclose(cal.log_partition, np.log(3.0))  # sum over b of (0.25 + 0.75)
    np.testing.assert_allclose(cal.project(("b", "a")).values, [[0.25 / 3, 0.75 / 3]] * 3)
    assert cal.project(()).values == pytest.approx(1.0)
    assert [b.attributes for b in cal.beliefs] == [("a",), ("b",)]


def test_sampling_is_reproducible_and_in_range():
    rng = np.random.default_rng(0)
    tree = JunctionTree(CYCLE, CYCLE_CLIQUES)
    pots = [Factor(CYCLE.project(c), rng.standard_normal(CYCLE.project(c).shape))
            for c in CYCLE_CLIQUES]
    cal = tree.calibrate(pots)
    for method in ("round", "sample"):
        a = cal.sample(1000, method=method, seed=7)
        assert a.shape == (1000, 4) and a.dtype == np.uint8   # the compact code dtype
        assert np.array_equal(a, cal.sample(1000, method=method, seed=7))
        assert not np.array_equal(a, cal.sample(1000, method=method, seed=8))
        assert (a >= 0).all() and (a < np.array(CYCLE.shape)).all()
    assert cal.sample(0).shape == (0, 4)
    # Rounding: each root-clique cell count is within 1 of n times its probability.
    records = cal.sample(500, method="round", seed=1)
    root = CYCLE.axes(tree.cliques[0])
    counts = np.zeros(CYCLE.project(tree.cliques[0]).shape)
    np.add.at(counts, tuple(records[:, root].T), 1)
    assert np.abs(counts - 500 * cal.beliefs[0].values).max() < 1


def test_sampling_in_blocks_is_deterministic_and_matches_the_per_block_draws(monkeypatch):
    """Past SAMPLE_BLOCK rows, block i is drawn with block_seed(seed, i): block 0 is the
    single-call draw, the others are the draws of their own seeds (so (seed, n) fixes the
    records, and a table of at most one block is the one a single call always gave)."""
    import dpcore.junction_tree as jt
    rng = np.random.default_rng(0)
    tree = JunctionTree(CYCLE, CYCLE_CLIQUES)
    cal = tree.calibrate([Factor(CYCLE.project(c), rng.standard_normal(CYCLE.project(c).shape))
                          for c in CYCLE_CLIQUES])
    monkeypatch.setattr(jt, "SAMPLE_BLOCK", 100)
    for method in ("round", "sample"):
        blocks = cal.sample(250, method=method, seed=11)
        assert np.array_equal(blocks, cal.sample(250, method=method, seed=11))
        monkeypatch.setattr(jt, "SAMPLE_BLOCK", 1000)
        parts = [cal.sample(k, method=method, seed=jt.block_seed(11, i))
                 for i, k in enumerate((100, 100, 50))]
        monkeypatch.setattr(jt, "SAMPLE_BLOCK", 100)
        assert np.array_equal(blocks, np.concatenate(parts))
        assert np.array_equal(parts[0], cal.sample(100, method=method, seed=11))
    assert jt.block_seed(11, 0) == 11 and len({jt.block_seed(11, i) for i in range(50)}) == 50


def test_sampling_pins_down_a_known_answer():
    # Frozen output for a fixed seed: the generator and the algorithms are our own, so this
    # must not change across platforms or standard libraries.
    domain = Domain(("a", "b"), (2, 3))
    cal = JunctionTree(domain, [("a", "b")]).calibrate(
        [Factor(domain, np.log([[1, 2, 3], [4, 5, 6]]))])
    assert cal.sample(6, method="sample", seed=2024).tolist() == [
        [1, 1], [1, 2], [0, 2], [1, 0], [0, 0], [0, 1]]
    assert cal.sample(6, method="round", seed=2024).tolist() == [
        [1, 1], [0, 2], [1, 1], [1, 2], [1, 0], [1, 2]]
    assert sorted(map(tuple, cal.sample(21, method="round", seed=5).tolist())) == sorted(
        [(0, 0)] + [(0, 1)] * 2 + [(0, 2)] * 3 + [(1, 0)] * 4 + [(1, 1)] * 5 + [(1, 2)] * 6)


def test_bad_input_raises_typed_errors():
    with pytest.raises(InvalidArgumentError, match="'z'"):
        JunctionTree(CYCLE, [("a", "z")])
    with pytest.raises(InvalidArgumentError, match="distinct"):
        JunctionTree(CYCLE, [("a", "a")])
    with pytest.raises(DpcoreTypeError):
        JunctionTree({"a": 2}, [])
    tree = JunctionTree(CYCLE, CYCLE_CLIQUES)
    with pytest.raises(InvalidArgumentError, match="'q'"):
        tree.hypothetical_size_mb([("q",)])
    with pytest.raises(InvalidArgumentError, match="inside one clique"):
        tree.calibrate([Factor.zeros(CYCLE.project(("b", "d")))])
    with pytest.raises(InvalidArgumentError, match="size 2, got 3"):
        tree.calibrate([Factor.zeros(Domain(("a",), (3,)))])
    with pytest.raises(InvalidArgumentError, match="NaN|nan"):
        tree.calibrate([Factor(CYCLE.project("a"), [0.0, np.nan])])
    with pytest.raises(InvalidArgumentError, match="finite or -inf"):
        tree.calibrate([Factor(CYCLE.project("a"), [0.0, np.inf])])
    with pytest.raises(InvalidArgumentError, match="positive total mass"):
        tree.calibrate([Factor(CYCLE.project("a"), [-np.inf, -np.inf])])
    with pytest.raises(DpcoreTypeError):
        tree.calibrate([np.zeros(2)])
    cal = tree.calibrate([])
    with pytest.raises(InvalidArgumentError, match="'z'"):
        cal.project(("a", "z"))
    with pytest.raises(InvalidArgumentError, match="method"):
        cal.sample(3, method="exact")
    with pytest.raises(InvalidArgumentError, match=">= 0"):
        cal.sample(-1)
    with pytest.raises(InvalidArgumentError, match="seed"):
        cal.sample(3, seed=-5)
    with pytest.raises(DpcoreTypeError):
        cal.sample(2.5)
    big = Domain(tuple("pqrs"), (2**16,) * 4)
    with pytest.raises(TableTooLargeError):
        JunctionTree(big, [tuple("pqrs")]).calibrate([])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_calibration_uses_threads_after_fork():
    # A clique of 2 * 10^5 cells is split over the kernels' worker threads, which a forked
    # child does not inherit: the child must start its own, not wait on the parent's forever.
    domain = Domain(["A", "B", "C"], [40, 50, 100])
    tree = JunctionTree(domain, [("A", "B", "C")])
    rng = np.random.default_rng(3)
    log_p = Factor(domain, rng.normal(size=(40, 50, 100)))
    want = tree.calibrate([log_p]).project(("A", "C")).values
    with warnings.catch_warnings():  # Python >= 3.12 warns on fork with threads: the point here
        warnings.simplefilter("ignore", DeprecationWarning)
        # JAX, once a GEM test imported it in this process, warns too (its threads are idle)
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        pid = os.fork()
    if pid == 0:  # the child reports by its exit status only
        try:
            got = tree.calibrate([log_p]).project(("A", "C")).values
            os._exit(0 if np.array_equal(got, want) else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("calibration in a forked child did not finish in 60 s")
    assert os.waitstatus_to_exitcode(done[1]) == 0


def test_out_of_clique_projection_survives_subnormal_separator_mass():
    # P(B = 1) ~ 1e-310 is subnormal: inverting it naively gives inf, and 0 * inf = NaN in
    # the out-of-clique product. AIM's refits drive cells this far down on real data.
    domain = Domain(["A", "B", "C"], [2, 2, 2])
    tree = JunctionTree(domain, [("A", "B"), ("B", "C")])
    ab = np.array([[0.0, -713.0], [0.0, -1e4]])  # A=1, B=1 underflows to exactly 0
    bc = np.array([[0.0, 0.5], [-50.0, 0.0]])  # P(B=1, C=0) underflows to 0
    model = tree.calibrate([Factor(domain.project(["A", "B"]), ab),
                            Factor(domain.project(["B", "C"]), bc)])
    got = model.project(("A", "C")).values
    joint = np.exp(ab[:, :, None] + bc[None, :, :])
    want = (joint / joint.sum()).sum(axis=1)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_calibrator_bad_input_raises_typed_errors():
    tree = JunctionTree(CYCLE, CYCLE_CLIQUES)
    with pytest.raises(InvalidArgumentError, match="'z'"):
        tree.calibrator([("a", "z")], [])
    with pytest.raises(InvalidArgumentError, match="inside one clique"):
        tree.calibrator([("b", "d")], [])
    with pytest.raises(InvalidArgumentError, match="inside one clique"):
        tree.calibrator([("a",)], [("b", "d")])
    calibrator = tree.calibrator([("a",)], [("a",)])
    with pytest.raises(InvalidArgumentError, match="calibrated"):
        calibrator.calibrated()  # no run yet
    with pytest.raises(InvalidArgumentError, match="flat vector of 2 values"):
        calibrator.run(np.zeros(3))
    with pytest.raises(InvalidArgumentError, match="flat vector of 2 values"):
        calibrator.run(np.zeros((1, 2)))
    with pytest.raises(InvalidArgumentError, match="finite or -inf, got nan"):
        calibrator.run(np.array([0.0, np.nan]))
    with pytest.raises(InvalidArgumentError, match="positive total mass"):
        calibrator.run(np.array([-np.inf, -np.inf]))
    np.testing.assert_allclose(calibrator.run(np.array([0.0, np.log(3.0)])), [0.25, 0.75])
    with pytest.raises(InvalidArgumentError, match="flat vector of 2 values"):
        calibrator.spread(np.zeros(3))
    np.testing.assert_allclose(calibrator.spread(np.array([1.0, 2.0])), [1.0, 2.0])
    outside = tree.calibrator([("a",)], [("b",)])
    with pytest.raises(InvalidArgumentError, match="inside a potential"):
        outside.spread(np.zeros(3))


def test_remembered_query_ids_and_jt_batches_equal_fresh_ones_and_still_check():
    """The per-domain query table and the remembered JT-size batch (issue 22) against fresh
    answers: over a sequence of trees on two domains (same names, other sizes), candidate
    tuples kept or rebuilt, and bad candidates, every answer equals a tree's own _ids and a
    fresh hypothetical size, and a bad query is refused with the caller's wording."""
    from hypothesis import given, settings, strategies as st

    import dpcore.junction_tree as jt
    names = ("a", "b", "c", "d", "e")
    domains = [Domain(names, (2, 3, 2, 4, 2)), Domain(names, (3, 3, 2, 2, 5))]
    pairs = [p for p in itertools.combinations(names, 2)]
    clique_lists = st.lists(st.sampled_from(pairs), max_size=4)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 1), clique_lists, st.booleans(), st.booleans()),
                    min_size=1, max_size=6))
    def check(steps):
        candidates = tuple(pairs) + tuple((n,) for n in names)
        for which, cliques, rebuild, with_domain in steps:
            domain = domains[which]
            tree = JunctionTree(domain, cliques)
            if rebuild:     # an equal tuple, new objects: recomputed, the same numbers
                candidates = tuple(tuple(list(c)) for c in candidates)
            sizes = tree.hypothetical_sizes_mb(candidates)
            assert sizes == [JunctionTree(domain, list(cliques) + [c]).size_mb for c in candidates]
            got = jt._query_many(tree, list(candidates), with_domain)
            for c, (ids, sub) in zip(candidates, got):
                assert ids == tree._ids(c, "query")
                assert sub == (domain.project(c) if with_domain else sub)
            with pytest.raises(InvalidArgumentError, match="candidate attributes must be"):
                tree.hypothetical_sizes_mb(candidates[:2] + (("a", "zz"),))
            with pytest.raises(InvalidArgumentError, match="query attributes must be distinct"):
                jt._query_many(tree, [("a", "a")])

    check()
