"""Exception types shared by the kernels and the Python layer.

Each class subclasses the builtin a caller would expect (``ValueError`` or
``TypeError``) as well as :class:`DpcoreError`, so ``except ValueError`` works and
so does catching everything dpcore raises. The compiled core maps its C++
exceptions onto these classes (see ``csrc/python/module.cpp``).
"""


class DpcoreError(Exception):
    """Base class of every error dpcore raises on purpose."""


class InvalidArgumentError(DpcoreError, ValueError):
    """An argument breaks a documented rule; the message names the rule and the value."""


class DomainError(DpcoreError, ValueError):
    """A record holds a code outside its attribute's domain."""


class TableTooLargeError(DpcoreError, ValueError):
    """A table's cell count overflows 64 bits or exceeds the memory cap."""


class DpcoreTypeError(DpcoreError, TypeError):
    """An argument has the wrong type (e.g. float codes where integers are required)."""
