"""GraphicalModel: the distribution Private-PGM estimates, scaled to the (estimated) total.

``P_theta(x) ∝ exp(sum_C theta_C(x_C))`` over the model cliques (NIST-MST paper Sec. 4.2). The
model answers any marginal query from its calibrated junction tree (variable elimination when
the attributes lie in no single tree clique), generates synthetic records, and saves to a single
``.npz`` file (log-potentials + JSON metadata) so it can be re-sampled later without the data.
"""
from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np

from dpcore.errors import DomainError, DpcoreTypeError, InvalidArgumentError
from dpcore.files import replace_into

_FORMAT = "dpcore.GraphicalModel"
_VERSION = 1


_RECENT_ROOTS: tuple = ()   # ((queries, answer), ...) of the last few _plan calls, newest first
_RECENT_MAX = 4
_RECENT_FLAT: tuple = ()    # ((queries, domain, answer), ...) of the last few _flat_plan calls


def _roots(queries):
    """:func:`_find_roots` of ``queries``, remembered for the last few lists: AIM asks for the
    same ~5,000 candidates round after round (28 ms of each call at 100 attributes), with a
    one-query list (the chosen marginal) in between; the answer is a function of the list
    alone, so an equal list gets the same read-only objects (a tuple and a mapping proxy)."""
    return _plan(queries)[:2]


def _plan(queries):
    """(roots, owner, root of each query) for ``queries``: :func:`_roots` plus, in list order,
    the root each query is read from (``owner[frozenset(q)]``, a frozenset a query that
    :meth:`GraphicalModel.project_values` need not build again). One global rebound at once:
    a concurrent caller sees either tuple."""
    global _RECENT_ROOTS
    key = tuple(queries)
    recent = _RECENT_ROOTS
    for last in recent:
        if last[0] == key:
            return last[1]
    roots, owner = _find_roots(key)
    answer = (tuple(roots), MappingProxyType(owner), tuple(owner[_sets_of(q)[0]] for q in key))
    _RECENT_ROOTS = ((key, answer),) + recent[:_RECENT_MAX - 1]
    return answer


def _find_roots(queries):
    """The queries no other query strictly contains (one tuple per attribute set), and for every
    query's attribute set the root it is read from. Linear in the number of queries for small
    cliques: each root lists its own subsets (2^k of them) instead of every query being
    compared with every other (AIM's 5,000 candidates at 100 attributes took 100 s that way)."""
    sets, subsets = {}, {}
    for q in queries:
        s, subs = _sets_of(q)
        if s not in sets:
            sets[s], subsets[s] = q, subs
    covered = set()
    for s, q in sets.items():
        subs = subsets[s]
        covered.update(subs if subs is not None else (t for t in sets if t < s))
    roots = [q for s, q in sets.items() if s not in covered]
    owner = {}
    for r in sorted(roots, key=len, reverse=True):
        fr = frozenset(r)
        owner[fr] = r
        subs = subsets[fr]
        for c in subs if subs is not None else (t for t in sets if t < fr):
            owner.setdefault(c, r)
    return roots, owner


_SETS: dict = {}        # query tuple -> _sets_of's answer, for queries of up to 4 attributes
_SETS_MAX = 1 << 16


def _sets_of(q: tuple):
    """(frozenset(q), its non-empty strict subsets as frozensets in combinations order, or
    None above _SUBSET_LIMIT attributes). Remembered for small queries: AIM finds the roots of
    a new ~5,000-candidate pool most rounds, and building these sets was most of the work."""
    hit = _SETS.get(q)
    if hit is None:
        subs = (tuple(frozenset(c) for k in range(1, len(q)) for c in itertools.combinations(q, k))
                if len(q) <= _SUBSET_LIMIT else None)
        hit = (frozenset(q), subs)
        if len(q) <= 4:
            if len(_SETS) >= _SETS_MAX:
                _SETS.clear()
            _SETS[q] = hit
    return hit


_SUBSET_LIMIT = 12   # cliques up to 12 attributes list their 4,094 subsets; larger ones compare


class GraphicalModel:
    """A fitted graphical model: log-potentials on ``cliques`` and the total record count.

    ``potentials`` is a tuple of log-potential Factors aligned with ``cliques`` (tuples of
    attribute names in domain order). ``project`` returns counts summing to ``total``.
    """

    def __init__(self, domain, cliques: Sequence[Sequence[str]], potentials, total: float, *,
                 loss_history: Sequence[float] = (), calibrated=None):
        from dpcore.factor import Factor

        self.domain = domain
        order = {a: i for i, a in enumerate(domain.attrs)}
        for c in cliques:
            for a in c:
                if a not in order:
                    raise DomainError(f"clique attribute {a!r} is not in the domain {domain.attrs}")
        self.cliques = tuple(tuple(sorted(c, key=order.__getitem__)) for c in cliques)
        potentials = tuple(potentials)
        if len(potentials) != len(self.cliques):
            raise InvalidArgumentError(
                f"potentials must have one Factor per clique ({len(self.cliques)}), "
                f"got {len(potentials)}")
        for c, f in zip(self.cliques, potentials):
            if not isinstance(f, Factor):
                raise DpcoreTypeError(f"potentials must be Factors, got {type(f).__name__}")
            if set(f.attributes) != set(c):
                raise InvalidArgumentError(
                    f"potential attributes must match clique {c}, got {tuple(f.attributes)}")
        if not (np.isfinite(total) and total > 0):
            raise InvalidArgumentError(f"total must be finite and > 0, got {total}")
        self.potentials = potentials
        self.total = float(total)
        self.loss_history = tuple(float(x) for x in loss_history)
        self._calibrated = calibrated

    def __repr__(self):
        return (f"GraphicalModel(cliques={len(self.cliques)}, total={self.total:.6g}, "
                f"size_mb={self.size_mb:.3g})")

    def __getstate__(self):
        # The calibrated tree lives in the compiled core; it is rebuilt on first use.
        state = dict(self.__dict__)
        state["_calibrated"] = None
        return state

    @property
    def calibrated(self):
        """The calibrated junction tree (``dpcore.CalibratedTree``), built on first use."""
        if self._calibrated is None:
            from dpcore.junction_tree import JunctionTree

            tree = JunctionTree(self.domain, self.cliques)
            self._calibrated = tree.calibrate(list(self.potentials))
        return self._calibrated

    @property
    def size_mb(self) -> float:
        """Junction-tree size in MB (AIM's JT-SIZE: 8 bytes a cell, 2**20 bytes a MB)."""
        return self.calibrated.tree.size_mb

    def project(self, attrs):
        """The model's marginal on ``attrs`` as a Factor of counts (axes in ``attrs`` order)."""
        return self.project_many([attrs])[0]

    def project_many(self, attrs_list, *, by_source: bool = False):
        """``[project(a) for a in attrs_list]``, with less work: a query contained in another
        query of the list is summed out of that one's marginal, and the rest run in one
        compiled, threaded call (AIM projects every candidate every round). ``by_source``:
        pairs (and triples with two attributes in one clique) spanning cliques by one pass
        per source attribute
        (:meth:`dpcore.junction_tree.CalibratedTree.project_many`; equal up to rounding)."""
        from dpcore.factor import Factor

        queries = self._queries(attrs_list)
        roots, owner = _roots(queries)
        done = dict(zip(roots, self.calibrated.project_many(roots, by_source=by_source)))
        out = []
        for attrs in queries:
            source = done[owner[frozenset(attrs)]]
            if set(source.attributes) != set(attrs):
                factor = source.project(attrs)
            elif tuple(source.attributes) != attrs:
                factor = source.transpose(attrs)
            else:
                factor = source
            out.append(Factor._trusted(factor.domain, factor.values * self.total))
        return out

    def _queries(self, attrs_list) -> list[tuple[str, ...]]:
        """The queries as attribute tuples, each attribute checked against the domain."""
        queries = [a if type(a) is tuple else (a,) if isinstance(a, str) else tuple(a)
                   for a in attrs_list]
        try:    # one set operation for the whole list where every attribute is known
            if set().union(*queries) <= self.domain._index.keys():
                return queries
        except TypeError:     # an unhashable attribute: the loop names it
            pass
        for attrs in queries:
            for a in attrs:
                if a not in self.domain:
                    raise DomainError(f"attribute {a!r} is not in the domain {self.domain.attrs}")
        return queries

    def project_values(self, attrs_list, *, by_source: bool = False) -> list[np.ndarray]:
        """``[f.datavector() for f in project_many(attrs_list, by_source=...)]``: the same
        numbers, as flat count vectors, without a Factor per query where the query is itself
        one of the compiled call's (AIM's ~5,000 candidates a round)."""
        queries = self._queries(attrs_list)
        roots, _, root_of = _plan(queries)
        done = dict(zip(roots, self.calibrated.project_arrays(roots, by_source=by_source)))
        total = self.total
        return [(done[root] * total).reshape(-1) if root == attrs
                # summed out of, or transposed from, a larger query: project_many's way
                else self._from_root(root, done[root], attrs).reshape(-1)
                for attrs, root in zip(queries, root_of)]

    def project_flat(self, attrs_list, *, by_source: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(np.concatenate(project_values(attrs_list, by_source=...)), starts)``: the same
        numbers bit for bit in one vector, ``starts[i]`` where query i's cells begin (read
        only: it is remembered for the list). The compiled call writes the roots' marginals
        straight into their queries' places, one multiplication by the total scales them all,
        and only the queries read from another one (summed out, transposed or repeated) are
        filled one by one: AIM's ~5,000 candidates a round were ~5,000 small arrays and a
        concatenation."""
        queries = self._queries(attrs_list)
        roots, root_starts, starts, size, derived = self._flat_plan(queries)
        flat = self.calibrated.project_flat(roots, root_starts, size, by_source=by_source)
        # the queries read from a root, from its unscaled values (project_values' way) ...
        filled = [(s, n, None if attrs is None else self._from_root(
                       root, flat[r:r + n_root].reshape(shape), attrs, keep).reshape(-1), r)
                  for s, n, root, r, n_root, shape, attrs, keep in derived]
        flat *= self.total     # ... then every root's at once: (values * total) elementwise
        for s, n, values, r in filled:
            flat[s:s + n] = flat[r:r + n] if values is None else values
        return flat, starts

    def _flat_plan(self, queries):
        """project_flat's layout of ``queries`` on this domain: (roots, where each root's cells
        go, every query's start, total cells, the other queries as (start, cells, root, the
        root's start, its cells, its shape, attrs or None for a repeat of the root)).
        Remembered for the last few lists (AIM alternates its pool and one marginal)."""
        global _RECENT_FLAT
        key = tuple(queries)
        for last in _RECENT_FLAT:
            if last[1] == self.domain and last[0] == key:
                return last[2]
        roots, _, root_of = _plan(queries)
        domain = self.domain
        sizes = np.fromiter((domain.size(q) for q in key), dtype=np.int64, count=len(key))
        base = np.zeros(len(key), dtype=np.int64)
        if len(key) > 1:
            np.cumsum(sizes[:-1], out=base[1:])
        base.flags.writeable = False
        starts = base[:]        # every caller gets this: a view of a read-only base stays read-only
        at = {}                    # each root's place: its first query of the same tuple
        for q, s in zip(key, starts.tolist()):
            at.setdefault(q, s)
        derived = []
        placed = set()
        for i, (q, root) in enumerate(zip(key, root_of)):
            s, n = int(starts[i]), int(sizes[i])
            if q == root and q not in placed:
                placed.add(q)
                continue
            r = at[root]
            root_shape = domain.project(root).shape
            # a query summed out of its root: the axes it keeps, in its order (Factor.project's
            # call, made directly: ~100 such queries a round at 100 attributes)
            keep = ([tuple(root).index(a) for a in q] if q != root and len(q) != len(root) else None)
            derived.append((s, n, root, r, int(np.prod(root_shape, dtype=np.int64)), root_shape,
                            None if q == root else q, keep))
        # the roots' starts as a read-only int64 array: the compiled call's argument check
        # takes it in one tolist (a tuple was ~5,000 per-item index checks a round)
        root_starts = np.array([at[r] for r in roots], dtype=np.int64)
        root_starts.flags.writeable = False
        answer = (tuple(roots), root_starts, starts, int(sizes.sum()), tuple(derived))
        _RECENT_FLAT = ((key, domain, answer),) + _RECENT_FLAT[:_RECENT_MAX - 1]
        return answer

    def _from_root(self, root, values, attrs, keep=None) -> np.ndarray:
        from dpcore.factor import Factor

        if keep is not None:   # Factor.project(attrs)'s values: the same marginalize call
            from dpcore import _core
            return _core.marginalize(values, keep, False) * self.total
        source = Factor._trusted(self.domain.project(root), values)
        factor = source.project(attrs) if len(root) != len(attrs) else source.transpose(attrs)
        return factor.values * self.total

    def synthetic_data(self, rows: int | None = None, method: str = "round", seed=None):
        """A synthetic Dataset of ``rows`` records (default: the total, rounded).

        ``method="round"``: randomized rounding along the junction tree (NIST-MST paper Alg. 7-8,
        lower variance); ``"sample"``: i.i.d. ancestral sampling from the model.
        """
        from dpcore.dataset import Dataset

        if rows is None:
            rows = max(int(round(self.total)), 1)
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 0:
            raise InvalidArgumentError(f"rows must be an integer >= 0, got {rows!r}")
        if method not in ("round", "sample"):
            raise InvalidArgumentError(f"method must be 'round' or 'sample', got {method!r}")
        codes = self.calibrated.sample(int(rows), method=method, seed=seed)
        return Dataset(codes, self.domain)

    def save(self, path) -> None:
        """Write the model to ``path`` (.npz with JSON metadata), atomically."""
        meta = {"format": _FORMAT, "version": _VERSION, "domain": self.domain.to_dict(),
                "cliques": [list(c) for c in self.cliques],
                "total": self.total, "loss_history": list(self.loss_history)}
        # Each potential is stored with its clique's axis order (domain order).
        arrays = {f"potential_{k}": np.ascontiguousarray(
                      (f if tuple(f.attributes) == c else f.transpose(c)).values)
                  for k, (c, f) in enumerate(zip(self.cliques, self.potentials))}
        arrays["meta"] = np.array(json.dumps(meta))
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".model-", suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            replace_into(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path) -> GraphicalModel:
        """Read a model written by :meth:`save`."""
        from dpcore.domain import Domain
        from dpcore.factor import Factor

        with np.load(os.fspath(path), allow_pickle=False) as data:
            try:
                meta = json.loads(str(data["meta"]))
            except (KeyError, ValueError) as exc:
                raise InvalidArgumentError(f"model file must hold JSON metadata: {path}") from exc
            if meta.get("format") != _FORMAT or meta.get("version") != _VERSION:
                raise InvalidArgumentError(
                    f"model file format must be {_FORMAT} v{_VERSION}, got "
                    f"{meta.get('format')!r} v{meta.get('version')!r}")
            domain = Domain.from_dict(meta["domain"])
            potentials = [Factor(domain.project(c), np.array(data[f"potential_{k}"], dtype=np.float64))
                          for k, c in enumerate(meta["cliques"])]
        return cls(domain, meta["cliques"], potentials, meta["total"],
                   loss_history=meta["loss_history"])
