"""RAP-softmax (Liu, Vietri & Wu, App. A.3; RAP: Aydore et al. 2021) as an Adaptive
Measurements family (``mechanisms.adaptive``).

The family is a relaxed dataset of n' rows, each a product distribution given by a softmax per
attribute over free logits: D = {softmax(M) : M in R^{n' x d'}} (the paper's 𝒟 for
RAP_softmax, which replaces RAP's clipping to [-1, 1]). Its loss is RAP's squared error over
every measured query, here every cell of every measured marginal (the marginal trick),

    L(M) = sum_r || M_r(softmax(M)) - a_r ||_2^2,

minimised by Adam (lr 0.1, the paper's setting) from the previous round's logits. The product
queries and their gradient are ``mechanisms.product_mixture.squared_loss``; the softmax's
Jacobian is applied by hand (dL/dM = P * (g - <P, g>) per attribute block), so RAP-softmax needs
no automatic-differentiation library. Released: the relaxed rows as a mixture of n' product
distributions (``ProductMixture``). Post-processing of the noisy answers: no budget.
"""
from __future__ import annotations

import numbers

import numpy as np

from dpcore.errors import InvalidArgumentError

from .product_mixture import (Adam, ProductMixture, mixture_marginal, positive_int,
                              softmax_tables, squared_loss)

__all__ = ["RAPSoftmax"]




class RAPSoftmax:
    """RAP-softmax: ``rows`` relaxed records (n' = 1000 in the paper), at most ``steps`` Adam
    steps a round at ``learning_rate``, stopping early once a step improves the loss by less
    than ``tolerance`` (relative) ten times in a row."""

    name = "rap-softmax"

    def __init__(self, rows: int = 1000, steps: int = 30, learning_rate: float = 0.1,
                 tolerance: float = 1e-4):
        self.rows = positive_int("rows", rows)
        self.steps = positive_int("steps", steps)
        if not (isinstance(learning_rate, numbers.Real) and 0 < float(learning_rate) < 10):
            raise InvalidArgumentError(f"learning_rate must be in (0, 10), got {learning_rate!r}")
        if not (isinstance(tolerance, numbers.Real) and 0 <= float(tolerance) < 1):
            raise InvalidArgumentError(f"tolerance must be in [0, 1), got {tolerance!r}")
        self.learning_rate, self.tolerance = float(learning_rate), float(tolerance)

    def largest_table(self, domain, cliques) -> int:
        """Cells of the largest array a fit holds (rows x the one-hot width, or rows x a
        marginal's cells while answering it): public sizes, checked before any charge."""
        return self.rows * max(int(sum(domain.shape)), *(domain.size(c) for c in cliques))

    def init(self, domain, cliques, rounds, rng) -> np.ndarray:
        # RAP starts from random relaxed rows; small logits keep D_0 near uniform
        return rng.normal(scale=0.1, size=(self.rows, int(sum(domain.shape))))

    def answers(self, logits, domain, cliques) -> list[np.ndarray]:
        tables = softmax_tables(logits, domain.shape)
        return [mixture_marginal(tables, sorted(domain.attrs.index(a) for a in c)).ravel()
                for c in cliques]

    def update(self, logits, domain, targets, new, rng) -> np.ndarray:
        logits = logits.copy()
        measured = [(sorted(domain.attrs.index(a) for a in c), t) for c, t in targets.items()]
        adam, previous, flat = Adam([logits], self.learning_rate), np.inf, 0
        for _ in range(self.steps):
            tables = softmax_tables(logits, domain.shape, np.float32)
            loss, grads, _, _ = squared_loss(tables, measured)
            flat = flat + 1 if previous - loss < self.tolerance * previous else 0
            if flat >= 10:
                break
            previous = loss
            adam.step([logits], [_softmax_backward(tables, grads).astype(np.float64)])
        return logits

    def output(self, logits, domain, total) -> ProductMixture:
        return ProductMixture(domain, softmax_tables(logits, domain.shape), total)


def _softmax_backward(tables, grads) -> np.ndarray:
    """dL/dlogits from dL/dP through each attribute block's softmax."""
    return np.concatenate([p * (g - (p * g).sum(axis=1, keepdims=True))
                           for p, g in zip(tables, grads)], axis=1)
