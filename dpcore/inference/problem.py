"""The estimation problem in array form: measurements grouped by attribute set, cliques.

Private-PGM's objective (NIST-MST paper Eq. 4.2) depends on the model only through the marginals
on the measured attribute sets. This module fixes the bookkeeping once per problem so the
optimisation loop only does array arithmetic: which marginal each measurement reads (a *group* =
one distinct attribute set, axes in domain order), how a measurement's own axis order maps onto
it, and which model clique (maximal measured set) each group's gradient is added into.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from dpcore.errors import InvalidArgumentError
from dpcore.inference.measurement import Measurement


class Problem:
    """Measurements on a domain with a fixed total: loss, gradient and clique structure.

    ``groups``: the distinct measured attribute sets, each in domain order.
    ``cliques``: the maximal groups; the model keeps one log-potential per clique (a potential
    on a subset adds into any superset, so the family of distributions is the same).
    Marginals ``p`` passed in and gradients returned are probabilities over each group, shaped
    ``domain.project(group).shape``; the loss is in counts (``mu = total * p``).
    """

    def __init__(self, domain, measurements: Sequence[Measurement], total: float):
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
            self._reads.append((g, perm, np.argsort(perm), shape))
        self.group_shapes = [tuple(domain.shape[order[a]] for a in g) for g in self.groups]
        sets = [frozenset(g) for g in self.groups]
        self.cliques = [g for g, s in zip(self.groups, sets) if not any(s < t for t in sets)]
        self.clique_shapes = [tuple(domain.shape[order[a]] for a in c) for c in self.cliques]
        # Each group adds its gradient into the first clique that contains it, broadcast over
        # the clique's other axes (a reshape with 1s: the group's axes keep domain order).
        self._into = []
        for g in self.groups:
            k = next(i for i, c in enumerate(self.cliques) if set(g) <= set(c))
            bshape = tuple(self.domain.shape[order[a]] if a in g else 1 for a in self.cliques[k])
            self._into.append((k, bshape))
        self.rows = sum(m.noisy.size for m in self.measurements)
        self.smoothness = self._smoothness()
        self._pool_identity()

    def _pool_identity(self):
        """Pool each group's identity measurements into one weighted target.

        ``sum_j ||mu - y_j||^2 / sigma_j^2 = W ||mu - ybar||^2 + sum_j w_j ||y_j - ybar||^2``
        with ``w_j = 1/sigma_j^2``, ``W = sum_j w_j`` and ``ybar`` the precision-weighted mean,
        so the loop touches each group once, in domain order, without transposes. The constant
        is the within-group scatter (summed directly: no cancellation).
        """
        self._pooled = []  # (group, W, ybar, constant)
        self._general = []  # (measurement, read) for non-identity queries
        by_group: dict[int, list] = {}
        for m, read in zip(self.measurements, self._reads):
            if m.query is None:
                g, perm, inv, shape = read
                y = m.noisy.reshape(shape).transpose(inv)
                by_group.setdefault(g, []).append((1.0 / m.sigma**2, y))
            else:
                self._general.append((m, read))
        for g, items in sorted(by_group.items()):
            weight = sum(w for w, _ in items)
            ybar = sum(w * y for w, y in items) / weight
            const = sum(w * float(((y - ybar) ** 2).sum()) for w, y in items)
            self._pooled.append((g, weight, np.ascontiguousarray(ybar), const))

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

    def loss_and_gradient(self, marginals: Sequence[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        """Loss (counts) and its gradient with respect to each group's probability marginal."""
        n = self.total
        grads: list = [None] * len(self.groups)
        loss = 0.0
        for g, weight, ybar, const in self._pooled:
            r = marginals[g] * n - ybar
            loss += weight * float(np.vdot(r, r)) + const
            grads[g] = r * (2.0 * weight * n)
        for m, (g, perm, inv, shape) in self._general:
            p = marginals[g]
            mu = (p if perm == tuple(range(len(perm))) else p.transpose(perm)).ravel() * n
            value, grad = m.loss_and_gradient(mu)
            loss += value
            grad = grad.reshape(shape).transpose(inv) * n
            grads[g] = grad if grads[g] is None else grads[g] + grad
        return loss, grads

    def loss(self, marginals: Sequence[np.ndarray]) -> float:
        return self.loss_and_gradient(marginals)[0]

    def clique_gradients(self, group_grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Sum each group's gradient into its clique (broadcast over the clique's other axes)."""
        out: list = [None] * len(self.cliques)
        for grad, (k, bshape) in zip(group_grads, self._into):
            if grad is None:
                continue
            grad = grad.reshape(bshape)
            # Never add in place: the group gradients are reused by the line search.
            out[k] = grad if out[k] is None else out[k] + grad
        return [np.broadcast_to(o, s) if o is not None and o.shape != s else
                (np.zeros(s) if o is None else o) for o, s in zip(out, self.clique_shapes)]

    def zero_potentials(self) -> list[np.ndarray]:
        return [np.zeros(s) for s in self.clique_shapes]
