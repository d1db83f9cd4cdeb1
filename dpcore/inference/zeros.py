"""Structural zeros: public cells the estimated model must give exactly zero mass.

A :class:`StructuralZero` is a boolean mask over the cells of a marginal (``attrs``, C order
over ``attrs`` as given): ``True`` cells are impossible by a public rule (a schema's forbidden
combinations, :mod:`dpcore.constraints`). Estimation (:func:`dpcore.inference.estimate`) puts a
log-potential of ``-inf`` on those cells of a model clique holding ``attrs`` and keeps it there
throughout mirror descent (a step leaves ``-inf`` at ``-inf``), so every iterate, and the fitted
model, has zero mass on them: Private-PGM then solves its maximum-likelihood problem over the
distributions supported on the allowed cells, which is the constrained fit (tested against a
brute-force solve over the allowed cells of the full joint). The attributes become a model
clique even when nothing measures them together (a clique with no measurement adds no term to
the loss). The mask is public, so using it is post-processing of the released measurements
(proofs/structural_constraints.py).
"""
from __future__ import annotations

import numpy as np

from dpcore.errors import DomainError, DpcoreTypeError, InvalidArgumentError


class StructuralZero:
    """Cells of the marginal on ``attrs`` where ``mask`` is True have zero mass. Immutable.

    >>> z = StructuralZero(("age", "job"), [[False, True], [False, False]])
    >>> z.attrs, int(z.mask.sum())
    (('age', 'job'), 1)
    """

    __slots__ = ("attrs", "mask")

    def __init__(self, attrs, mask):
        attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if not attrs or not all(isinstance(a, str) for a in attrs):
            raise DpcoreTypeError(f"attrs must be a non-empty tuple of names, got {attrs!r}")
        if len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(f"attrs must be unique, got {attrs}")
        array = np.asarray(mask)
        if array.dtype != np.bool_:
            raise DpcoreTypeError(f"mask must be a boolean array, got dtype {array.dtype}")
        if array.ndim != len(attrs):
            raise InvalidArgumentError(
                f"mask must have one axis per attribute ({len(attrs)}), got shape {array.shape}")
        if array.all():
            raise InvalidArgumentError(f"a structural zero on {attrs} forbids every cell")
        array = np.array(array, dtype=bool)
        array.setflags(write=False)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "mask", array)

    def __setattr__(self, name, value):
        raise AttributeError("StructuralZero is immutable")

    def __reduce__(self):   # a saved synthesizer keeps its zeros; rebuild through validation
        return (StructuralZero, (self.attrs, np.array(self.mask)))

    def __repr__(self):
        return f"StructuralZero(attrs={self.attrs}, cells={int(self.mask.sum())}/{self.mask.size})"

    def validate(self, domain) -> None:
        for a in self.attrs:
            if a not in domain:
                raise DomainError(f"structural zero attribute {a!r} is not in the domain "
                                  f"{domain.attrs}")
        shape = tuple(domain[a] for a in self.attrs)
        if self.mask.shape != shape:
            raise InvalidArgumentError(f"structural zero on {self.attrs} must have shape "
                                       f"{shape}, got {self.mask.shape}")

    def over(self, clique, shape) -> np.ndarray:
        """The mask broadcast over a clique's cells (``clique``: attributes, ``shape``: its
        shape); ``attrs`` must lie in the clique."""
        canon = [a for a in clique if a in self.attrs]
        mask = np.transpose(self.mask, [self.attrs.index(a) for a in canon])
        expand = tuple(shape[i] if a in self.attrs else 1 for i, a in enumerate(clique))
        return np.broadcast_to(mask.reshape(expand), tuple(shape))


def merge_zeros(zeros) -> list[StructuralZero]:
    """One zero per attribute set (masks over the same attributes OR-ed), in first-seen order:
    several rules over one pair become one mask, and one model clique."""
    out: dict[frozenset, StructuralZero] = {}
    for z in zeros:
        if not isinstance(z, StructuralZero):
            raise DpcoreTypeError(f"zeros must be StructuralZero objects, got {type(z).__name__}")
        key = frozenset(z.attrs)
        if key in out:
            first = out[key]
            other = np.transpose(z.mask, [z.attrs.index(a) for a in first.attrs])
            out[key] = StructuralZero(first.attrs, first.mask | other)
        else:
            out[key] = z
    return list(out.values())
