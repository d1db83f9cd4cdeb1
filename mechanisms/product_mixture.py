"""A mixture of B product distributions over a discrete domain: the synthetic distribution of
RAP-softmax and GEM (Liu, Vietri & Wu, Sec. 5 and App. A.3).

Component j gives attribute a the probability table P_a[j] (a row of a B x |a| matrix), every
attribute independently; the mixture draws j uniformly. The k-way marginal of the mixture on
attributes (a_1, ..., a_k) is therefore the product query of the paper's eq. (5) averaged over
the components,

    M_r[v_1, ..., v_k] = (1/B) sum_j  P_{a_1}[j, v_1] ... P_{a_k}[j, v_k],

one matrix product of a Khatri-Rao product with the widest attribute's table (B |a_1| ... |a_k|
multiply-adds in BLAS). The squared loss over measured marginals and its gradient with respect to every
P_a are the same contraction with one table left out, so this module needs no automatic
differentiation: RAP-softmax chains it through a softmax by hand, GEM through its network
(``mechanisms.gem``). Everything here is post-processing of public values.
"""
from __future__ import annotations

import numbers

import numpy as np

from dpcore.errors import InvalidArgumentError

__all__ = ["Adam", "ProductMixture", "mixture_marginal", "positive_int", "softmax_tables",
           "squared_loss"]


def positive_int(name: str, value) -> int:
    """``value`` as an int >= 1, or an error naming ``name`` (the families' settings)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def _order(tables, axes) -> list[int]:
    """Positions of ``axes`` with the widest attribute last: it becomes the matrix product's
    free side, so the Khatri-Rao product of the others (B x the rest's cells) is smallest."""
    return sorted(range(len(axes)), key=lambda i: tables[axes[i]].shape[1])


def _khatri_rao(mats) -> np.ndarray:
    """Row-wise Kronecker product: B x prod(widths), the first matrix's index slowest."""
    out = mats[0]
    for m in mats[1:]:
        out = (out[:, :, None] * m[:, None, :]).reshape(out.shape[0], -1)
    return out


def mixture_marginal(tables, axes) -> np.ndarray:
    """(1/B) sum_j prod_l tables[axes[l]][j, v_l], shaped (|a_1|, ..., |a_k|): one matrix
    product of the others' Khatri-Rao product with the widest table."""
    order = _order(tables, axes)
    mats = [tables[axes[i]] for i in order]
    B = mats[0].shape[0]
    if len(mats) == 1:
        out = mats[0].sum(axis=0)
    else:
        out = _khatri_rao(mats[:-1]).T @ mats[-1]
    out = out.reshape([m.shape[1] for m in mats]) / B
    return np.transpose(out, np.argsort(order))


def squared_loss(tables, marginals, threshold: float = 0.0):
    """L = sum over measured marginals r and their cells of e_r^2 with e_r = M_r(mixture) -
    target_r, counting only cells with |e| >= ``threshold`` (GEM's gamma rule; 0 keeps every
    cell, RAP's loss). ``marginals`` is a list of (axes, target) with target shaped like the
    marginal. Returns (L, gradients dL/dP_a as a list like ``tables``, max |e|, cells kept).

    With W the widest table and K the Khatri-Rao product of the others, M = K^T W / B, so
    dL/dW = (2/B) K E and, with G = W E^T (B x the others' cells), dL/dP_l for another table
    is (2/B) G times the remaining tables, summed over their values."""
    grads = [np.zeros_like(t) for t in tables]
    loss, worst, kept = 0.0, 0.0, 0
    B = tables[0].shape[0]
    for axes, target in marginals:
        order = _order(tables, axes)
        mats = [tables[axes[i]] for i in order]
        widths = [m.shape[1] for m in mats]
        t = np.transpose(np.asarray(target, dtype=mats[0].dtype).reshape(
            [tables[a].shape[1] for a in axes]), order)
        if len(mats) == 1:
            e = mats[0].sum(axis=0) / B - t
        else:
            K = _khatri_rao(mats[:-1])
            e = (K.T @ mats[-1]).reshape(widths) / B - t
        worst = max(worst, float(np.abs(e).max()))
        if threshold > 0:
            e = np.where(np.abs(e) >= threshold, e, 0.0)
        kept += int(np.count_nonzero(e))
        loss += float(np.vdot(e, e))
        if len(mats) == 1:
            grads[axes[order[0]]] += (2.0 / B) * e
            continue
        e2 = e.reshape(-1, widths[-1])
        grads[axes[order[-1]]] += (2.0 / B) * (K @ e2)
        G = (mats[-1] @ e2.T).reshape([B, *widths[:-1]])
        if len(mats) == 2:
            grads[axes[order[0]]] += (2.0 / B) * G
            continue
        if len(mats) == 3:      # batched matrix-vector products: 3-way marginals, the common case
            grads[axes[order[0]]] += (2.0 / B) * np.matmul(G, mats[1][:, :, None])[:, :, 0]
            grads[axes[order[1]]] += (2.0 / B) * np.matmul(mats[0][:, None, :], G)[:, 0, :]
            continue
        for i in range(len(mats) - 1):
            other = G
            for m in range(len(mats) - 1):
                if m != i:
                    shape = [B] + [1] * (len(mats) - 1)
                    shape[1 + m] = widths[m]
                    other = other * mats[m].reshape(shape)
            summed = tuple(1 + m for m in range(len(mats) - 1) if m != i)
            grads[axes[order[i]]] += (2.0 / B) * (other.sum(axis=summed) if summed else other)
    return loss, grads, worst, kept


def softmax_tables(logits: np.ndarray, sizes, dtype=np.float64) -> list[np.ndarray]:
    """Split B x sum(sizes) logits into per-attribute tables, each row a softmax (``dtype``:
    float32 halves the cost of the loss's matrix products while training)."""
    out, start = [], 0
    logits = np.asarray(logits, dtype=dtype)
    for size in sizes:
        block = logits[:, start:start + size]
        block = np.exp(block - block.max(axis=1, keepdims=True))
        out.append(block / block.sum(axis=1, keepdims=True))
        start += size
    return out


class ProductMixture:
    """The released model of RAP-softmax and GEM: B product distributions, mixed uniformly.

    ``tables[i]`` is the B x |attr i| matrix of attribute i (the domain's order), rows summing
    to 1; ``total`` the noisy record count the mechanism estimated.
    """

    def __init__(self, domain, tables, total: float):
        tables = [np.asarray(t, dtype=np.float64) for t in tables]
        if len(tables) != len(domain) or any(
                t.ndim != 2 or t.shape != (tables[0].shape[0], n)
                for t, n in zip(tables, domain.shape)):
            raise InvalidArgumentError(f"tables must be {len(domain)} matrices of B rows and "
                                       f"the domain's sizes {tuple(domain.shape)}")
        if any(not np.isfinite(t).all() or (t < 0).any() for t in tables):
            raise InvalidArgumentError("tables must hold finite probabilities >= 0")
        self.domain = domain
        self.tables = [t / t.sum(axis=1, keepdims=True) for t in tables]
        self.total = float(total)

    @property
    def components(self) -> int:
        return self.tables[0].shape[0]

    def marginal(self, clique) -> np.ndarray:
        """The mixture's exact normalised marginal on ``clique``, shaped like its sub-domain
        (attributes in the domain's order)."""
        axes = sorted(self.domain.attrs.index(a) for a in clique)
        return mixture_marginal(self.tables, axes)

    def synthetic_data(self, rows: int, *, method: str = "round", seed=None):
        """``rows`` records. ``"round"``: rows // B from every component and the remainder
        from distinct random components (the authors' evaluation draws equally from each),
        ``"sample"``: the component of each row uniformly at random. Post-processing."""
        from dpcore import Dataset
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 0:
            raise InvalidArgumentError(f"rows must be an integer >= 0, got {rows!r}")
        if method not in ("round", "sample"):
            raise InvalidArgumentError(f"method must be 'round' or 'sample', got {method!r}")
        rng = np.random.default_rng(seed)
        B, rows = self.components, int(rows)
        if method == "round":
            which = np.concatenate([np.repeat(np.arange(B), rows // B),
                                    rng.choice(B, size=rows % B, replace=False)])
            which = rng.permutation(which)
        else:
            which = rng.integers(B, size=rows)
        # Rows grouped by component: one inverse-CDF lookup per (component, attribute), with
        # no rows x |attribute| temporary (10^7 rows are allowed).
        order = np.argsort(which, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=B))])
        codes = np.empty((rows, len(self.domain)), dtype=np.int64)
        for i, table in enumerate(self.tables):
            cdf = np.cumsum(table, axis=1)
            cdf /= cdf[:, -1:]
            u = rng.random(rows)
            column = codes[:, i]
            for j in range(B):
                at = order[bounds[j]:bounds[j + 1]]
                column[at] = np.searchsorted(cdf[j], u[at], side="right")
            np.minimum(column, table.shape[1] - 1, out=column)
        return Dataset(codes, self.domain)


class Adam:
    """Adam (Kingma & Ba 2015) on a list of arrays, in place; the optimiser of RAP and GEM."""

    def __init__(self, params, learning_rate: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.lr, (self.b1, self.b2), self.eps = float(learning_rate), betas, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params, grads) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)
