"""Junction-tree inference equals brute force over the full joint table (hypothesis).

Random domains (size-1 attributes included) with chain, tree, cycle, complete and random
graphs; the joint stays <= 1e5 cells so the reference is the normalised full table.
"""
import itertools

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from dpcore.domain import Domain
from dpcore.factor import Factor
from dpcore.junction_tree import JunctionTree

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _edges(kind, d, draw):
    if d == 1:
        return [(0,)]
    if kind == "chain":
        return [(i, i + 1) for i in range(d - 1)]
    if kind == "tree":
        return [(draw(st.integers(0, i - 1)), i) for i in range(1, d)]
    if kind == "cycle":
        return [(i, (i + 1) % d) for i in range(d)]
    if kind == "clique":
        return [tuple(range(d))]
    # random hypergraph: a few cliques of 1-3 attributes (some attributes may be left out)
    k = draw(st.integers(1, 5))
    return [tuple(draw(st.lists(st.integers(0, d - 1), min_size=1, max_size=3, unique=True)))
            for _ in range(k)]


@st.composite
def models(draw):
    d = draw(st.integers(1, 6))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=d, max_size=d)))
    names = tuple(f"x{i}" for i in range(d))
    domain = Domain(names, shape)
    kind = draw(st.sampled_from(["chain", "tree", "cycle", "clique", "random"]))
    cliques = [tuple(names[i] for i in c) for c in _edges(kind, d, draw)]
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 8.0]))
    rng = np.random.default_rng(seed)
    potentials = []
    for c in cliques:
        sub = domain.project(c)
        potentials.append(Factor(sub, scale * rng.standard_normal(sub.shape)))
    return domain, cliques, potentials, rng


def brute_force(domain, potentials):
    logits = np.zeros(domain.shape)
    for f in potentials:
        logits = logits + f.expand(domain).values
    log_z = logsumexp(logits)
    return np.exp(logits - log_z), float(log_z)


def marginal(joint, domain, attrs):
    axes = tuple(i for i, a in enumerate(domain.attrs) if a not in attrs)
    kept = [a for a in domain.attrs if a in attrs]
    return joint.sum(axis=axes).transpose([kept.index(a) for a in attrs])


@SETTINGS
@given(models())
def test_calibrated_beliefs_and_log_partition_match_the_joint(model):
    domain, cliques, potentials, _ = model
    tree = JunctionTree(domain, cliques)
    calibrated = tree.calibrate(potentials)
    joint, log_z = brute_force(domain, potentials)
    assert np.isclose(calibrated.log_partition, log_z, rtol=1e-12, atol=1e-9)
    covered = set()
    for clique, belief in zip(tree.cliques, calibrated.beliefs):
        assert belief.attributes == clique
        np.testing.assert_allclose(belief.values, marginal(joint, domain, clique), atol=1e-12)
        covered.update(clique)
    assert covered == set(domain.attrs)


@SETTINGS
@given(models(), st.data())
def test_projection_matches_the_joint_in_and_out_of_cliques(model, data):
    domain, cliques, potentials, _ = model
    calibrated = JunctionTree(domain, cliques).calibrate(potentials)
    joint, _ = brute_force(domain, potentials)
    queries = data.draw(st.lists(st.permutations(domain.attrs).map(
        lambda p: p[:data.draw(st.integers(0, len(p)))]), min_size=1, max_size=4))
    got = calibrated.project_many(queries)
    for attrs, factor in zip(queries, got):
        want = marginal(joint, domain, attrs)
        assert factor.attributes == tuple(attrs)
        np.testing.assert_allclose(factor.values, want, atol=1e-12)
        np.testing.assert_allclose(calibrated.project(attrs).values, want, atol=1e-12)


@SETTINGS
@given(models())
def test_zero_probability_cells_are_exact(model):
    domain, cliques, potentials, rng = model
    # Forbid a random quarter of each potential's cells (log 0 = -inf), keeping one allowed.
    masked = []
    for f in potentials:
        values = f.values.copy()
        flat = values.reshape(-1)
        forbid = rng.random(flat.size) < 0.25
        forbid[rng.integers(flat.size)] = False
        flat[forbid] = -np.inf
        masked.append(Factor(f.domain, values))
    with np.errstate(divide="ignore", invalid="ignore"):
        joint, log_z = brute_force(domain, masked)
    if not np.isfinite(log_z):
        return  # the constraints together forbid everything: covered by a unit test
    calibrated = JunctionTree(domain, cliques).calibrate(masked)
    assert np.isclose(calibrated.log_partition, log_z, rtol=1e-12, atol=1e-9)
    for attrs in [domain.attrs, domain.attrs[::-1][:2]]:
        np.testing.assert_allclose(calibrated.project(attrs).values,
                                   marginal(joint, domain, attrs), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(models(), st.data())
def test_hypothetical_size_equals_the_size_of_the_built_tree(model, data):
    domain, cliques, _, _ = model
    tree = JunctionTree(domain, cliques)
    extra = data.draw(st.lists(st.lists(st.sampled_from(domain.attrs), min_size=1, max_size=3,
                                        unique=True).map(tuple), max_size=3))
    built = JunctionTree(domain, list(cliques) + extra)
    assert tree.hypothetical_size_mb(extra) == built.size_mb
    assert built.size == sum(domain.size(c) for c in built.cliques)
    if len(extra) == 1:
        assert tree.hypothetical_sizes_mb(extra) == [built.size_mb]


@settings(max_examples=40, deadline=None)
@given(models())
def test_tree_is_a_junction_tree(model):
    domain, cliques, _, _ = model
    tree = JunctionTree(domain, cliques)
    sets = [set(c) for c in tree.cliques]
    # every input clique inside some tree clique; cliques maximal; a spanning tree
    for c in cliques:
        assert any(set(c) <= s for s in sets)
    for i, a in enumerate(sets):
        assert not any(i != j and a <= b for j, b in enumerate(sets))
    assert len(tree.edges) == len(sets) - 1
    # running intersection: the cliques holding any attribute form a connected subtree
    for attr in domain.attrs:
        holding = {i for i, s in enumerate(sets) if attr in s}
        inside = [(i, j) for i, j in tree.edges if i in holding and j in holding]
        assert len(inside) == len(holding) - 1


@st.composite
def wide_models(draw):
    """Up to 8 attributes in up to 8 random cliques: trees with several branches, so queries
    spread over distant cliques and the projection's choice of root and contraction order
    (junction_tree.cpp, CalibratedTree::project) both matter."""
    d = draw(st.integers(4, 8))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    names = tuple(f"x{i}" for i in range(d))
    domain = Domain(names, shape)
    cliques = draw(st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=3,
                                     unique=True).map(tuple), min_size=2, max_size=8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    potentials = [Factor(domain.project(c), 2.0 * rng.standard_normal(domain.project(c).shape))
                  for c in cliques]
    return domain, cliques, potentials


@SETTINGS
@given(wide_models(), st.data())
def test_projection_over_distant_cliques_matches_the_joint(model, data):
    domain, cliques, potentials = model
    calibrated = JunctionTree(domain, cliques).calibrate(potentials)
    joint, _ = brute_force(domain, potentials)
    queries = data.draw(st.lists(st.permutations(domain.attrs).map(lambda p: p[:4]),
                                 min_size=1, max_size=4))
    for attrs, factor in zip(queries, calibrated.project_many(queries)):
        np.testing.assert_allclose(factor.values, marginal(joint, domain, attrs), atol=1e-12)


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_calibration_of_large_cliques_matches_the_joint(seed):
    """Cliques of 1e5 cells: the threaded kernels inside calibration (junction_tree.cpp)."""
    rng = np.random.default_rng(seed)
    domain = Domain(("a", "b", "c", "d", "e"), tuple(int(s) for s in rng.integers(14, 19, 5)))
    cliques = [("a", "b", "c", "d"), ("c", "d", "e"), ("b", "e")]
    potentials = [Factor(domain.project(c), 3.0 * rng.standard_normal(domain.project(c).shape))
                  for c in cliques]
    calibrated = JunctionTree(domain, cliques).calibrate(potentials)
    joint, log_z = brute_force(domain, potentials)
    assert np.isclose(calibrated.log_partition, log_z, rtol=1e-12)
    for clique, belief in zip(calibrated.tree.cliques, calibrated.beliefs):
        np.testing.assert_allclose(belief.values, marginal(joint, domain, clique), atol=1e-12)
        assert abs(belief.values.sum() - 1.0) < 1e-12


def _calibrator_queries(tree, draw):
    """Attribute lists inside the tree's cliques, in random orders, some nested in others."""
    queries = []
    for _ in range(draw(st.integers(1, 6))):
        clique = draw(st.sampled_from(tree.cliques))
        size = draw(st.integers(0, len(clique)))
        queries.append(tuple(draw(st.permutations(clique))[:size]))
    return queries


def _check_calibrator(domain, tree, potentials, queries):
    calibrator = tree.calibrator([f.attributes for f in potentials], queries)
    flat = np.concatenate([f.values.ravel() for f in potentials]) if potentials else np.zeros(0)
    out = calibrator.run(flat)
    joint, log_z = brute_force(domain, potentials)
    sizes = [int(np.prod([domain[a] for a in q])) for q in queries]
    assert out.shape == (sum(sizes),)
    for q, got in zip(queries, np.split(out, np.cumsum(sizes)[:-1])):
        np.testing.assert_allclose(got, marginal(joint, domain, q).ravel(), atol=1e-12)
    assert np.isclose(calibrator.calibrated().log_partition, log_z, rtol=1e-12, atol=1e-9)


@SETTINGS
@given(models(), st.data())
def test_calibrator_queries_match_the_joint(model, data):
    """The compiled calibrator estimation runs every iteration: flat potentials (some cells
    -inf, attributes in any order) in, flat marginals on any lists inside cliques out."""
    domain, cliques, potentials, rng = model
    tree = JunctionTree(domain, cliques)
    potentials = [f.transpose(data.draw(st.permutations(f.attributes))) for f in potentials]
    if data.draw(st.booleans()):
        first = potentials[0].values.copy()
        first.ravel()[rng.random(first.size) < 0.3] = -np.inf
        first.ravel()[0] = 0.0
        potentials[0] = Factor(potentials[0].domain, first)
    _check_calibrator(domain, tree, potentials, _calibrator_queries(tree, data.draw))


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32 - 1), st.data())
def test_calibrator_on_large_cliques_matches_the_joint(seed, data):
    """Cliques of 1e5 cells: the calibrator's threaded gathers and scatters (calibration.cpp)."""
    rng = np.random.default_rng(seed)
    domain = Domain(("a", "b", "c", "d", "e"), tuple(int(s) for s in rng.integers(14, 19, 5)))
    cliques = [("a", "b", "c", "d"), ("c", "d", "e"), ("b", "e")]
    potentials = [Factor(domain.project(c), 3.0 * rng.standard_normal(domain.project(c).shape))
                  for c in cliques]
    tree = JunctionTree(domain, cliques)
    _check_calibrator(domain, tree, potentials, _calibrator_queries(tree, data.draw))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([800.0, 5000.0]), st.data())
def test_calibrator_is_exact_when_separator_rows_are_far_apart(seed, offset, data):
    """One clique pushes a separator value's rows `offset` below the rest and its neighbour
    pushes them back up, so the joint is ordinary but the first clique's message has rows
    e^-offset apart: the fast path's one shift per clique would flush them, and the
    calibrator must notice and use a shift per separator cell."""
    rng = np.random.default_rng(seed)
    domain = Domain(("a", "b", "c"), tuple(int(s) for s in rng.integers(2, 6, 3)))
    value = int(rng.integers(domain["b"]))
    sign = data.draw(st.sampled_from([-1.0, 1.0]))
    potentials = []
    for k, clique in enumerate([("a", "b"), ("b", "c")]):
        sub = domain.project(clique)
        values = rng.standard_normal(sub.shape)
        values[(slice(None), value) if clique[1] == "b" else (value, slice(None))] += (
            sign * offset if k == 0 else -sign * offset)
        potentials.append(Factor(sub, values))
    tree = JunctionTree(domain, [("a", "b"), ("b", "c")])
    queries = [("a", "b"), ("c", "b"), ("b",)]
    _check_calibrator(domain, tree, potentials, queries)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(5, 8), st.sampled_from(["chain", "tree", "random"]), st.data())
def test_project_many_shares_messages_and_equals_project_bit_for_bit(d, kind, data):
    """Many queries spanning cliques (every pair and triple, shuffled, some twice): the
    messages and reductions project_many computes once for all are the ones project()
    computes alone, so the marginals are identical, and equal to the joint's."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    names = tuple(f"x{i}" for i in range(d))
    domain = Domain(names, shape)
    cliques = [tuple(names[i] for i in c) for c in _edges(kind, d, data.draw)]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    potentials = [Factor(domain.project(c), rng.standard_normal(domain.project(c).shape))
                  for c in cliques]
    calibrated = JunctionTree(domain, cliques).calibrate(potentials)
    joint, _ = brute_force(domain, potentials)
    queries = [q for k in (2, 3) for q in itertools.combinations(names, k)]
    queries = data.draw(st.permutations(queries + queries[: len(queries) // 3]))
    for attrs, factor in zip(queries, calibrated.project_many(queries)):
        assert factor.attributes == attrs
        np.testing.assert_array_equal(factor.values, calibrated.project(attrs).values)
        np.testing.assert_allclose(factor.values, marginal(joint, domain, attrs), atol=1e-12)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(wide_models(), models().map(lambda m: m[:3])), st.data())
def test_project_many_by_source_equals_project_many_up_to_rounding(model, data):
    """by_source answers the queries across cliques that one attribute (the source) leaves in
    one clique (every pair; a triple two of whose attributes share a clique) by one outward
    pass per source attribute: the same marginals as the per-query eliminations (and the
    joint) up to rounding; every other query (inside a clique, one attribute, a triple in three
    cliques) is project()'s, bit for bit. Some potentials hold -inf cells, so separators with
    empty cells are crossed too."""
    domain, cliques, potentials = model
    if data.draw(st.booleans()):
        potentials = [Factor(f.domain, np.where(np.random.default_rng(i).random(f.values.shape) < 0.2,
                                                -np.inf, f.values)) for i, f in enumerate(potentials)]
    with np.errstate(divide="ignore", invalid="ignore"):
        joint, log_z = brute_force(domain, potentials)
    assume(np.isfinite(log_z))
    tree = JunctionTree(domain, cliques)
    calibrated = tree.calibrate(potentials)
    names = domain.attrs
    pairs = [q if data.draw(st.booleans()) else q[::-1] for q in itertools.combinations(names, 2)]
    triples = [tuple(data.draw(st.permutations(q))) for q in itertools.combinations(names, 3)]
    queries = data.draw(st.permutations(pairs + triples + [(names[0],)] + pairs[:2]))
    fast = calibrated.project_many(queries, by_source=True)
    slow = calibrated.project_many(queries)
    held = [set(c) for c in calibrated.tree.cliques]

    def inside(attrs):
        return any(set(attrs) <= c for c in held)
    for attrs, got, want in zip(queries, fast, slow):
        assert got.attributes == attrs
        np.testing.assert_allclose(got.values, want.values, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.values, marginal(joint, domain, attrs), atol=1e-12)
        by_source = not inside(attrs) and any(inside(set(attrs) - {a}) for a in attrs)
        if not by_source:
            np.testing.assert_array_equal(got.values, want.values)


@st.composite
def split_models(draw):
    """A middle clique between a side of many small attributes (each in a clique with one
    middle attribute) and a side of a few larger ones: the shape where the source passes take
    their sources on the lighter side of the middle clique (pair_projection.cpp's split rule)
    instead of the smaller end of each pair."""
    middle = draw(st.integers(2, 3))
    light = draw(st.integers(2, 4))
    heavy = draw(st.integers(1, 2))
    d = middle + light + heavy
    shape = tuple(draw(st.lists(st.integers(2, 3), min_size=middle, max_size=middle))
                  + draw(st.lists(st.integers(1, 2), min_size=light, max_size=light))
                  + draw(st.lists(st.integers(2, 4), min_size=heavy, max_size=heavy)))
    names = tuple(f"x{i}" for i in range(d))
    domain = Domain(names, shape)
    mids = names[:middle]
    cliques = [mids, mids[-2:] + names[middle + light:]]
    cliques += [(draw(st.sampled_from(mids[:-1] or mids)), names[middle + i]) for i in range(light)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    potentials = [Factor(domain.project(c), 2.0 * rng.standard_normal(domain.project(c).shape))
                  for c in cliques]
    return domain, cliques, potentials


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(split_models(), st.data())
def test_project_many_by_source_on_split_trees_equals_per_query_projection(model, data):
    """Whichever end the passes take as a pair's source, the answers are the per-query
    eliminations' (and the joint's) up to rounding, in the query's axis order."""
    domain, cliques, potentials = model
    calibrated = JunctionTree(domain, cliques).calibrate(potentials)
    joint, _ = brute_force(domain, potentials)
    pairs = [q if data.draw(st.booleans()) else q[::-1] for q in itertools.combinations(domain.attrs, 2)]
    queries = data.draw(st.permutations(pairs))
    for attrs, got, want in zip(queries, calibrated.project_many(queries, by_source=True),
                                calibrated.project_many(queries)):
        assert got.attributes == attrs
        np.testing.assert_allclose(got.values, want.values, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.values, marginal(joint, domain, attrs), atol=1e-12)
