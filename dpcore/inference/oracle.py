"""Marginal oracles: log-potentials on the model cliques -> marginals on the measured groups.

Private-PGM needs only one primitive from the model (NIST-MST paper Sec. 4.2): marginal
inference, i.e. ``M_C(P_theta)`` for every measured set ``C``. :class:`TreeOracle` does it by
calibrating a junction tree in the compiled core; :class:`DenseOracle` materialises the full joint
(brute force, small domains only) and is the reference the tree is tested against.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from dpcore.errors import TableTooLargeError


class TreeOracle:
    """Marginal inference by junction-tree calibration (``dpcore.JunctionTree``)."""

    def __init__(self, problem, tree=None):
        from dpcore.factor import Factor
        from dpcore.junction_tree import JunctionTree

        self._factor = Factor
        self.problem = problem
        self.tree = tree if tree is not None else JunctionTree(problem.domain, problem.cliques)
        self._clique_domains = [problem.domain.project(c) for c in problem.cliques]
        self._reads = None  # per group: (tree clique, axes to sum out, transpose or None)

    def factors(self, potentials: Sequence[np.ndarray]):
        return [self._factor(d, v) for d, v in zip(self._clique_domains, potentials)]

    def __call__(self, potentials: Sequence[np.ndarray]):
        calibrated = self.tree.calibrate(self.factors(potentials))
        beliefs = calibrated.beliefs
        if self._reads is None:
            self._reads = [self._plan(group, beliefs) for group in self.problem.groups]
        out = []
        for j, axes, perm in self._reads:
            v = beliefs[j].values
            if axes:
                v = v.sum(axis=axes)
            out.append(v if perm is None else v.transpose(perm))
        return calibrated, out

    def _plan(self, group, beliefs):
        j = self.tree.containing_clique(group)
        attrs = tuple(beliefs[j].attributes)
        axes = tuple(i for i, a in enumerate(attrs) if a not in group)
        kept = [a for a in attrs if a in group]
        perm = tuple(kept.index(a) for a in group)
        return j, axes, None if perm == tuple(range(len(perm))) else perm


class DenseOracle:
    """Marginal inference over the full joint table (reference; refuses > ``max_cells``)."""

    def __init__(self, problem, max_cells: int = 10**7):
        self.problem = problem
        domain = problem.domain
        cells = domain.size()
        if cells > max_cells:
            raise TableTooLargeError(f"full joint must have <= {max_cells} cells, got {cells}")
        self.shape = tuple(domain.shape)
        order = {a: i for i, a in enumerate(domain.attrs)}
        self._expand = [tuple(domain.shape[order[a]] if a in c else 1 for a in domain.attrs)
                        for c in problem.cliques]
        self._sum = [tuple(i for i, a in enumerate(domain.attrs) if a not in g)
                     for g in problem.groups]

    def joint(self, potentials: Sequence[np.ndarray]) -> tuple[np.ndarray, float]:
        """The full joint probability table and the log partition function."""
        logits = np.zeros(self.shape)
        for v, shape in zip(potentials, self._expand):
            logits = logits + v.reshape(shape)
        log_z = float(logsumexp(logits))
        return np.exp(logits - log_z), log_z

    def __call__(self, potentials: Sequence[np.ndarray]):
        p, log_z = self.joint(potentials)
        return log_z, [p.sum(axis=axes) if axes else p for axes in self._sum]
