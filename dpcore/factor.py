"""Dense factors: a table of float64 values over the attributes of a Domain.

A :class:`Factor` is the unit of inference (Private-PGM's vocabulary): clique potentials,
beliefs and marginals are all factors. Values are a numpy array shaped ``domain.shape`` (C
order, last attribute fastest), the same layout the C++ kernels use, so handing a factor to
``dpcore._core`` copies nothing. Sum-out and log-sum-exp marginalisation run in the compiled
kernel (``_core.marginalize``); broadcasting arithmetic uses numpy views, which allocate only
the result.
"""
from __future__ import annotations

import numbers

import numpy as np

from dpcore import _core
from dpcore.errors import DpcoreTypeError, InvalidArgumentError

__all__ = ["Factor"]


def _attr_tuple(attrs) -> tuple:
    return (attrs,) if isinstance(attrs, str) else tuple(attrs)


class Factor:
    """A table of float64 ``values`` shaped ``domain.shape``.

    >>> from dpcore.domain import Domain
    >>> f = Factor(Domain(("a", "b"), (2, 3)), np.arange(6.0))
    >>> f.project("b").values.tolist()
    [3.0, 5.0, 7.0]
    """

    __slots__ = ("domain", "values")

    def __init__(self, domain, values):
        from dpcore.domain import Domain

        if not isinstance(domain, Domain):
            raise DpcoreTypeError(f"domain must be a dpcore.Domain, got {type(domain).__name__}")
        array = np.asarray(values)
        if array.dtype.kind not in "biuf":
            raise DpcoreTypeError(f"values must be a real numeric array, got dtype {array.dtype}")
        shape = tuple(domain.shape)
        if array.shape != shape:
            if array.size != int(np.prod(shape, dtype=object)):
                raise InvalidArgumentError(
                    f"values must have shape {shape} (or that many cells), got shape "
                    f"{array.shape}")
            array = array.reshape(shape)
        self.domain = domain
        self.values = np.asarray(array, dtype=np.float64, order="C")  # keeps 0-d tables 0-d

    @classmethod
    def _trusted(cls, domain, values: np.ndarray) -> Factor:
        """A Factor from a Domain and a C-ordered float64 array already shaped
        ``domain.shape``: skips validation (AIM builds thousands per round); anything else
        goes through the checking constructor."""
        if not (type(values) is np.ndarray and values.dtype == np.float64
                and values.flags.c_contiguous and values.shape == domain.shape):
            return cls(domain, values)
        factor = object.__new__(cls)
        factor.domain = domain
        factor.values = values
        return factor

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def zeros(cls, domain) -> Factor:
        return cls(domain, np.zeros(_cells_shape(domain)))

    @classmethod
    def ones(cls, domain) -> Factor:
        return cls(domain, np.ones(_cells_shape(domain)))

    @classmethod
    def uniform(cls, domain) -> Factor:
        return cls(domain, np.full(_cells_shape(domain), 1.0 / domain.size()))

    # -- structure ---------------------------------------------------------------------------
    @property
    def attributes(self) -> tuple:
        return tuple(self.domain.attrs)

    def __repr__(self) -> str:
        return f"Factor(attributes={self.attributes}, shape={self.values.shape})"

    def _aligned(self, domain) -> np.ndarray:
        """A read-only view of the values broadcast to ``domain`` (a superset); no copy."""
        own = self.attributes
        for a in own:
            if a not in domain:
                raise InvalidArgumentError(
                    f"expand needs a domain containing {a!r}; got attributes {tuple(domain.attrs)}")
            if domain[a] != self.domain[a]:
                raise InvalidArgumentError(
                    f"attribute {a!r} must have size {self.domain[a]}, got {domain[a]}")
        target = tuple(domain.attrs)
        present = [a for a in target if a in own]
        values = self.values.transpose([own.index(a) for a in present])
        shape = tuple(domain[a] if a in own else 1 for a in target)
        return np.broadcast_to(values.reshape(shape), tuple(domain.shape))

    def expand(self, domain) -> Factor:
        """The values broadcast over ``domain``, a superset of this factor's attributes."""
        return Factor(domain, np.ascontiguousarray(self._aligned(domain)))

    def transpose(self, attrs) -> Factor:
        """The same table with its attributes in the order ``attrs`` (a permutation)."""
        attrs = _attr_tuple(attrs)
        if sorted(attrs) != sorted(self.attributes) or len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(
                f"transpose needs a permutation of {self.attributes}, got {attrs}")
        return self.expand(self.domain.project(attrs))

    def project(self, attrs, log: bool = False) -> Factor:
        """Sum out (log=True: log-sum-exp out) every attribute not in ``attrs``.

        The result's attributes are ``attrs`` in the given order.
        """
        attrs = _attr_tuple(attrs)
        own = self.attributes
        for a in attrs:
            if a not in own:
                raise InvalidArgumentError(f"projection attribute must be in {own}, got {a!r}")
        if len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(f"projection attributes must be distinct, got {attrs}")
        keep = [own.index(a) for a in attrs]
        return Factor(self.domain.project(attrs), _core.marginalize(self.values, keep, log))

    # -- reductions and elementwise ----------------------------------------------------------
    def sum(self) -> float:
        return float(self.values.sum())

    def logsumexp(self) -> float:
        return float(_core.logsumexp(self.values))

    def normalize(self, total: float = 1.0, log: bool = False) -> Factor:
        """Scale to sum ``total`` (log=True: shift so the log-values log-sum-exp to log(total))."""
        if not (isinstance(total, numbers.Real) and np.isfinite(total) and total > 0):
            raise InvalidArgumentError(f"normalize total must be finite and > 0, got {total!r}")
        if log:
            mass = self.logsumexp()
            if not np.isfinite(mass):
                raise InvalidArgumentError(f"normalize needs a finite log-mass, got {mass}")
            return Factor(self.domain, self.values + (np.log(total) - mass))
        mass = self.sum()
        if mass == 0 or not np.isfinite(mass):
            raise InvalidArgumentError(f"normalize needs a finite non-zero mass, got {mass}")
        return Factor(self.domain, self.values * (total / mass))

    def exp(self) -> Factor:
        return Factor(self.domain, np.exp(self.values))

    def log(self) -> Factor:
        with np.errstate(divide="ignore"):
            return Factor(self.domain, np.log(self.values))

    def datavector(self) -> np.ndarray:
        """The values flattened in C order (a view when possible)."""
        return self.values.reshape(-1)

    # -- arithmetic --------------------------------------------------------------------------
    def _binary(self, other, op) -> Factor:
        if isinstance(other, Factor):
            domain = self.domain.merge(other.domain)
            return Factor(domain, op(self._aligned(domain), other._aligned(domain)))
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return Factor(self.domain, op(self.values, float(other)))
        return NotImplemented

    def __add__(self, other):
        return self._binary(other, np.add)

    def __sub__(self, other):
        return self._binary(other, np.subtract)

    def __mul__(self, other):
        return self._binary(other, np.multiply)

    def __truediv__(self, other):
        return self._binary(other, np.divide)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: np.add(b, a))

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: np.subtract(b, a))

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: np.multiply(b, a))

    def __rtruediv__(self, other):
        return self._binary(other, lambda a, b: np.divide(b, a))

    def __neg__(self):
        return Factor(self.domain, -self.values)


def _cells_shape(domain) -> tuple:
    # Check the cap before numpy tries to allocate an absurd table.
    _core.checked_cell_count(list(domain.shape))
    return tuple(domain.shape)
