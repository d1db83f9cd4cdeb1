"""Domains: the ordered attributes of a data set and the number of values each takes.

A :class:`Domain` is an immutable value (Private-PGM's vocabulary): every factor, marginal,
junction tree and data set carries one. Attribute order matters: tables are laid out in
domain order (C order, last attribute fastest).
"""
from __future__ import annotations

import json
import numbers
import os
from collections.abc import Iterable, Iterator, Mapping

from dpcore.errors import DpcoreTypeError, InvalidArgumentError

__all__ = ["Domain"]


def _as_attrs(attrs) -> tuple:
    """A single name or an iterable of names, as a tuple."""
    if isinstance(attrs, str):
        return (attrs,)
    if not isinstance(attrs, Iterable):
        raise DpcoreTypeError(f"attrs must be a name or an iterable of names, got {attrs!r}")
    return tuple(attrs)


class Domain:
    """Ordered attribute names with their sizes (integers >= 1).

    >>> d = Domain(("age", "sex"), (4, 2))
    >>> d.size(), d["sex"], d.project(["sex"]).attrs
    (8, 2, ('sex',))
    """

    __slots__ = ("_attrs", "_shape", "_index")

    def __init__(self, attrs, shape):
        attrs = _as_attrs(attrs)
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
            raise DpcoreTypeError(f"shape must be an iterable of integers, got {shape!r}")
        shape = tuple(shape)
        if len(attrs) != len(shape):
            raise InvalidArgumentError(
                f"attrs and shape must have the same length, got {len(attrs)} attrs and "
                f"{len(shape)} sizes")
        for name in attrs:
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(
                    f"attribute names must be non-empty strings, got {name!r}")
        sizes = []
        for name, size in zip(attrs, shape):
            if isinstance(size, bool) or not isinstance(size, numbers.Integral):
                raise DpcoreTypeError(
                    f"size of attribute {name!r} must be an integer, got {size!r}")
            if size < 1:
                raise InvalidArgumentError(
                    f"size of attribute {name!r} must be >= 1, got {int(size)}")
            sizes.append(int(size))
        index = {}
        for i, name in enumerate(attrs):
            if name in index:
                raise InvalidArgumentError(f"attribute names must be unique, got {name!r} twice")
            index[name] = i
        self._attrs = attrs
        self._shape = tuple(sizes)
        self._index = index

    @classmethod
    def _trusted(cls, attrs: tuple, shape: tuple) -> Domain:
        """A sub-domain of a validated one: skips validation (hot in marginal batches)."""
        domain = object.__new__(cls)
        domain._attrs = attrs
        domain._shape = shape
        domain._index = {a: i for i, a in enumerate(attrs)}
        return domain

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, sizes: Mapping) -> Domain:
        """From ``{"column": size}`` in column order."""
        if not isinstance(sizes, Mapping):
            raise DpcoreTypeError(f"expected a mapping of column -> size, got {type(sizes).__name__}")
        return cls(tuple(sizes.keys()), tuple(sizes.values()))

    @classmethod
    def from_json(cls, path) -> Domain:
        """From a JSON file holding ``{"column": size, ...}`` (Private-PGM's format)."""
        with open(os.fspath(path), encoding="utf-8") as f:
            try:
                config = json.load(f)
            except json.JSONDecodeError as e:
                raise InvalidArgumentError(f"domain file {path} is not valid JSON: {e}") from e
        if not isinstance(config, dict):
            raise InvalidArgumentError(
                f"domain file {path} must hold a JSON object of column -> size, got "
                f"{type(config).__name__}")
        return cls.from_dict(config)

    def to_dict(self) -> dict:
        return dict(zip(self._attrs, self._shape))

    # -- views -------------------------------------------------------------------------------
    @property
    def attrs(self) -> tuple:
        return self._attrs

    @property
    def shape(self) -> tuple:
        return self._shape

    def size(self, attrs=None) -> int:
        """Exact number of cells of the table over ``attrs`` (default: all attributes)."""
        if attrs is None:
            shape = self._shape
        else:   # project(attrs).shape without building the sub-domain (hot: ~5,000 a selection)
            index = self._index
            shape = [self._shape[index[a]] for a in self._check(attrs)]
        cells = 1
        for s in shape:
            cells *= s
        return cells

    def _check(self, attrs) -> tuple:
        attrs = attrs if type(attrs) is tuple else _as_attrs(attrs)
        for a in attrs:
            if a not in self:
                raise InvalidArgumentError(f"attribute {a!r} is not in the domain {self._attrs}")
        if len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(f"attributes must not repeat, got {attrs}")
        return attrs

    def project(self, attrs) -> Domain:
        """The sub-domain over ``attrs``, in the order given."""
        attrs = self._check(attrs)
        return Domain._trusted(attrs, tuple(self._shape[self._index[a]] for a in attrs))

    def marginalize(self, attrs) -> Domain:
        """The sub-domain without ``attrs`` (attributes not in the domain are ignored)."""
        drop = set(_as_attrs(attrs))
        return self.project(tuple(a for a in self._attrs if a not in drop))

    def axes(self, attrs) -> tuple:
        """Positions of ``attrs`` in this domain."""
        return tuple(self._index[a] for a in self._check(attrs))

    def canonical(self, attrs) -> tuple:
        """``attrs`` (which must be in the domain) in domain order."""
        # sorted by position: the domain-order filter's answer in O(k log k), not O(d) a call
        # the domain's own names, never the caller's objects (a str subclass could print as
        # another name in the ledger)
        return tuple(self._attrs[i] for i in sorted({self._index[a] for a in self._check(attrs)}))

    def merge(self, other: Domain) -> Domain:
        """This domain followed by the attributes of ``other`` it lacks (sizes must agree)."""
        if not isinstance(other, Domain):
            raise DpcoreTypeError(f"can only merge a Domain, got {type(other).__name__}")
        for a, s in zip(other.attrs, other.shape):
            if a in self._index and self[a] != s:
                raise InvalidArgumentError(
                    f"attribute {a!r} has size {self[a]} in one domain and {s} in the other")
        extra = [(a, s) for a, s in zip(other.attrs, other.shape) if a not in self._index]
        return Domain(self._attrs + tuple(a for a, _ in extra),
                      self._shape + tuple(s for _, s in extra))

    # -- protocol ----------------------------------------------------------------------------
    def __contains__(self, attr) -> bool:
        try:
            return attr in self._index
        except TypeError:  # unhashable: certainly not an attribute name
            return False

    def __getitem__(self, attr) -> int:
        try:
            return self._shape[self._index[attr]]
        except (KeyError, TypeError):
            raise InvalidArgumentError(
                f"attribute {attr!r} is not in the domain {self._attrs}") from None

    def __len__(self) -> int:
        return len(self._attrs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Domain):
            return NotImplemented
        return self._attrs == other._attrs and self._shape == other._shape

    def __hash__(self) -> int:
        return hash((self._attrs, self._shape))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}: {s}" for a, s in zip(self._attrs, self._shape))
        return f"Domain({inner})"
