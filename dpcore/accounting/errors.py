"""Errors specific to privacy accounting.

They subclass the shared :mod:`dpcore.errors` types so ``except DpcoreError`` catches them.
"""
from dpcore.errors import DpcoreError


class BudgetExceededError(DpcoreError):
    """A charge would make the exact sum of rho exceed the filter's budget.

    Raised by :meth:`PrivacyFilter.charge` *before* anything is committed or any noise is
    drawn; the filter and its ledger are unchanged.
    """


class LedgerError(DpcoreError, ValueError):
    """A ledger file is unreadable, truncated, of an unknown version or structurally invalid."""
