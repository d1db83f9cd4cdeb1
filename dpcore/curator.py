"""The privacy boundary: the only module in dpcore that reads sensitive records.

A :class:`Curator` owns a dataset and a :class:`~dpcore.accounting.PrivacyFilter`. It offers
exactly two data-dependent releases, each charged to the filter (and so written to the ledger,
which the filter saves) *before* the data is read and before any randomness is drawn:

* :meth:`Curator.measure` — a marginal plus Gaussian (or exact discrete Gaussian) noise;
* :meth:`Curator.select` — the exponential mechanism over AIM-style L1 quality scores.

Nothing else returns a value that depends on the records: no record count, no exact marginal.
The domain is public. Conventions: neighbouring datasets differ by adding or removing one
record; a marginal M_r has L1 and L2 sensitivity 1 under that relation (one record adds one to
exactly one cell; AIM paper Sec. 2.2), and so does any aggregation of a marginal's cells by a
public map (used by :meth:`Curator.compress`). A reviewer audits this file, the accountant and
``proofs/``, not the mechanisms.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np

from dpcore.accounting import ExponentialEvent, GaussianEvent, ZCDPEvent
from dpcore.accounting._numbers import round_cost_down
from dpcore.accounting.noise import (
    discrete_gaussian,
    exponential_mechanism,
    gaussian_noise,
    make_rng,
)
from dpcore.errors import DpcoreTypeError, InvalidArgumentError

__all__ = ["Curator"]


def _positive_finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        raise DpcoreTypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{name} must be finite and > 0, got {value}")
    return value


class Curator:
    """Owns the sensitive records and the privacy filter; releases only charged answers.

    ``seed`` fixes the noise generator for reproducible runs; without it the generator is
    seeded from OS entropy (``dpcore.accounting.noise.make_rng``).
    """

    def __init__(self, dataset, privacy_filter, *, seed=None):
        for attr in ("marginals", "domain"):
            if not hasattr(dataset, attr):
                raise DpcoreTypeError(f"dataset must be a dpcore.Dataset, got {type(dataset).__name__}")
        if not hasattr(privacy_filter, "charge"):
            raise DpcoreTypeError(
                f"privacy_filter must be a dpcore.accounting.PrivacyFilter, got {type(privacy_filter).__name__}")
        weights = getattr(dataset, "weights", None)
        # Sensitivity 1 needs every record to count at most once.
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.size and (not np.all(np.isfinite(w)) or w.min() < 0 or w.max() > 1):
                raise InvalidArgumentError("dataset weights must lie in [0, 1] for sensitivity 1")
        self.__dataset = dataset
        self.__maps: dict[str, np.ndarray] = {}
        self.__cache: dict[tuple[str, ...], np.ndarray] = {}
        self._filter = privacy_filter
        self._rng = make_rng(seed)
        self._domain = dataset.domain
        self._integral = weights is None
        self._reads = 0

    # ------------------------------------------------------------------ public, data-free
    @property
    def domain(self):
        """The public domain the releases are expressed over."""
        return self._domain

    @property
    def privacy_filter(self):
        """The filter every release is charged to (budget and spend are public)."""
        return self._filter

    @property
    def reads(self) -> int:
        """How many times sensitive data has been read (each read follows one charge)."""
        return self._reads

    def compress(self, mapping: Mapping[str, Sequence[int]]) -> Curator:
        """A curator over a coarsened domain (NIST-MST Alg. 4), sharing this filter and RNG.

        ``mapping[attr][old_code] = new_code`` must be a public function (e.g. derived from
        noisy 1-way marginals). Merging cells keeps every marginal's sensitivity at 1.
        """
        maps = dict(self.__maps)
        sizes = dict(zip(self._domain.attrs, self._domain.shape))
        for attr, codes in mapping.items():
            if attr not in self._domain:
                raise InvalidArgumentError(f"compress mapping names an attribute not in the domain: {attr!r}")
            codes = np.asarray(codes)
            if codes.ndim != 1 or codes.size != sizes[attr] or not np.issubdtype(codes.dtype, np.integer):
                raise InvalidArgumentError(
                    f"compress mapping for {attr!r} must be {sizes[attr]} integer codes, got shape {codes.shape}")
            if codes.size and (codes.min() < 0 or set(np.unique(codes)) != set(range(int(codes.max()) + 1))):
                raise InvalidArgumentError(f"compress mapping for {attr!r} must map onto 0..k-1 without gaps")
            maps[attr] = codes if attr not in maps else codes[maps[attr]]
            sizes[attr] = int(codes.max()) + 1 if codes.size else 0
        view = object.__new__(type(self))
        view.__dataset = self.__dataset
        view.__maps = maps
        view.__cache = {}
        view._filter = self._filter
        view._rng = self._rng
        view._domain = type(self._domain)(self._domain.attrs, tuple(sizes[a] for a in self._domain.attrs))
        view._integral = self._integral
        view._reads = 0
        return view

    # ------------------------------------------------------------------ charged releases
    def measure(self, attrs, sigma, *, discrete: bool = False) -> np.ndarray:
        """Noisy marginal on ``attrs``: M_r(D) + noise, flat in the domain's cell order.

        Privacy: Gaussian mechanism on a sensitivity-1 query, rho = 1 / (2 sigma^2) (AIM paper
        Prop. 1; proofs/gaussian.py). With ``discrete=True`` the noise is the exact discrete
        Gaussian with variance parameter sigma^2 taken as an exact rational from the float sigma,
        which has the same zCDP cost (Canonne, Kamath, Steinke 2020; proofs/discrete_gaussian.py).
        The charge is made before the data is read; a refused charge raises
        ``BudgetExceededError`` and reads nothing.
        """
        clique = self._clique(attrs, "attrs")
        sigma = _positive_finite("sigma", sigma)
        if discrete and not self._integral:
            raise InvalidArgumentError("discrete=True needs integer counts; the dataset has record weights")
        event = GaussianEvent(sigma, 1)
        self._filter.charge(event, what={"release": "marginal", "attrs": list(clique),
                                         "noise": "discrete_gaussian" if discrete else "gaussian"})
        (true,) = self._read([clique])
        if discrete:
            noise = discrete_gaussian(Fraction(sigma) ** 2, true.size, self._rng)
            return true + np.asarray(noise, dtype=np.float64)
        return true + gaussian_noise(sigma, true.size, self._rng)

    def select(self, candidates, reference, epsilon, *, weights=None, penalties=None) -> int:
        """Exponential mechanism: index of one candidate, Pr[r] ∝ exp(ε q_r / (2Δ)).

        q_r = w_r (||M_r(D) − reference_r||₁ − penalty_r) with public ``reference`` vectors
        (e.g. the current model's marginals), weights w_r >= 0 (default 1) and penalties
        (default 0). Δ = max_r w_r: ||M_r(D) − ref||₁ changes by at most 1 when one record is
        added or removed, so q_r has sensitivity w_r (AIM paper Sec. 4, Eq. 1).
        Privacy: ε²/8-zCDP (AIM paper Prop. 2; proofs/exponential_mechanism.py), charged first.
        """
        cliques = [self._clique(c, f"candidates[{i}]") for i, c in enumerate(candidates)]
        if not cliques:
            raise InvalidArgumentError("candidates must hold at least one clique, got none")
        epsilon = _positive_finite("epsilon", epsilon)
        k = len(cliques)
        w = self._vector("weights", weights, k, 1.0)
        if w.min() < 0:
            raise InvalidArgumentError(f"weights must be >= 0, got min {w.min()}")
        delta = float(w.max())
        if delta <= 0:
            raise InvalidArgumentError("weights must have a positive maximum (sensitivity), got 0")
        pen = self._vector("penalties", penalties, k, 0.0)
        if len(reference) != k:
            raise InvalidArgumentError(f"reference must hold {k} vectors (one per candidate), got {len(reference)}")
        refs = []
        for i, (clique, ref) in enumerate(zip(cliques, reference)):
            ref = np.asarray(ref, dtype=np.float64).ravel()
            if ref.size != self._domain.size(clique) or not np.all(np.isfinite(ref)):
                raise InvalidArgumentError(
                    f"reference[{i}] must be {self._domain.size(clique)} finite values, got {ref.size}")
            refs.append(ref)
        event = ExponentialEvent(epsilon, delta)
        self._filter.charge(event, what={"release": "selection", "candidates": len(cliques),
                                         "sensitivity": delta})
        trues = self._read(cliques)
        scores = np.array([np.abs(t - r).sum() for t, r in zip(trues, refs)])
        scores = w * (scores - pen)
        return int(exponential_mechanism(scores, epsilon, delta, self._rng))

    def retire(self, reason: str) -> Fraction:
        """Charge the filter's whole remaining budget and release nothing; returns the amount.

        Calibration rounds each float parameter so its exact cost is a few ulps *below* its
        target (``dpcore.accounting.calibration``); a mechanism meant to spend its whole budget
        retires that rounding residue here so the ledger's exact total equals the budget.
        Reads no data, so it is trivially private; it only stops further spending.
        """
        # The largest charge that fits: costs are recorded rounded up onto the 2**-128 grid.
        rest = round_cost_down(Fraction(self._filter.remaining))
        if rest > 0:
            self._filter.charge(ZCDPEvent(rest), what={"release": "none", "reason": str(reason)})
        return rest

    # ------------------------------------------------------------------ internals
    def _clique(self, attrs, field):
        if isinstance(attrs, str) or not isinstance(attrs, Sequence):
            raise DpcoreTypeError(f"{field} must be a sequence of attribute names, got {attrs!r}")
        unknown = [a for a in attrs if a not in self._domain]
        if unknown:
            raise InvalidArgumentError(f"{field} names attributes not in the domain: {unknown!r}")
        if not attrs or len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(f"{field} must be distinct attribute names, got {tuple(attrs)!r}")
        return tuple(self._domain.canonical(attrs))

    @staticmethod
    def _vector(name, values, k, default):
        if values is None:
            return np.full(k, default)
        v = np.asarray(values, dtype=np.float64).ravel()
        if v.size != k or not np.all(np.isfinite(v)):
            raise InvalidArgumentError(f"{name} must be {k} finite values, got {v.size}")
        return v

    def _read(self, cliques):
        """THE sensitive read: exact marginals (flat, domain cell order). Call only after a charge."""
        self._reads += 1
        missing = [c for c in cliques if c not in self.__cache]
        if missing:
            for clique, factor in zip(missing, self.__dataset.marginals(missing)):
                self.__cache[clique] = self._coarsen(clique, factor.values)
        return [self.__cache[c] for c in cliques]

    def _coarsen(self, clique, values):
        values = np.asarray(values, dtype=np.float64)
        for axis, attr in enumerate(clique):
            codes = self.__maps.get(attr)
            if codes is not None:
                moved = np.moveaxis(values, axis, 0)
                out = np.zeros((int(codes.max()) + 1,) + moved.shape[1:])
                np.add.at(out, codes, moved)
                values = np.moveaxis(out, 0, axis)
        return values.ravel()
