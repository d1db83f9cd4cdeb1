"""The estimation problem in array form: measurements grouped by attribute set, cliques.

Private-PGM's objective (NIST-MST paper Eq. 4.2) depends on the model only through the marginals
on the measured attribute sets. This module fixes the bookkeeping once per problem so the
optimisation loop only does array arithmetic: which marginal each measurement reads (a *group* =
one distinct attribute set, axes in domain order), how a measurement's own axis order maps onto
it, and which model clique (maximal measured set) each group's gradient is added into.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from dpcore.errors import InvalidArgumentError
from dpcore.inference.measurement import Measurement, dot


class Problem:
    """Measurements on a domain with a fixed total: loss, gradient and clique structure.

    ``groups``: the distinct measured attribute sets, each in domain order.
    ``cliques``: the maximal groups; the model keeps one log-potential per clique (a potential
    on a subset adds into any superset, so the family of distributions is the same).
    Marginals ``p`` passed in and gradients returned are probabilities over each group, shaped
    ``domain.project(group).shape``; the loss is in counts (``mu = total * p``).
    """

    def __init__(self, domain, measurements: Sequence[Measurement], total: float,
                 zeros: Sequence = ()):
        from dpcore.inference.zeros import merge_zeros

        if not measurements:
            raise InvalidArgumentError("measurements must be non-empty, got 0")
        for m in measurements:
            if not isinstance(m, Measurement):
                raise InvalidArgumentError(
                    f"measurements must be Measurement objects, got {type(m).__name__}")
            m.validate(domain)
        self.domain = domain
        self.measurements = tuple(measurements)
        self.total = float(total)
        order = {a: i for i, a in enumerate(domain.attrs)}
        index: dict[tuple, int] = {}
        self.groups: list[tuple] = []
        self._reads = []  # per measurement: (group, permutation to its own order, its shape)
        for m in self.measurements:
            canon = tuple(sorted(m.attrs, key=order.__getitem__))
            g = index.setdefault(canon, len(self.groups))
            if g == len(self.groups):
                self.groups.append(canon)
            perm = tuple(canon.index(a) for a in m.attrs)
            shape = tuple(domain.shape[order[a]] for a in m.attrs)
            # the inverse permutation (np.argsort's, as a tuple: a NumPy call on a short tuple
            # cost more than the rest of the loop, ~200 measurements a refit in AIM)
            self._reads.append((g, perm, tuple(sorted(range(len(perm)), key=perm.__getitem__)),
                                shape))
        # Structural zeros: their attributes must share a clique, so each is a group of its
        # own when no measurement holds it (no measurement reads it: weight 0, no loss term).
        self.zeros = merge_zeros(zeros)
        for z in self.zeros:
            z.validate(domain)
            canon = tuple(sorted(z.attrs, key=order.__getitem__))
            if canon not in index:
                index[canon] = len(self.groups)
                self.groups.append(canon)
        self.group_shapes = [tuple(domain.shape[order[a]] for a in g) for g in self.groups]
        self.cliques = _maximal(self.groups)
        self.clique_shapes = [tuple(domain.shape[order[a]] for a in c) for c in self.cliques]
        # Flat layout: the optimiser works on one vector of all group marginals and one of all
        # clique log-potentials, so an iteration is a handful of vector operations whatever the
        # number of measurements.
        # math.prod: the same integers as np.prod on these short tuples, without a NumPy call
        # a group (~400 a refit at 100 attributes)
        self.group_sizes = [int(math.prod(s)) for s in self.group_shapes]
        self.group_offsets = np.concatenate([[0], np.cumsum(self.group_sizes)]).astype(int)
        self.clique_sizes = [int(math.prod(s)) for s in self.clique_shapes]
        self.clique_offsets = np.concatenate([[0], np.cumsum(self.clique_sizes)]).astype(int)
        self.rows = sum(m.noisy.size for m in self.measurements)
        self.smoothness = self._smoothness()
        self._pool_identity()
        self._slope = self._weight * (2.0 * self.total)  # d/dp of W (N p - ybar)^2 is 2 N W r

    @cached_property
    def forbidden(self) -> np.ndarray:
        """Flat boolean over the clique log-potentials: the cells a structural zero holds at
        -inf (in the first clique containing the zero's attributes; -inf in one term of the
        sum zeroes the cell whatever the others hold)."""
        out = np.zeros(self.clique_offsets[-1], dtype=bool)
        for z in self.zeros:
            k = next(i for i, c in enumerate(self.cliques) if set(z.attrs) <= set(c))
            where = slice(self.clique_offsets[k], self.clique_offsets[k + 1])
            out[where] |= z.over(self.cliques[k], self.clique_shapes[k]).ravel()
        return out

    @cached_property
    def _spread(self):
        """Sparse map from group cells to clique cells: each group's gradient is added into the
        first clique containing it, broadcast over the clique's other axes. Built on first
        use: the compiled loop spreads by the calibrator, so this is the reference only."""
        rows, cols = [], []
        for g, group in enumerate(self.groups):
            k = next(i for i, c in enumerate(self.cliques) if set(group) <= set(c))
            clique = self.cliques[k]
            codes = np.indices(self.clique_shapes[k]).reshape(len(clique), -1)
            sub = [codes[clique.index(a)] for a in group]
            cell = np.ravel_multi_index(sub, self.group_shapes[g]) if group else 0
            rows.append(self.clique_offsets[k] + np.arange(self.clique_sizes[k]))
            cols.append(self.group_offsets[g] + cell)
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        return sp.csr_matrix((np.ones(rows.size), (rows, cols)),
                             shape=(self.clique_offsets[-1], self.group_offsets[-1]))

    def _pool_identity(self):
        """Pool each group's identity measurements into one weighted target.

        ``sum_j ||mu - y_j||^2 / sigma_j^2 = W ||mu - ybar||^2 + sum_j w_j ||y_j - ybar||^2``
        with ``w_j = 1/sigma_j^2``, ``W = sum_j w_j`` and ``ybar`` the precision-weighted mean,
        so the loop touches each cell once, in domain order, without transposes. The constant
        is the within-group scatter (summed directly: no cancellation).
        """
        cells = self.group_offsets[-1]
        self._weight = np.zeros(cells)
        self._target = np.zeros(cells)
        self._constant = 0.0
        self._general = []  # (measurement, slice, read) for non-identity queries
        by_group: dict[int, list] = {}
        for m, read in zip(self.measurements, self._reads):
            g, perm, inv, shape = read
            if m.query is None:
                y = m.noisy.reshape(shape).transpose(inv)
                by_group.setdefault(g, []).append((1.0 / m.sigma**2, y))
            else:
                where = slice(self.group_offsets[g], self.group_offsets[g + 1])
                self._general.append((m, where, read))
        for g, items in sorted(by_group.items()):
            weight = sum(w for w, _ in items)
            ybar = sum(w * y for w, y in items) / weight
            self._constant += sum(w * float(((y - ybar) ** 2).sum()) for w, y in items)
            where = slice(self.group_offsets[g], self.group_offsets[g + 1])
            self._weight[where] = weight
            self._target[where] = ybar.ravel()

    def _smoothness(self) -> float:
        """An upper bound on the Lipschitz constant of grad_p L in the l1 norm.

        ``L(p) = sum_i ||N Q_i A_i p - y_i||^2 / sigma_i^2`` has Hessian ``2 N^2 sum_i
        A_i^T Q_i^T Q_i A_i / sigma_i^2``; with ``||A_i h||_1 <= ||h||_1`` (marginalising) and
        ``|h^T M h| <= max|M_jk| ||h||_1^2``, the constant is ``2 N^2 sum_i max|Q_i^T Q_i| /
        sigma_i^2``. The negative entropy is 1-strongly convex in l1 (Pinsker), so a mirror
        step of 1/L decreases the loss (Beck & Teboulle 2003); backtracking starts here.
        """
        total = 0.0
        for m in self.measurements:
            if m.query is None:
                qq = 1.0
            else:
                gram = m.query.T @ m.query
                if sp.issparse(gram):
                    qq = float(abs(gram).max()) if gram.nnz else 0.0
                else:
                    qq = float(np.abs(gram).max())
            total += 2.0 * qq / m.sigma**2
        return max(total * self.total**2, 1e-300)

    def loss_and_gradient(self, marginals: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss (counts) and its gradient in the flat group marginals (probabilities).

        The reference for the compiled loop (``dpcore::fit``), which computes the pooled
        identity terms (:meth:`identity_terms`) itself and calls :meth:`extra_loss`.
        """
        n = self.total
        r = marginals * n
        r -= self._target
        grad = self._slope * r
        loss = dot(grad, r) / (2.0 * n) + self._constant
        if self._general:
            loss += self.extra_loss(marginals, grad)
        return loss, grad

    def identity_terms(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(slope, target, constant): the identity measurements' loss is
        ``sum slope / (2 N) (N p - target)^2 + constant`` over the flat group cells."""
        return self._slope, self._target, self._constant

    @property
    def has_extra(self) -> bool:
        """Whether some measurement has a non-identity query (see :meth:`extra_loss`)."""
        return bool(self._general)

    def extra_loss(self, marginals: np.ndarray, grad: np.ndarray) -> float:
        """The non-identity measurements' loss at ``marginals``; adds their gradient into
        ``grad`` (flat, in place).

        ``sum_i ||Q_i mu_i - y_i||^2 / sigma_i^2`` for all of them at once: one sparse map
        ``A`` from the group cells they read (``cols``) to their stacked rows folds each
        one's axis order and query, so a call is two sparse products whatever the number of
        measurements (MST's compressed 1-way marginals: ~100 at 100 attributes, each read
        every iteration)."""
        cols, a, a_t, noisy, weight = self._stacked
        n = self.total
        r = a(marginals[cols] * n) - noisy
        wr = weight * r
        grad[cols] += a_t(wr) * (2.0 * n)
        return dot(wr, r)

    @cached_property
    def _stacked(self):
        """(cols, A, A^T, y, w) for :meth:`extra_loss`: the group cells the non-identity
        measurements read, ``A`` and its transpose (stacked rows x those cells, as functions
        x -> A x: :func:`_matvec` of CSR matrices), their stacked noisy values and each row's
        weight 1/sigma^2."""
        rows, cells, values, noisy, weight = [], [], [], [], []
        start = 0
        for m, where, (g, perm, inv, shape) in self._general:
            # flat group cell of each cell of the measurement's own (C-order) marginal
            own = np.arange(where.start, where.stop).reshape(self.group_shapes[g])
            own = own.transpose(perm).ravel()
            q = sp.coo_matrix(m.query)
            rows.append(q.row + start)
            cells.append(own[q.col])
            values.append(q.data)
            noisy.append(m.noisy)
            weight.append(np.full(m.noisy.size, 1.0 / m.sigma**2))
            start += m.noisy.size
        cells = np.concatenate(cells)
        cols, local = np.unique(cells, return_inverse=True)
        a = sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), local.ravel())),
                          shape=(start, cols.size))
        return cols, _matvec(a), _matvec(a.T.tocsr()), np.concatenate(noisy), np.concatenate(weight)

    def flatten_groups(self, marginals: Sequence[np.ndarray]) -> np.ndarray:
        """Concatenate per-group marginals (each shaped ``group_shapes[g]``) into one vector."""
        return np.concatenate([m.ravel() for m in marginals])

    def clique_gradient(self, group_grad: np.ndarray) -> np.ndarray:
        """The flat gradient in the clique log-potentials (group gradients spread into cliques)."""
        return self._spread @ group_grad

    def split_cliques(self, theta: np.ndarray) -> list[np.ndarray]:
        """Views of a flat log-potential vector, one array per clique."""
        off = self.clique_offsets
        return [theta[off[k]:off[k + 1]].reshape(s) for k, s in enumerate(self.clique_shapes)]

    def zero_potentials(self) -> np.ndarray:
        """The uniform distribution over the allowed cells: zeros, -inf on structural zeros."""
        theta = np.zeros(self.clique_offsets[-1])
        if self.zeros:
            theta[self.forbidden] = -np.inf
        return theta


def _maximal(groups: list) -> list:
    """The groups no other group strictly contains, in order. Small groups list their strict
    subsets (2^k of them) instead of every group being compared with every other: AIM refits
    ~100 times over ~200 groups at 100 attributes, and the pairwise test was quadratic."""
    sets = [frozenset(g) for g in groups]
    covered: set = set()
    for g in groups:
        if len(g) <= _SUBSET_LIMIT:
            for k in range(len(g)):      # k = 0: the empty group is inside any other
                covered.update(map(frozenset, itertools.combinations(g, k)))
    large = [t for t in sets if len(t) > _SUBSET_LIMIT]
    return [g for g, s in zip(groups, sets)
            if s not in covered and not any(s < t for t in large)]


_SUBSET_LIMIT = 12   # a group of up to 12 attributes lists its 4,094 strict subsets


def _matvec(a):
    """``x -> a @ x`` for a float64 CSR matrix ``a`` and a float64 vector: scipy's own CSR
    kernel (``csr_matvec``, the one ``a @ x`` runs, so the same sums in the same order) called
    directly. ``a @ x`` spends ~10x the kernel's time in scipy's dispatch for the small maps of
    MST's compressed 1-way marginals, called twice an iteration (~5,600 times at 100
    attributes). Where the kernel is not importable or the probe disagrees with ``a @ x``,
    ``a @ x`` itself."""
    try:
        from scipy.sparse._sparsetools import csr_matvec
    except ImportError:          # a scipy without the private module: the public product
        return a.__matmul__
    rows, width = a.shape
    indptr, indices, data = a.indptr, a.indices, a.data

    def apply(x):
        # the private kernel checks nothing: a short vector would be read past its end
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (width,):
            return a @ x
        out = np.zeros(rows)
        csr_matvec(rows, width, indptr, indices, data, x, out)
        return out

    probe = np.random.default_rng(0).standard_normal(width)
    try:
        if a.dtype == np.float64 and np.array_equal(apply(probe), a @ probe):
            return apply
    except Exception:          # noqa: BLE001 - any failure of a private API: the public one
        pass
    return a.__matmul__
