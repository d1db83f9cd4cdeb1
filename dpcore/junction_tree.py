"""Junction trees over a Domain and exact marginal inference on them (thin facade).

The work happens in the compiled core (``csrc/src/junction_tree.cpp``): greedy min-size
triangulation, maximal cliques, a maximum spanning tree on separator cardinality, log-space
sum-product calibration, variable elimination for marginals outside one clique, and record
sampling (NIST-MST paper, papers/nist-mst.txt, Algorithms 7-8). This module maps attribute
names to domain positions and numpy arrays to Factors.
"""
from __future__ import annotations

import operator
import os
from collections.abc import Sequence

import numpy as np

from dpcore import _core
from dpcore.errors import DpcoreTypeError, InvalidArgumentError
from dpcore.factor import Factor
from dpcore.schema import code_dtype

__all__ = ["JunctionTree", "CalibratedTree"]

_MB = 2.0**20
#: Rows are drawn in blocks of this many (a public constant): memory stays one block of int64
#: codes plus the compact result, whatever ``n`` is. Block 0 uses the seed as given, so a
#: sample of at most SAMPLE_BLOCK rows is the one a single call always drew; block i >= 1
#: uses ``block_seed(seed, i)``. The result depends on (seed, n) only.
SAMPLE_BLOCK = 1 << 20


def block_seed(seed: int, block: int) -> int:
    """The seed of sampling block ``block``: the seed itself for block 0, else a 64-bit
    integer from ``numpy.random.SeedSequence([seed, block])`` (independent streams)."""
    if block == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(block)]).generate_state(1, np.uint64)[0])


_BYTES_PER_CELL = 8


def _attr_tuple(attrs) -> tuple:
    return (attrs,) if isinstance(attrs, str) else tuple(attrs)


# domain -> {attribute tuple: (attribute ids, sub-domain)} of the queries asked of trees on
# that domain. AIM projects each refit's model (a new tree) onto the same thousands of
# candidates every round, and checks their JT sizes; validating them and building their
# sub-domains again was a tenth of its time at 100 attributes. One table per domain: a
# 100-attribute Domain hashes two 100-tuples, once per batch rather than once per query.
# The sub-domain is None where only the ids were asked for (project_arrays, the JT sizes),
# and built when a later call needs it.
_QUERIES: dict = {}
_QUERIES_MAX = 1 << 16    # queries a domain's table holds (a batch larger is not remembered)
_DOMAINS_MAX = 8


# (candidates, domain, their ids as hypothetical_sizes_mb's batch) for the last tuple of tuples
# asked: AIM asks the same ~5,000 candidates of a new tree whenever its graph grew. A tuple of
# tuples (of names) cannot change, so the very same object has the same checked ids.
_LAST_BATCH = None


def _fresh_query(tree, attrs: tuple, with_domain: bool = True, what: str = "query"):
    return tree._ids(attrs, what), tree.domain.project(attrs) if with_domain else None


def _queries_of(domain) -> dict:
    table = _QUERIES.get(domain)
    if table is None:
        if len(_QUERIES) >= _DOMAINS_MAX:
            _QUERIES.clear()
        table = _QUERIES[domain] = {}
    return table


def _query_many(tree, attrs_list, with_domain: bool = True, what: str = "query") -> list:
    """``[(ids, sub-domain or None) of each query]``, checked as :meth:`JunctionTree._ids`
    checks them (``what`` names them in an error); remembered per domain. Only a valid
    tuple is remembered, so a remembered entry is one a fresh check would pass."""
    attrs_list = [a if type(a) is tuple else _attr_tuple(a) for a in attrs_list]
    if len(attrs_list) > _QUERIES_MAX:     # would only churn the table
        return [_fresh_query(tree, a, with_domain, what) for a in attrs_list]
    table = _queries_of(tree.domain)
    try:
        hits = list(map(table.get, attrs_list))
    except TypeError:      # an unhashable attribute somewhere: each one alone below
        hits = [None] * len(attrs_list)
    for i, hit in enumerate(hits):
        if hit is None or (with_domain and hit[1] is None):
            hit = hits[i] = _fresh_query(tree, attrs_list[i], with_domain, what)
            if len(table) >= _QUERIES_MAX:
                table.clear()
            try:
                table[attrs_list[i]] = hit
            except TypeError:
                pass
    return hits


class JunctionTree:
    """A junction tree covering every attribute of ``domain``.

    ``cliques`` are attribute tuples (any order); attributes in none of them become singleton
    cliques. ``.cliques`` are the maximal cliques of the triangulated graph, each in domain
    order; ``.edges`` are (parent, child) index pairs into ``.cliques``.

    >>> from dpcore.domain import Domain
    >>> tree = JunctionTree(Domain(("a", "b", "c"), (2, 3, 4)), [("a", "b"), ("b", "c")])
    >>> tree.cliques, tree.edges, tree.size
    ((('a', 'b'), ('b', 'c')), ((0, 1),), 18)
    """

    def __init__(self, domain, cliques: Sequence[Sequence[str]]):
        from dpcore.domain import Domain

        if not isinstance(domain, Domain):
            raise DpcoreTypeError(f"domain must be a dpcore.Domain, got {type(domain).__name__}")
        self.domain = domain
        self._index = {a: i for i, a in enumerate(domain.attrs)}
        ids = [self._ids(c, "clique") for c in cliques]
        self._core = _core.JunctionTree([int(s) for s in domain.shape], ids)
        attrs = domain.attrs
        self.cliques = tuple(tuple(attrs[i] for i in c) for c in self._core.cliques)
        self.edges = tuple(tuple(e) for e in self._core.edges)
        self._clique_domains = tuple(domain.project(c) for c in self.cliques)

    def _ids(self, attrs, what: str) -> list[int]:
        attrs = _attr_tuple(attrs)
        try:
            ids = [self._index[a] for a in attrs]
        except (KeyError, TypeError):
            bad = next(a for a in attrs if not isinstance(a, str) or a not in self._index)
            raise InvalidArgumentError(
                f"{what} attributes must be in the domain {tuple(self.domain.attrs)}, "
                f"got {bad!r}") from None
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError(f"{what} attributes must be distinct, got {attrs}")
        return ids

    def __repr__(self) -> str:
        return f"JunctionTree(cliques={len(self.cliques)}, size_mb={self.size_mb:.4g})"

    @property
    def size(self) -> int:
        """Total cells of all clique tables (exact)."""
        return sum(self.domain.size(c) for c in self.cliques)

    @property
    def size_mb(self) -> float:
        """size * 8 bytes in MB of 2**20 bytes (AIM's JT-SIZE)."""
        return self.size * _BYTES_PER_CELL / _MB

    def hypothetical_size_mb(self, extra_cliques: Sequence[Sequence[str]]) -> float:
        """size_mb of ``JunctionTree(domain, cliques + extra_cliques)``, without building it.

        ``cliques`` are the cliques this tree was built from (not its maximal cliques).
        """
        return self._core.hypothetical_size_mb([self._ids(c, "extra clique")
                                                for c in extra_cliques])

    def hypothetical_sizes_mb(self, candidates: Sequence[Sequence[str]],
                              among: Sequence[int] | None = None) -> list[float]:
        """``[hypothetical_size_mb([c]) for c in candidates]`` in one compiled call; with
        ``among`` (indices into ``candidates``), only those candidates', in that order (the
        whole tuple's checked ids are remembered, so a subset costs no new checks)."""
        global _LAST_BATCH
        last = _LAST_BATCH
        if last is not None and last[0] is candidates and last[1] == self.domain:
            batch = last[2]
        else:
            batch = [[ids] for ids, _ in _query_many(self, candidates, False, "candidate")]
            if type(candidates) is tuple and all(type(c) is tuple and all(type(a) is str for a in c)
                                                 for c in candidates):
                _LAST_BATCH = (candidates, self.domain, batch)
        if among is not None:
            n = len(batch)
            if not all(type(i) is int and 0 <= i < n for i in among):
                raise InvalidArgumentError(f"among must hold candidate indices in [0, {n})")
            batch = [batch[i] for i in among]
        return self._core.hypothetical_sizes_mb(batch)

    def containing_clique(self, attrs) -> int | None:
        """Index of the smallest clique containing every attribute of ``attrs``, or None."""
        j = self._core.containing_clique(self._ids(attrs, "query"))
        return None if j < 0 else j

    def calibrate(self, log_potentials: Sequence[Factor]) -> CalibratedTree:
        """Calibrated beliefs of p(x) ∝ exp(Σ_f f(x_f)) (log-space sum-product).

        Each factor is summed into the smallest clique containing its attributes.
        """
        items = []
        for f in log_potentials:
            if not isinstance(f, Factor):
                raise DpcoreTypeError(f"log_potentials must be Factors, got {type(f).__name__}")
            for a in f.attributes:
                if a in self._index and f.domain[a] != self.domain[a]:
                    raise InvalidArgumentError(
                        f"log-potential attribute {a!r} must have size {self.domain[a]}, "
                        f"got {f.domain[a]}")
            items.append((self._ids(f.attributes, "log-potential"), f.values))
        return CalibratedTree(self, self._core.calibrate(items))

    def calibrator(self, potentials: Sequence[Sequence[str]], queries: Sequence[Sequence[str]]):
        """This tree compiled for repeated calibration (``dpcore._core.Calibrator``).

        Log-potentials on the attribute lists ``potentials`` go in as one flat vector (each
        row-major over its list), the marginals on ``queries`` come out as one flat vector:
        ``run(flat_potentials) -> flat_marginals``, ``calibrated()`` for the last run's
        ``_core.CalibratedTree``. Estimation calls it once per iteration.
        """
        return _core.Calibrator(self._core, [self._ids(c, "log-potential") for c in potentials],
                                [self._ids(q, "query") for q in queries])


def _position(value) -> int:
    """An integer position or size: a float or bool is an error, not a truncated number."""
    if isinstance(value, bool):
        raise DpcoreTypeError(f"positions must be integers, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise DpcoreTypeError(f"positions must be integers, got {value!r}") from None


def _positions(values) -> list:
    """``[_position(v) for v in values]``; a 1-D integer ndarray (AIM's ~5,000 starts a
    round) in one ``tolist`` (its items are exact integers, what operator.index gives)."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
        return values.tolist()
    return [_position(v) for v in values]


class CalibratedTree:
    """Calibrated clique beliefs: exact marginals of the tree's distribution."""

    __slots__ = ("tree", "_core", "_beliefs")

    def __init__(self, tree: JunctionTree, core):
        self.tree = tree
        self._core = core
        self._beliefs = None

    @property
    def log_partition(self) -> float:
        return float(self._core.log_partition)

    @property
    def beliefs(self) -> list[Factor]:
        """One probability Factor per clique of ``tree.cliques``, each summing to 1."""
        if self._beliefs is None:
            self._beliefs = [Factor(d, v) for d, v in
                             zip(self.tree._clique_domains, self._core.beliefs)]
        return list(self._beliefs)

    def project(self, attrs) -> Factor:
        """The marginal distribution of ``attrs`` (axes in the given order), summing to 1."""
        attrs = _attr_tuple(attrs)
        values = self._core.project(self.tree._ids(attrs, "query"))
        return Factor(self.tree.domain.project(attrs), values)

    def project_many(self, attrs_list: Sequence[Sequence[str]], *,
                     by_source: bool = False) -> list[Factor]:
        """``[project(a) for a in attrs_list]`` in one compiled call. ``by_source``: the
        queries in no common clique of which one attribute leaves the others in one clique
        (every pair; a triple two of whose attributes share a clique; any larger query with
        such an attribute) are answered by one outward
        pass of the tree per source attribute instead of one elimination each: the same
        marginals up to rounding (so not bit for bit), much less work for many such queries
        (AIM's 2-way and 3-way pools)."""
        queries = _query_many(self.tree, attrs_list)
        values = self._core.project_many([ids for ids, _ in queries], bool(by_source))
        return [Factor._trusted(sub, v) for (_, sub), v in zip(queries, values)]

    def project_arrays(self, attrs_list: Sequence[Sequence[str]], *,
                       by_source: bool = False) -> list[np.ndarray]:
        """The ``.values`` of :meth:`project_many` (the same numbers), without the Factors."""
        return self._core.project_many([ids for ids, _ in _query_many(self.tree, attrs_list, False)],
                                       bool(by_source))

    def project_flat(self, attrs_list: Sequence[Sequence[str]], starts, size: int, *,
                     by_source: bool = False) -> np.ndarray:
        """One flat vector of ``size`` cells holding each query's :meth:`project_arrays` values
        (row-major) from ``starts[i]``, zeros elsewhere (the queries' cells must fit and not
        overlap: InvalidArgumentError). The same numbers as project_arrays, without an array
        object a query."""
        ids = [ids for ids, _ in _query_many(self.tree, attrs_list, False)]
        return self._core.project_flat(ids, bool(by_source), _positions(starts), _position(size))

    def sample(self, n: int, method: str = "round", seed: int | None = None) -> np.ndarray:
        """``n`` records (n x d codes in the smallest unsigned dtype that holds them,
        :func:`dpcore.schema.code_dtype`; domain order) drawn from the model.

        ``method="round"``: randomized rounding along the tree (NIST-MST Alg. 7-8), so every
        clique marginal of the records is within rounding of ``n`` times the model's (per
        block of :data:`SAMPLE_BLOCK` rows: within one rounding per block); ``"sample"``:
        independent ancestral draws. A given ``seed`` (0 <= seed < 2**64) gives the same
        records on every run; None draws a seed from the OS.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise DpcoreTypeError(f"n must be an integer, got {type(n).__name__}")
        if n < 0:
            raise InvalidArgumentError(f"n must be >= 0, got {n}")
        if method not in ("round", "sample"):
            raise InvalidArgumentError(f"method must be 'round' or 'sample', got {method!r}")
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise DpcoreTypeError(f"seed must be an integer or None, got {type(seed).__name__}")
        if not 0 <= seed < 2**64:
            raise InvalidArgumentError(f"seed must be in [0, 2**64), got {seed}")
        n, seed = int(n), int(seed)
        dtype = code_dtype(self.tree.domain.shape)
        if n <= SAMPLE_BLOCK:
            return self._core.sample(n, method, seed, dtype.name)
        # block k drawn with block_seed(seed, k), all blocks by one compiled call that reuses
        # its working memory (not fresh, newly zeroed pages for every block's arrays)
        seeds = [block_seed(seed, block) for block in range(-(-n // SAMPLE_BLOCK))]
        return self._core.sample_blocks(n, method, seeds, SAMPLE_BLOCK, dtype.name)
