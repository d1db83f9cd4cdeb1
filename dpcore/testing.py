"""Audit tools for mechanism authors: prove in a test that a mechanism reads data only through
charged curator calls.

:class:`AuditedCurator` fails any sensitive read that no fresh charge preceded, and
:class:`TrackedDataset` fails any access to its records or counts outside such a read, so a
mechanism that peeks at the data (a record count, an exact marginal) fails its tests::

    data = TrackedDataset(records, domain)
    curator = AuditedCurator(data, PrivacyFilter.from_approx_dp(1.0, 1e-9), seed=0)
    result = my_mechanism(curator)            # raises AssertionError on an uncharged read
    assert curator.audit >= 1
"""
from __future__ import annotations

from fractions import Fraction

from dpcore.curator import Curator
from dpcore.dataset import Dataset

__all__ = ["AuditedCurator", "TrackedDataset"]


class TrackedDataset(Dataset):
    """A dataset that fails any access to its records or counts outside a charged read."""

    def _guard(self):
        state = getattr(self, "state", None)
        assert state is None or state["inside"], "records touched outside a charged curator read"

    def marginals(self, attr_sets):
        self._guard()
        return super().marginals(attr_sets)

    def project(self, attrs):
        self._guard()
        return super().project(attrs)

    @property
    def records(self):
        self._guard()
        return super().records

    def __len__(self):
        self._guard()
        return super().__len__()

    def soft_count(self, *args, **kwargs):
        self._guard()
        return super().soft_count(*args, **kwargs)


class AuditedCurator(Curator):
    """Counts sensitive reads; fails if one was not preceded by a fresh charge. Compressed
    views share the audit state, since they share the filter. A :class:`TrackedDataset`
    checks that every access happens inside one of these reads."""

    def __init__(self, dataset, *args, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        self.state = {"reads": 0, "last": Fraction(-1), "inside": False}
        # the caller's dataset and the one the curator holds (a copy when it snapped weights)
        dataset.state = self._Curator__dataset.state = self.state

    @property
    def audit(self) -> int:
        """The number of sensitive reads so far."""
        return self.state["reads"]

    def _read(self, cliques):
        return self._audited(super()._read, cliques)

    def _read_soft_count(self, *args):
        return self._audited(super()._read_soft_count, *args)

    def _audited(self, read, *args):
        spent = Fraction(self.privacy_filter.spent)
        assert spent > self.state["last"], "sensitive read without a new charge"
        self.state["last"] = spent
        self.state["reads"] += 1
        self.state["inside"] = True
        try:
            return read(*args)
        finally:
            self.state["inside"] = False

    def compress(self, mapping):
        view = super().compress(mapping)
        view.state = self.state
        return view
