"""Sliced Wasserstein kernels for particle gradient descent (PrivPGD), on the C++ core.

Thin wrappers of ``dpcore._core``: :func:`sliced_wasserstein` (the loss of a particle cloud
against 2-D grid distributions, and its gradient), :func:`particle_adam_step` (one sparse
Adam step, PyTorch's SparseAdam, with the paper's random gradient dropping) and
:func:`snap_to_grid` (particles to cell codes). :func:`reference_sliced_wasserstein` is the
plain NumPy definition the tests compare the kernel against.

>>> import numpy as np
>>> x = np.array([[0.25, 0.75], [0.75, 0.25]])
>>> table = np.array([[0.0, 0.5], [0.5, 0.0]])       # mass on cells (0, 1) and (1, 0)
>>> loss, grad = sliced_wasserstein(x, [(0, 1)], [table], np.array([[[1.0, 0.0]]]))
>>> round(loss, 12), snap_to_grid(x, [2, 2]).tolist()
(0.0, [[0, 1], [1, 0]])
"""
from __future__ import annotations

import numpy as np

from . import _core

__all__ = ["KEY_BITS", "particle_adam_step", "reference_sliced_wasserstein",
           "sliced_wasserstein", "snap_to_grid"]

KEY_BITS = int(_core.SLICED_KEY_BITS)


def sliced_wasserstein(particles, pairs, tables, directions, *, gradient: bool = True,
                       threads: int = 0):
    """``(loss, grad)``: the sum over targets t of the mean over the K directions
    ``directions[t]`` (shape (targets, K, 2)) of W2^2 between the particles' projection on
    columns ``pairs[t]`` and the projection of ``tables[t]``, a 2-D table of weights on the
    grid with cell centres ((a + 0.5) / k_i, (b + 0.5) / k_j), normalised by its sum. ``grad``
    (m x d, non-zero only in the targets' columns) is None when ``gradient`` is False.
    Particles in Fortran order (as PrivPGD keeps them) are read fastest."""
    particles = np.asarray(particles, dtype=np.float64)
    if not (particles.flags.c_contiguous or particles.flags.f_contiguous):
        particles = np.asfortranarray(particles)
    grad = np.zeros_like(particles) if gradient else None
    loss = _core.sliced_wasserstein(particles, [tuple(p) for p in pairs], list(tables),
                                    np.asarray(directions, dtype=np.float64), grad=grad,
                                    threads=threads)
    return loss, grad


particle_adam_step = _core.particle_adam_step


def snap_to_grid(particles, sizes) -> np.ndarray:
    """int64 codes: the grid cell ``min(floor(x * k), k - 1)`` of each coordinate."""
    return _core.snap_to_grid(particles, [int(k) for k in sizes])


def reference_sliced_wasserstein(particles, pairs, tables, directions):
    """The kernel's definition in NumPy (tests only; slow): ranks by the projection quantised
    to ``KEY_BITS`` bits of the projected unit square, ties by particle index, each rank r
    matched to the target's quantile at (r + 1/2) / m."""
    x = np.asarray(particles, dtype=np.float64)
    m, d = x.shape
    loss, grad = 0.0, np.zeros_like(x)
    top = float(2 ** KEY_BITS - 1)
    for (i, j), table, thetas in zip(pairs, tables, np.asarray(directions, dtype=np.float64)):
        table = np.asarray(table, dtype=np.float64)
        ki, kj = table.shape
        ci = ((np.arange(ki) + 0.5) / ki)[:, None] * np.ones((1, kj))
        cj = np.ones((ki, 1)) * ((np.arange(kj) + 0.5) / kj)[None, :]
        for t1, t2 in thetas:
            y = t1 * x[:, i] + t2 * x[:, j]
            lo, hi = min(0.0, t1) + min(0.0, t2), max(0.0, t1) + max(0.0, t2)
            scale = top / (hi - lo) if hi > lo else 0.0
            keys = np.minimum(np.maximum((y - lo) * scale, 0.0).astype(np.uint64), int(top))
            order = np.argsort(keys, kind="stable")
            keep = table.ravel() > 0          # zero-weight atoms take no rank
            atoms = (t1 * ci + t2 * cj).ravel()[keep]
            w = table.ravel()[keep]
            sort = np.lexsort((np.flatnonzero(keep), atoms))
            cum = np.cumsum(w[sort])
            u = (np.arange(m) + 0.5) / m * cum[-1]
            at = np.minimum(np.searchsorted(cum, u, side="right"), atoms.size - 1)
            q = atoms[sort][at]
            diff = y[order] - q
            loss += float(np.sum(diff ** 2)) / m / len(thetas)
            g = 2.0 * diff / m / len(thetas)
            grad[order, i] += g * t1
            grad[order, j] += g * t2
    return loss, grad
