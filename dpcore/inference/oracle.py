"""Marginal oracles: log-potentials on the model cliques -> marginals on the measured groups.

Private-PGM needs only one primitive from the model (NIST-MST paper Sec. 4.2): marginal
inference, i.e. ``M_C(P_theta)`` for every measured set ``C``. :class:`TreeOracle` does it by
calibrating a junction tree in the compiled core; :class:`DenseOracle` materialises the full joint
(brute force, small domains only) and is the reference the tree is tested against.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpcore.errors import TableTooLargeError


class TreeOracle:
    """Marginal inference by junction-tree calibration, compiled once per problem.

    The loop calls this once per trial step, so the tree, the index maps and the buffers are
    set up once (``JunctionTree.calibrator``) and a call is one compiled function: the flat
    clique log-potentials in, the flat group marginals out.
    """

    def __init__(self, problem, tree=None):
        from dpcore.factor import Factor
        from dpcore.junction_tree import JunctionTree

        self._factor = Factor
        self.problem = problem
        self.tree = tree if tree is not None else JunctionTree(problem.domain, problem.cliques)
        self._calibrator = self.tree.calibrator(problem.cliques, problem.groups)
        self._clique_domains = [problem.domain.project(c) for c in problem.cliques]

    def factors(self, theta: np.ndarray):
        """The model's log-potential Factors for a flat parameter vector."""
        return [self._factor(d, v)
                for d, v in zip(self._clique_domains, self.problem.split_cliques(theta))]

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        """Flat clique log-potentials -> flat group marginals (probabilities)."""
        return self._calibrator.run(theta)

    def clique_gradient(self, group_grad: np.ndarray) -> np.ndarray:
        """``Problem.clique_gradient`` by the compiled calibrator's ``spread``: the same
        broadcast of each group into the first clique containing it, without the sparse
        matrix (which costs as much as a small tree's calibration)."""
        return self._calibrator.spread(group_grad)

    def fit(self, theta: np.ndarray, *, max_iters: int, tol: float, accelerated: bool,
            callback=None, first_step: float = 1.0):
        """The compiled optimiser (``dpcore::fit``, see :mod:`dpcore.inference.estimation`)
        from flat ``theta``; returns (theta, loss history, iterations, converged,
        calibrations)."""
        from dpcore import _core

        problem = self.problem
        slope, target, constant = problem.identity_terms()
        return _core.fit(self._calibrator, slope, target, problem.total, constant,
                         problem.extra_loss if problem.has_extra else None, theta,
                         min(max_iters, 2**31 - 1), tol, problem.smoothness / first_step, accelerated,
                         callback)

    def calibrated(self, theta: np.ndarray):
        """The public ``CalibratedTree`` for ``theta`` (for the fitted model)."""
        from dpcore.junction_tree import CalibratedTree

        self._calibrator.run(theta)
        return CalibratedTree(self.tree, self._calibrator.calibrated())


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

    def joint(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """The full joint probability table and the log partition function."""
        # imported here: scipy.special costs ~0.15 CPU-s to import, and only this brute-force
        # reference uses it (every estimate() imports this module for TreeOracle)
        from scipy.special import logsumexp

        logits = np.zeros(self.shape)
        for v, shape in zip(self.problem.split_cliques(theta), self._expand):
            logits = logits + v.reshape(shape)
        log_z = float(logsumexp(logits))
        return np.exp(logits - log_z), log_z

    def clique_gradient(self, group_grad: np.ndarray) -> np.ndarray:
        return self.problem.clique_gradient(group_grad)

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        p, _ = self.joint(theta)
        return self.problem.flatten_groups(
            [p.sum(axis=axes) if axes else p for axes in self._sum])
