"""The privacy boundary: the only module in dpcore that reads sensitive records.

A :class:`Curator` owns a dataset and a :class:`~dpcore.accounting.PrivacyFilter`. Its
data-dependent releases (these, and FEM's and DQRS's query releases below) are each charged to
the filter (and so written to the ledger, which the filter saves) *before* the data is read and
before any randomness is drawn:

* :meth:`Curator.measure` — a marginal plus exact discrete Gaussian noise (float Gaussian
  noise only when asked, or for weighted records);
* :meth:`Curator.select` — the exact exponential mechanism over AIM-style L1 quality scores,
  computed exactly on a fixed-point grid;
* :meth:`Curator.measure_soft_count` — a smoothed threshold count (values in [0, 1] a record)
  plus exact discrete Gaussian noise.

Nothing else returns a value that depends on the records: no record count, no exact marginal.
The domain is public. Conventions: neighbouring datasets differ by adding or removing one
record; a marginal M_r has L1 and L2 sensitivity 1 under that relation (one record adds one to
exactly one cell; AIM paper Sec. 2.2), and so does any aggregation of a marginal's cells by a
public map (used by :meth:`Curator.compress`). A reviewer audits this file, the accountant and
``proofs/``, not the mechanisms.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np

from dpcore.accounting import (ExponentialEvent, GaussianEvent, PureDPEvent, SelfComposedEvent,
                               ZCDPEvent)
from dpcore.accounting._numbers import round_cost_down
from dpcore.accounting.level_sampler import level_exponential_mechanism
from dpcore.accounting.noise import (
    _bernoulli_exp,
    _Bits,
    discrete_gaussian_noise,
    exact_exponential_mechanism,
    gaussian_noise,
    make_rng,
)
from dpcore.dataset import Dataset
from dpcore.errors import DpcoreTypeError, InvalidArgumentError

__all__ = ["Curator", "SCORE_GRID", "SOFT_COUNT_GRID"]

#: Public selection inputs (reference vectors, weights, penalties) are rounded to multiples of
#: 1/SCORE_GRID before scoring, so quality scores are exact rationals (see Curator.select).
SCORE_GRID = 2 ** 20
_SCORE_LIMIT = 2 ** 40  # |public value| and |cell| below this keep grid integers < 2^60
#: A record's soft-count value is rounded to a multiple of 1/SOFT_COUNT_GRID, so the sum is an
#: exact integer in those units (exact discrete Gaussian noise; Curator.measure_soft_count).
SOFT_COUNT_GRID = 2 ** 20


def _finite(name: str, value, limit) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        raise DpcoreTypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or abs(value) >= limit:
        raise InvalidArgumentError(f"{name} must be finite and below {limit:.3g} in magnitude, got {value}")
    return value


def _positive_finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.floating, np.integer)):
        raise DpcoreTypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{name} must be finite and > 0, got {value}")
    return value


class Curator:
    """Owns the sensitive records and the privacy filter; releases only charged answers.

    ``seed`` fixes the noise generator for reproducible runs; without it the exact samplers
    draw from the OS CSPRNG (ChaCha20 keys from ``secrets``, ``os.urandom`` bits) and the
    float path's generator is seeded from OS entropy (``dpcore.accounting.noise.make_rng``).
    """

    def __init__(self, dataset, privacy_filter, *, seed=None):
        for attr in ("marginals", "domain"):
            if not hasattr(dataset, attr):
                raise DpcoreTypeError(f"dataset must be a dpcore.Dataset, got {type(dataset).__name__}")
        if not hasattr(privacy_filter, "charge"):
            raise DpcoreTypeError(
                f"privacy_filter must be a dpcore.accounting.PrivacyFilter, got {type(privacy_filter).__name__}")
        from dpcore.counted import CountedTable
        if isinstance(dataset, CountedTable) and dataset.passes == 0:
            # Records read for the first time after a charge could break the schema then:
            # the budget spent on a file a free pass refuses. One pass first (it counts
            # nothing and releases nothing), as fit_file's batch pass does.
            dataset.prefetch(())
        weights = getattr(dataset, "weights", None)
        # Sensitivity 1 needs every record to count at most once.
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            if w.size and (not np.all(np.isfinite(w)) or w.min() < 0 or w.max() > 1):
                raise InvalidArgumentError("dataset weights must lie in [0, 1] for sensitivity 1")
            dataset = _weights_on_grid(dataset, w)
        self.__dataset = dataset
        self.__maps: dict[str, np.ndarray] = {}
        self.__cache: dict[tuple[str, ...], np.ndarray] = {}
        self._cliques: dict[tuple, tuple[str, ...]] = {}   # validated attrs -> canonical clique
        self._sizes: dict[tuple[str, ...], int] = {}       # canonical clique -> cells
        self.__pool: _Pool | None = None    # the last candidate list select(among=...) checked
        self._filter = privacy_filter
        self._rng = make_rng(seed)
        # The exact samplers' source: the seeded generator (reproducible), else None = CSPRNG.
        self._exact_rng = None if seed is None else self._rng
        self._domain = dataset.domain
        self._integral = weights is None
        self._reads = 0

    def _charge(self, event, *, what):
        """Charge the filter; with a fixed seed every entry says so (``seed_fixed``), so the
        verifier can fail releases whose noise whoever knows the seed can recompute."""
        if self._exact_rng is not None:
            what = {**what, "seed_fixed": True}
        return self._filter.charge(event, what=what)

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
    def holds_records(self) -> bool:
        """Whether the records themselves are here (the in-memory engine), so releases that
        read records (:meth:`measure_soft_count`) work; the stream and Dask engines hold
        counted marginals only. Public: it describes the engine, not the data."""
        return hasattr(self.__dataset, "soft_count")

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
        view._domain = type(self._domain)(self._domain.attrs, tuple(sizes[a] for a in self._domain.attrs))
        if self._integral and type(self.__dataset) is Dataset and maps:
            # Count the coarsened codes instead of coarsening each marginal read (np.add.at per
            # axis: a third of MST's read of all pairs at 100 attributes). Counts are exact
            # integers either way, so the marginals are the same floats. Costs one copy of the
            # records; weighted records keep the per-marginal path (its float sums' order).
            records = np.array(self.__dataset.records, copy=True)
            for attr, codes in maps.items():
                col = self._domain.attrs.index(attr)
                records[:, col] = codes[records[:, col]]
            view.__dataset = Dataset(records, view._domain)
            view.__maps = {}
        view.__cache = {}
        view._cliques = {}
        view._sizes = {}
        view.__pool = None
        view._filter = self._filter
        view._rng = self._rng
        view._exact_rng = self._exact_rng
        view._integral = self._integral
        view._reads = 0
        return view

    # ------------------------------------------------------------------ charged releases
    def measure(self, attrs, sigma, *, discrete: bool | None = None) -> np.ndarray:
        """Noisy marginal on ``attrs``: M_r(D) + noise, flat in the domain's cell order.

        Privacy: Gaussian mechanism on a sensitivity-1 query, charged as
        ``GaussianEvent(sigma, 1)``: rho = 1 / (2 sigma^2) (AIM paper Prop. 1;
        proofs/gaussian.py). ``discrete=None`` (default) adds the exact discrete Gaussian when
        the counts are integers (no record weights) and float Gaussian noise otherwise;
        ``discrete=True`` insists on the exact noise (an error for weighted records),
        ``discrete=False`` asks for the float path. The discrete noise has variance parameter
        s^2 >= sigma^2 (``dpcore.accounting.noise.discrete_variance``), so its cost
        1/(2 s^2) is at most the charge (CKS 2020; proofs/discrete_gaussian.py,
        proofs/exact_sampling.py). The ledger's ``what["noise"]`` says which noise was used.
        The charge is made before the data is read; a refused charge raises
        ``BudgetExceededError`` and reads nothing.
        """
        clique = self._clique(attrs, "attrs")
        sigma = _positive_finite("sigma", sigma)
        if discrete is not None and not isinstance(discrete, (bool, np.bool_)):
            raise DpcoreTypeError(f"discrete must be True, False or None, got {type(discrete).__name__}")
        if discrete and not self._integral:
            raise InvalidArgumentError("discrete=True needs integer counts; the dataset has record weights")
        discrete = self._integral if discrete is None else bool(discrete)
        event = GaussianEvent(sigma, 1)
        self._charge(event, what={"release": "marginal", "attrs": list(clique),
                                         "noise": "discrete_gaussian" if discrete else "gaussian"})
        (true,) = self._read([clique])
        if discrete:
            return true + discrete_gaussian_noise(sigma, true.size, self._exact_rng).astype(np.float64)
        return true + gaussian_noise(sigma, true.size, self._rng)

    def measure_soft_count(self, scores: Mapping[str, Sequence[float]], threshold, sigma, *,
                           sharpness=5.0) -> float:
        """Noisy soft count: sum over records x of sigmoid(sharpness (sum_a scores[a][x_a] -
        threshold)) plus noise, sigmoid(t) = 1 / (1 + e^-t): a smoothed count of the records
        whose score, a public per-value score summed over the attributes of ``scores``, is
        above ``threshold`` (PrivPGD's protected statistic, Donhauser et al. 2024 Sec. 4.4 and
        App. B, with s = ``sharpness``). ``scores[a]`` holds one value per code of ``a``
        (|value| < 2^40); attributes not named add nothing.

        Privacy: every record adds a value in [0, 1], rounded to the nearest multiple of
        1/SOFT_COUNT_GRID (still in [0, 1]; a weighted record its weight w <= 1 times it), so
        adding or removing one record moves the sum by at most 1: L2 sensitivity 1, charged
        as ``GaussianEvent(sigma, 1)`` first. The sum is an exact integer in units of 1/G
        (G = SOFT_COUNT_GRID) with sensitivity G there; it gets the exact discrete Gaussian of
        parameter sigma G, costing G^2 / (2 s^2) <= 1 / (2 sigma^2) (CKS 2020 Thm. 4;
        proofs/soft_count.py). It reads records, so a curator over counted marginals (the
        stream and Dask engines) refuses it before charging.
        """
        # every public input is converted (the scalars first: a number's own conversion runs
        # caller code) and the score tables copied before they are checked, so nothing the
        # caller holds can change a checked value before the read
        threshold = _finite("threshold", threshold, _SCORE_LIMIT)
        sharpness = _positive_finite("sharpness", sharpness)
        sigma = _positive_finite("sigma", sigma)
        if not isinstance(scores, Mapping) or not scores:
            raise DpcoreTypeError("scores must be a non-empty mapping of attribute -> per-code scores")
        clique = self._clique(tuple(scores), "scores")
        tables = [None] * len(self._domain)
        for attr in clique:
            size = self._domain[attr]
            try:
                table = np.array(scores[attr], dtype=np.float64, copy=True)
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError(f"scores[{attr!r}] must be {size} real numbers") from exc
            if table.shape != (size,) or not np.all(np.isfinite(table)) or (
                    table.size and np.abs(table).max() >= _SCORE_LIMIT):
                raise InvalidArgumentError(f"scores[{attr!r}] must be {size} finite numbers "
                                           f"(one per code) below 2^40 in magnitude")
            codes = self.__maps.get(attr)     # a compressed view: scores of the merged codes
            tables[self._domain.attrs.index(attr)] = table if codes is None else table[codes]
        if sharpness > SOFT_COUNT_GRID:
            raise InvalidArgumentError(f"sharpness must be at most 2^20, got {sharpness}")
        if not math.isfinite(sigma * SOFT_COUNT_GRID):    # the noise's scale on the grid
            raise InvalidArgumentError(f"sigma must be below 2^1003 (its multiple on the 2^-20 "
                                       f"grid must be finite), got {sigma}")
        if not self.holds_records:
            raise InvalidArgumentError(
                "a soft count reads records, and this curator holds counted marginals only (the "
                "stream and Dask engines): use the in-memory engine")
        self._charge(GaussianEvent(sigma, 1), what={
            "release": "soft_count", "attrs": list(clique), "threshold": threshold,
            "sharpness": sharpness, "noise": "discrete_gaussian"})
        total = self._read_soft_count(tables, threshold, sharpness)
        noise = discrete_gaussian_noise(sigma * SOFT_COUNT_GRID, 1, self._exact_rng)
        return float(Fraction(total + int(noise[0]), SOFT_COUNT_GRID))

    def select(self, candidates, reference, epsilon, *, weights=None, penalties=None,
               among=None) -> int:
        """Exponential mechanism: index of one candidate, Pr[r] ∝ exp(ε q_r / (2Δ)), sampled
        exactly (``dpcore.accounting.level_sampler.level_exponential_mechanism``; builds before
        2026-11-26 drew the same law by uniform proposals, so a seed may select differently).

        q_r = w_r (||M_r(D) − reference_r||₁ − penalty_r) with public ``reference`` vectors
        (e.g. the current model's marginals: one per candidate, or one 1-D array holding them
        concatenated, which saves a conversion per candidate), weights w_r >= 0 (default 1)
        and penalties (default 0). The public inputs are first rounded to the grid 1/SCORE_GRID (rounding
        public values is post-processing of public values, so it costs nothing), and q_r is
        then computed exactly in integers. Sensitivity, exactly: adding or removing one record
        changes one cell of M_r(D) by 1 (integer counts, exact on the grid) or by its weight
        d <= 1 (weighted records; cells are floored onto the grid, and with G = SCORE_GRID,
        0 <= floor(G (x + d)) - floor(G x) <= ceil(G d) <= G), so
        ||M_r(D) − ref_r||₁ changes by at most 1 (triangle inequality) and q_r by at most the
        rounded w_r: Δ = max_r w_r over the *rounded* weights, which is what is charged
        (AIM paper Sec. 4, Eq. 1; proofs/exact_sampling.py). Weighted marginals are summed in
        float64 by the marginal kernel, exactly: the curator keeps record weights on the grid
        1/WEIGHT_GRID (floored when it is built).
        Privacy: ε²/8-zCDP (AIM paper Prop. 2; proofs/exponential_mechanism.py; the sampler's
        exactness: proofs/level_sampling.py), charged first.

        ``among`` (indices into ``candidates``, or a boolean mask over them): only these
        candidates compete. The release is exactly ``select([candidates[i] for i in among],
        ...)`` with the reference vectors, weights and penalties cut to them (Δ and the
        ledger's candidate count are the subset's), except that the index returned is into
        ``candidates``. For a caller drawing many times from subsets of one fixed list (MST's
        Kruskal): the list is checked, and its true cells read, once (remembered for the last
        list given), so a draw costs array arithmetic on the subset's cells, not Python per
        candidate. Every candidate of the list, competing or not, must have a valid reference,
        weight and penalty (the list is checked whole); the list is remembered only when its
        items are tuples. With ``among``, ``reference=None`` means the flat reference of the last
        draw made from this list (the curator keeps its own copy; a call refused before its
        charge does not replace it): a caller drawing against one fixed reference spares the
        curator comparing it cell by cell at every draw.
        """
        if among is not None:
            return self._select_among(candidates, reference, epsilon, weights, penalties, among)
        if reference is None:
            raise InvalidArgumentError("reference=None is only for select(among=...) after a "
                                       "flat reference was given with the same list")
        cliques = self._cliques_of(candidates, "candidates")
        if not cliques:
            raise InvalidArgumentError("candidates must hold at least one clique, got none")
        epsilon = _positive_finite("epsilon", epsilon)
        k = len(cliques)
        grid_w, top, delta = self._weights_grid(self._vector("weights", weights, k, 1.0))
        grid_pen = self._grid("penalties", self._vector("penalties", penalties, k, 0.0))
        sizes = np.fromiter(map(self._size, cliques), dtype=np.int64, count=k)
        reference = _plain(reference)
        if isinstance(reference, np.ndarray) and reference.ndim == 1:
            refs = self._grid_flat(reference, sizes)
        else:
            if len(reference) != k:
                raise InvalidArgumentError(f"reference must hold {k} vectors (one per candidate), got {len(reference)}")
            refs = self._grid_references(cliques, reference, sizes)
        event = ExponentialEvent(epsilon, delta)
        self._charge(event, what={"release": "selection", "candidates": len(cliques),
                                         "sensitivity": delta})
        trues = self._read(cliques)
        # Scores in units of 1/SCORE_GRID^2: Q_r = W_r (sum |C - R| - P_r), exact integers.
        scores = [wr * (l1 - pr) for l1, wr, pr in zip(_l1_many(trues, refs, sizes), grid_w, grid_pen)]
        # In those units the sensitivity is top * SCORE_GRID; the law is the same.
        return _draw(scores, epsilon, top * SCORE_GRID, self._exact_rng)

    def _weights_grid(self, w: np.ndarray) -> tuple[list, int, float]:
        """:meth:`_weights_grid_array` with the grid weights as Python ints."""
        grid_w, top, delta = self._weights_grid_array(w)
        return grid_w.tolist(), top, delta

    def _weights_grid_array(self, w: np.ndarray) -> tuple[np.ndarray, int, float]:
        """Checked weights on the score grid (int64), their maximum and the sensitivity Δ it
        gives (exact: a dyadic rational of < 53 bits)."""
        if w.min() < 0:
            raise InvalidArgumentError(f"weights must be >= 0, got min {w.min()}")
        grid_w = self._grid_array("weights", w)
        top = int(grid_w.max())
        if top <= 0:
            raise InvalidArgumentError(
                f"weights must have a maximum that rounds to >= 1/{SCORE_GRID} (the sensitivity), got {w.max()}")
        return grid_w, top, top / SCORE_GRID

    def _select_among(self, candidates, reference, epsilon, weights, penalties, among) -> int:
        """:meth:`select` with ``among``: the same checks, charge and scores on the subset.

        Every candidate's reference is checked (not only the subset's), so the scores of all
        of them can be computed in one pass after the first charge and kept with the list
        while the next call's flat reference is equal (MST passes the same one at each step).
        ``reference=None`` names the flat reference this list was last scored against (the
        curator's own copy, so it cannot have changed since: nothing to compare)."""
        pool = self._pool_of(candidates)
        k_all = len(pool.cliques)
        live = _indices("among", among, k_all)
        if not live.size:
            raise InvalidArgumentError("among must pick at least one candidate, got none")
        epsilon = _positive_finite("epsilon", epsilon)
        grid_w, top, delta = self._weights_grid_array(self._vector("weights", weights, k_all, 1.0)[live])
        grid_pen = self._grid_array("penalties", self._vector("penalties", penalties, k_all, 0.0)[live])
        reference = _plain(reference)
        flat = isinstance(reference, np.ndarray) and reference.ndim == 1
        if reference is None:
            if pool.reference is None:
                raise InvalidArgumentError(
                    "reference=None reuses the flat reference last given with this candidate "
                    "list, but none was given (pass the reference)")
            refs = None
        elif flat and pool.reference is not None and _equal(reference, pool.reference):
            refs = None                  # the L1 distances kept with the list still hold
        elif flat:
            # the curator's own copy first (kept for the next call's comparison), then checked
            # and scored: what is scored is what is kept, whatever the caller does meanwhile
            copy = pool.copy_reference(reference)
            refs = _Unrounded(copy) if copy is not None else self._grid_flat(reference, pool.sizes)
        else:
            if len(reference) != k_all:
                raise InvalidArgumentError(f"reference must hold {k_all} vectors (one per candidate), got {len(reference)}")
            refs = self._grid_references(pool.cliques, reference, pool.sizes)
        event = ExponentialEvent(epsilon, delta)
        self._charge(event, what={"release": "selection", "candidates": int(live.size),
                                         "sensitivity": delta})
        cells = self._read_cells(pool)
        if refs is not None:    # after the charge: the distances read the data
            pool.set_l1(_l1_pool(pool, cells, refs),
                        (refs.values if isinstance(refs, _Unrounded)
                         else np.array(reference, dtype=np.float64)) if flat else None)
        return int(live[_draw_among(pool, live, grid_w, grid_pen, epsilon, top * SCORE_GRID,
                                    self._exact_rng)])

    def _pool_of(self, candidates) -> _Pool:
        """The checked cliques and sizes of ``candidates``, remembered for the last list: a
        list of the very same tuple objects (immutable, so the same values) is not checked
        again."""
        items = candidates if isinstance(candidates, (list, tuple)) else list(candidates)
        pool = self.__pool
        if (pool is not None and len(pool.items) == len(items)
                and all(map(operator.is_, pool.items, items))):
            return pool
        cliques = self._cliques_of(items, "candidates")
        if not cliques:
            raise InvalidArgumentError("candidates must hold at least one clique, got none")
        pool = _Pool(tuple(items), cliques,
                     np.fromiter(map(self._size, cliques), dtype=np.int64, count=len(cliques)))
        if all(type(c) is tuple for c in items):
            self.__pool = pool      # tuples of checked names: immutable, safe to match by identity
        return pool

    def _read_cells(self, pool) -> np.ndarray:
        """THE sensitive read for a remembered candidate list: its true marginals on the score
        grid (floor(G c)), concatenated, read once per list. Call only after a charge."""
        if pool.cells is None:
            pool.cells = np.floor(np.concatenate(self._read(pool.cliques)) * SCORE_GRID)
        else:
            self._reads += 1
        return pool.cells

    def select_query(self, cliques, queries, epsilon, *, offsets=None, draws=None):
        """Exponential mechanism over single counting queries (FEM's query player, Vietri et
        al. 2020 Alg. 1): index of one row of ``queries``, Pr[i] ∝ exp(ε q_i / 2), sampled
        exactly.

        ``queries`` is an integer array of rows (j, y, s): marginal ``cliques[j]``, flat cell y
        (the domain's cell order), sign s = +1 (the cell's predicate) or -1 (its negation).
        With c = M_r(D)[y] and c̄ = Σ_{z≠y} M_r(D)[z] (the records outside the cell),
        q_i = s (c − c̄) − offset_i, public ``offsets`` (default 0) rounded to 1/SCORE_GRID.
        FEM puts offset_i = s n̂ (2 p̂_i − 1) (p̂_i the synthetic answer, n̂ a public count), so
        q_i = 2 (count error of the query or its negation) + a shift common to all i.
        Sampled by ``dpcore.accounting.level_sampler.level_exponential_mechanism`` (same law,
        O(k) NumPy work a draw; draws differ from the uniform-proposal sampler's for a seed).
        Sensitivity, exactly: adding or removing one record moves exactly one cell of M_r(D) by
        1 (or, weighted, its floor on the grid by at most SCORE_GRID units, as in
        :meth:`select`), so either c or c̄ moves, by at most 1, and q_i by at most 1: Δ = 1.
        The same scores are :meth:`select`'s L1 scores with reference 0 at y and R >= every
        count elsewhere (s = +1), or R at y and 0 elsewhere (s = -1), less a public penalty;
        this method computes them in O(cells) rather than O(cells²).
        Privacy: ε²/8-zCDP (proofs/exponential_mechanism.py; the sensitivity:
        proofs/fem_selection.py), charged first as ``ExponentialEvent(ε, 1)``, recorded as a
        "selection" release with sensitivity 1. ``draws``: a list of that many independent
        selections from the same scores (DQRS's fresh samples), each charged as one.
        """
        cliques, (j, y, s, sizes) = self._query_rows(cliques, queries)
        epsilon = _positive_finite("epsilon", epsilon)
        if draws is not None and (isinstance(draws, bool) or not isinstance(draws, (int, np.integer))
                                  or draws < 1):
            raise InvalidArgumentError(f"draws must be an int >= 1, got {draws!r}")
        k = len(j)
        grid_off = self._grid_array("offsets", self._vector("offsets", offsets, k, 0.0))
        event = ExponentialEvent(epsilon, 1)
        what = {"release": "selection", "candidates": k, "sensitivity": 1}
        if draws is not None and not self._filter.can_afford(SelfComposedEvent(event, int(draws))):
            # refused as a whole (the filter raises and records nothing), not after some draws
            self._charge(SelfComposedEvent(event, int(draws)), what=what)
        for _ in range(1 if draws is None else int(draws)):
            self._charge(event, what=what)
        trues = self._read(cliques)
        cells = [np.floor(t * SCORE_GRID) for t in trues]
        totals = [sum(c.tolist()) for c in cells]      # exact Python integers
        if max(totals) < 2 ** 61:
            start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            flat = np.concatenate(cells).astype(np.int64)
            scores = s * (2 * flat[start[j] + y] - np.array(totals, dtype=np.int64)[j]) - grid_off
            # the same law as exact_exponential_mechanism, without its ~k Python-level
            # proposals when a few queries hold the mass (dpcore.accounting.level_sampler)
            return level_exponential_mechanism(scores, epsilon, SCORE_GRID, self._exact_rng, size=draws)
        # 2^41 records or more: exact Python integers
        scores = [int(si) * (2 * int(cells[ji][yi]) - totals[ji]) - int(oi)
                  for ji, yi, si, oi in zip(j.tolist(), y.tolist(), s.tolist(), grid_off.tolist())]
        picks = [exact_exponential_mechanism(scores, epsilon, SCORE_GRID, self._exact_rng)
                 for _ in range(1 if draws is None else int(draws))]
        return picks[0] if draws is None else picks

    def reject_queries(self, cliques, queries, satisfied, eta, gamma, total) -> np.ndarray:
        """DQRS's rejection step (Vietri et al. 2020, Alg. 4 and Lemma 9): for each row i of
        ``queries`` (as :meth:`select_query` takes them), keep it with probability
        exp(-(η + γ) + η (min(c_i, n̂)/n̂ − satisfied_i)), c_i the count of records satisfying
        query i (the cell, or its complement for a negation), n̂ = ``total`` (public),
        ``satisfied_i`` in {0, 1} public (the query on the round's synthetic record). Returns
        the keep flags, each an exact Bernoulli(exp(−rational)) (CKS20 Alg. 1).

        Privacy: each flag is ε-DP with ε = (η/n̂) max(1, 1/γ): one record moves min(c_i, n̂)/n̂
        by at most 1/n̂, so the log keep-probability by at most a = η/n̂, and the exponent
        stays >= γ, where log(1 − e^−x) has slope 1/(e^x − 1) <= 1/γ, so the log reject-
        probability moves by at most a/γ (proofs/dqrs_rejection.py). Charged first as
        ``SelfComposedEvent(PureDPEvent(ε), k)``, recorded as a "rejection" release.
        """
        cliques, (j, y, s, sizes) = self._query_rows(cliques, queries)
        eta, gamma, total = (_positive_finite(n, v) for n, v in
                             (("eta", eta), ("gamma", gamma), ("total", total)))
        sat = np.asarray(satisfied)
        if sat.shape != j.shape or not np.isin(sat, (0, 1)).all():
            raise InvalidArgumentError(f"satisfied must hold one 0 or 1 per query ({len(j)}), "
                                       f"got shape {sat.shape}")
        k = len(j)
        eta_q, gamma_q, total_q = Fraction(eta), Fraction(gamma), Fraction(total)
        eps = eta_q / total_q * max(Fraction(1), 1 / gamma_q)
        self._charge(SelfComposedEvent(PureDPEvent(eps), k),
                     what={"release": "rejection", "coins": k, "eta": eta, "gamma": gamma,
                           "total": total})
        trues = self._read(cliques)
        cells = [np.floor(t * SCORE_GRID) for t in trues]
        totals = {ji: int(sum(int(v) for v in cells[ji].tolist())) for ji in set(j.tolist())}
        src = _Bits(self._exact_rng)
        keep = np.zeros(k, dtype=bool)
        for i, (ji, yi, si, ok) in enumerate(zip(j.tolist(), y.tolist(), s.tolist(), sat.tolist())):
            cell = int(cells[ji][yi])
            grid_count = cell if si > 0 else totals[ji] - cell
            share = min(Fraction(grid_count, SCORE_GRID), total_q) / total_q
            exponent = eta_q + gamma_q - eta_q * share + eta_q * int(ok)     # >= gamma > 0
            keep[i] = _bernoulli_exp(exponent.numerator, exponent.denominator, src)
        return keep

    def _query_rows(self, cliques, queries):
        """Checked cliques and query rows (j, y, s) with the marginals' sizes."""
        cliques = self._cliques_of(cliques, "cliques")
        if not cliques:
            raise InvalidArgumentError("cliques must hold at least one clique, got none")
        q = np.asarray(queries)
        if q.ndim != 2 or q.shape[1] != 3 or q.shape[0] == 0 or not np.issubdtype(q.dtype, np.integer):
            raise InvalidArgumentError(f"queries must be a non-empty k x 3 integer array, got shape {q.shape}")
        j, y, s = (q[:, col].astype(np.int64) for col in range(3))
        sizes = np.array([self._size(c) for c in cliques], dtype=np.int64)
        if j.min() < 0 or j.max() >= len(cliques):
            raise InvalidArgumentError(f"queries' marginal index must lie in [0, {len(cliques)})")
        if y.min() < 0 or np.any(y >= sizes[j]):
            raise InvalidArgumentError("queries' cell must lie in [0, size of its marginal)")
        if not np.all(np.abs(s) == 1):
            raise InvalidArgumentError("queries' sign must be +1 or -1")
        return cliques, (j, y, s, sizes)

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
            self._charge(ZCDPEvent(rest), what={"release": "none", "reason": str(reason)})
        return rest

    # ------------------------------------------------------------------ internals
    def _cliques_of(self, items, field) -> list:
        """:meth:`_clique` of each item; an error names the item as ``field[i]``. Known tuples
        are looked up first, so the field's name is formatted only for an item not seen yet."""
        known = self._cliques
        items = items if isinstance(items, (list, tuple)) else list(items)
        try:
            out = list(map(known.get, items))   # every item a known tuple: the common case
            if None not in out and all(type(attrs) is tuple for attrs in items):
                return out
        except TypeError:          # an unhashable item: the loop below names it
            pass
        out = []
        for i, attrs in enumerate(items):
            try:
                clique = known.get(attrs) if type(attrs) is tuple else None
            except TypeError:      # unhashable members: _clique refuses them, naming the item
                clique = None
            out.append(clique if clique is not None else self._clique(attrs, f"{field}[{i}]"))
        return out

    def _clique(self, attrs, field):
        # AIM passes the same thousands of candidate tuples every round: remember the valid ones.
        if type(attrs) is tuple:
            try:
                known = self._cliques.get(attrs)
            except TypeError:      # unhashable members: validated (and refused) below
                known = None
            if known is not None:
                return known
        if isinstance(attrs, str) or not isinstance(attrs, Sequence):
            raise DpcoreTypeError(f"{field} must be a sequence of attribute names, got {attrs!r}")
        unknown = [a for a in attrs if a not in self._domain]
        if unknown:
            raise InvalidArgumentError(f"{field} names attributes not in the domain: {unknown!r}")
        if not attrs or len(set(attrs)) != len(attrs):
            raise InvalidArgumentError(f"{field} must be distinct attribute names, got {tuple(attrs)!r}")
        clique = tuple(self._domain.canonical(attrs))
        if type(attrs) is tuple:
            self._cliques[attrs] = clique
        return clique

    def _size(self, clique) -> int:
        size = self._sizes.get(clique)
        if size is None:
            size = self._sizes[clique] = self._domain.size(clique)
        return size

    @staticmethod
    def _grid_flat(reference, sizes) -> np.ndarray:
        """A flat reference (the vectors concatenated), checked and rounded to the grid."""
        if reference.size != int(sizes.sum()):
            raise InvalidArgumentError(
                f"reference as one flat array must hold {int(sizes.sum())} values (the candidates' "
                f"cells, candidate after candidate), got {reference.size}")
        try:
            flat = reference.astype(np.float64, copy=False)    # read only below
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"reference must be numbers, got dtype {reference.dtype}") from exc
        if flat.size:
            # one pass for both checks where they pass (NaN and inf fail `<`); AIM grids
            # ~2.6M cells a round at 100 attributes
            top = max(float(flat.max()), -float(flat.min()))
            if top < _SCORE_LIMIT:
                scaled = flat * SCORE_GRID          # exact (a power of two), as _grid_array
                return np.rint(scaled, out=scaled).astype(np.int64)
        if not np.all(np.isfinite(flat)):
            raise InvalidArgumentError("reference must be finite values, got a NaN or infinity")
        return Curator._grid_array("reference", flat)

    def _grid_references(self, cliques, reference, sizes) -> np.ndarray:
        """The public reference vectors, checked and rounded to the grid, as one flat int64
        array (candidate after candidate). Checked as a whole; when a check fails, the
        per-vector loop runs to name the first bad vector exactly as it always has."""
        try:
            arrays = [np.asarray(ref, dtype=np.float64).ravel() for ref in reference]
            lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
            flat = np.concatenate(arrays)
            fine = (np.array_equal(lengths, sizes) and bool(np.isfinite(flat).all())
                    and (flat.size == 0 or float(np.abs(flat).max()) < _SCORE_LIMIT))
        except (TypeError, ValueError):
            fine = False
        if fine:
            return np.rint(flat * SCORE_GRID).astype(np.int64)
        refs = []
        for i, (clique, ref) in enumerate(zip(cliques, reference)):
            ref = np.asarray(ref, dtype=np.float64).ravel()
            if ref.size != self._domain.size(clique) or not np.all(np.isfinite(ref)):
                raise InvalidArgumentError(
                    f"reference[{i}] must be {self._domain.size(clique)} finite values, got {ref.size}")
            refs.append(self._grid_array(f"reference[{i}]", ref))
        return np.concatenate(refs)

    @staticmethod
    def _vector(name, values, k, default):
        if values is None:
            return np.full(k, default)
        v = np.asarray(values, dtype=np.float64).ravel()
        if v.size != k or not np.all(np.isfinite(v)):
            raise InvalidArgumentError(f"{name} must be {k} finite values, got {v.size}")
        return v

    @staticmethod
    def _grid(name, values) -> list[int]:
        """Public values rounded to the nearest multiple of 1/SCORE_GRID, as integer numerators."""
        return Curator._grid_array(name, values).tolist()

    @staticmethod
    def _grid_array(name, values) -> np.ndarray:
        if values.size and np.abs(values).max() >= _SCORE_LIMIT:
            raise InvalidArgumentError(f"{name} must be below 2^40 in magnitude, got {np.abs(values).max()}")
        return np.rint(values * SCORE_GRID).astype(np.int64)

    def _read(self, cliques):
        """THE sensitive read: exact marginals (flat, domain cell order). Call only after a charge."""
        self._reads += 1
        missing = [c for c in cliques if c not in self.__cache]
        if missing:
            for clique, factor in zip(missing, self.__dataset.marginals(missing)):
                self.__cache[clique] = self._coarsen(clique, factor.values)
        return [self.__cache[c] for c in cliques]

    def _read_soft_count(self, tables, threshold, sharpness) -> int:
        """THE sensitive read of :meth:`measure_soft_count`. Call only after a charge."""
        self._reads += 1
        return int(self.__dataset.soft_count(tables, threshold, sharpness, SOFT_COUNT_GRID))

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


def _draw(scores: list, epsilon, sensitivity, rng) -> int:
    """The exponential mechanism on exact integer ``scores``: the same law for the scores less
    their maximum, which the level sampler draws in O(k) NumPy work where the uniform
    proposals of exact_exponential_mechanism take ~k Python-level coin flips (a tenth of MST's
    CPU at 100 attributes). It needs int64 gaps; wider spreads go to the uniform proposals.
    Both are exact (proofs/exact_sampling.py, proofs/level_sampling.py)."""
    best, worst = max(scores), min(scores)
    if best - worst >= 2 ** 62:
        return exact_exponential_mechanism(scores, epsilon, sensitivity, rng)
    gaps = np.array([v - best for v in scores], dtype=np.int64)
    return level_exponential_mechanism(gaps, epsilon, sensitivity, rng)


def _draw_among(pool, live, grid_w, grid_pen, epsilon, sensitivity, rng) -> int:
    """``_draw`` on the scores ``grid_w * (l1[live] - grid_pen)`` of a remembered list, in int64
    array arithmetic where that is provably exact (every product and gap below 2^62 in
    magnitude, bounded from the maxima), else in Python integers as before. Either way the
    sampler gets the same integers, so the law and the draws are ``_draw``'s."""
    l1 = pool.l1_array
    if l1 is not None:
        # |w (l - p)| <= max|w| (max|l| + max|p|) < 2^61 keeps the scores and their gaps in int64
        bound = (int(np.abs(grid_w).max()) * (pool.l1_max + int(np.abs(grid_pen).max())))
        if bound < 2 ** 61:
            scores = grid_w * (l1[live] - grid_pen)
            best = int(scores.max())
            return level_exponential_mechanism(scores - best, epsilon, sensitivity, rng)
    return _draw([wr * (pool.l1[r] - pr) for r, wr, pr in
                  zip(live.tolist(), grid_w.tolist(), grid_pen.tolist())], epsilon, sensitivity, rng)


class _Unrounded:
    """A flat reference already checked finite and below _SCORE_LIMIT (the curator's copy),
    rounded to the grid only inside the score kernel (``_core.grid_l1``, np.rint's rounding)."""
    __slots__ = ("values",)

    def __init__(self, values: np.ndarray):
        self.values = values

    def rounded(self) -> np.ndarray:
        """The grid numerators, as :meth:`Curator._grid_flat` computes them."""
        scaled = self.values * SCORE_GRID
        return np.rint(scaled, out=scaled).astype(np.int64)


class _Pool:
    """A checked candidate list (``select(among=...)``): its items as given, canonical cliques,
    cell counts and, once read after a charge, its true cells on the score grid and their exact
    L1 distances to the last flat reference given (sensitive: kept inside the curator)."""
    __slots__ = ("items", "cliques", "sizes", "cells", "cells_int", "starts", "reference", "l1",
                 "l1_array", "l1_max", "spare")

    def __init__(self, items, cliques, sizes):
        self.items, self.cliques, self.sizes = items, cliques, sizes
        self.cells = None        # true cells on the grid, once read after a charge
        self.cells_int = None    # the same as int64 (when below the limit) and segment starts
        self.starts = None
        self.reference = None    # the last flat reference (a copy) and its exact L1 per candidate
        self.l1 = None
        self.l1_array = None     # the same L1s as int64 when all are below 2^62, and their max
        self.l1_max = None
        self.spare = None        # a buffer of the reference's size, not the kept reference

    def copy_reference(self, reference: np.ndarray):
        """A copy of a flat float64 ``reference`` of the pool's cell count, in a buffer this
        pool reuses (AIM hands ~2.6M cells a round at 100 attributes: a fresh copy a round is
        page faults), when every value is finite and below _SCORE_LIMIT; else None (the
        caller's checks then run on the reference and name what is wrong). The copy is not the
        kept reference until :meth:`set_l1` (a call refused at its charge keeps the old one)."""
        if reference.dtype != np.float64 or reference.size != int(self.sizes.sum()):
            return None
        from dpcore import _core
        buf = self.spare
        if (buf is None or buf.size != reference.size or buf is self.reference
                or np.may_share_memory(buf, reference)):
            buf = np.empty(reference.size, dtype=np.float64)
        self.spare = buf
        # the copy and its range check in one pass over the reference (a 1-D float64 array
        # of buf's size here; a non-contiguous one is read through a contiguous copy)
        if _core.copy_max_abs_finite(reference, buf) < _SCORE_LIMIT:
            return buf
        return None

    def set_l1(self, l1: list, reference):
        """Remember the exact L1 distances (Python ints) to ``reference`` (a copy, or None).
        The reference it replaces becomes the spare buffer of the next copy."""
        if reference is self.spare:
            self.spare = self.reference
        self.l1, self.reference = l1, reference
        self.l1_max = max(map(abs, l1))  # distances are >= 0; abs keeps the bound a bound
        self.l1_array = np.array(l1, dtype=np.int64) if self.l1_max < 2 ** 62 else None


def _plain(reference):
    """A reference array as a base-class ndarray (a view, no copy): the checks and scores
    below call its methods, so an ndarray subclass's own max/min/== (or a masked array's
    mask) must not answer for the values the scores are computed from."""
    if isinstance(reference, np.ndarray) and type(reference) is not np.ndarray:
        return np.asarray(reference).view(np.ndarray)
    return reference


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """``np.array_equal(a, b)``, answering no from the first cells where they differ there
    (AIM's references change every round: a full comparison of ~2.6M cells each time)."""
    if a.shape != b.shape or not np.array_equal(a[:64], b[:64]):
        return False
    return np.array_equal(a, b)


def _indices(name, among, k) -> np.ndarray:
    """``among`` as sorted distinct int64 indices into k candidates (a k-long boolean mask, or
    indices), or a typed error."""
    a = np.asarray(among)
    if a.dtype == bool:
        if a.shape != (k,):
            raise InvalidArgumentError(f"{name} as a mask must hold {k} booleans, got shape {a.shape}")
        return np.flatnonzero(a)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise InvalidArgumentError(f"{name} must be a boolean mask or 1-D integer indices, got {a.dtype} {a.shape}")
    a = a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= k):
        raise InvalidArgumentError(f"{name} must index the {k} candidates, got {a.min()}..{a.max()}")
    if a.size > 1 and not np.all(a[1:] > a[:-1]):
        raise InvalidArgumentError(f"{name} must be increasing distinct indices")
    return a


#: Record weights are floored onto multiples of 1/WEIGHT_GRID when a curator takes a weighted
#: dataset: a sum of fewer than 2^33 of them is then exact in float64 (2^33 * 2^20 < 2^53), so
#: a weighted count moves by exactly the added record's weight d <= 1 and its score-grid cell
#: by at most G (Curator.select). Audit 15: with raw float weights, 1 - 2^-53 plus 1 rounds to
#: 2.0, and the cell moved by G + 1.
WEIGHT_GRID = 2 ** 20


def _weights_on_grid(dataset, w: np.ndarray):
    """``dataset`` with its record weights floored onto 1/WEIGHT_GRID (the same dataset when
    they already are; a per-record map of the data, so neighbours stay neighbours)."""
    from dpcore.dataset import Dataset
    snapped = np.floor(w * WEIGHT_GRID) / WEIGHT_GRID
    if np.array_equal(snapped, w):
        return dataset
    if not isinstance(dataset, Dataset):
        raise InvalidArgumentError(f"dataset weights must be multiples of 1/{WEIGHT_GRID} for "
                                   f"exact weighted counts (a {type(dataset).__name__} is not "
                                   f"rebuilt here); floor them onto that grid first")
    return dataset._with_weights(snapped)


def _l1_many(trues, refs: np.ndarray, sizes: np.ndarray) -> list[int]:
    """``[_l1(floor(t * SCORE_GRID), ref_r) for each candidate r]``, with the grid references
    of all candidates in one flat array (``sizes`` cells each): one pass of array arithmetic
    instead of a few small NumPy calls per candidate. Exact: the int64 path is taken only where
    :func:`_l1` would take it (no cell at or above the limit, no sum that could overflow); any
    candidate outside it gets :func:`_l1` itself."""
    return _l1_cells(np.floor(np.concatenate(trues) * SCORE_GRID), refs, sizes)


def _l1_pool(pool, cells: np.ndarray, refs: np.ndarray) -> list[int]:
    """:func:`_l1_cells` for a remembered list, whose cells do not change: their int64 copy,
    the segment starts and the overflow limits are made once (AIM scores ~2.6M cells a round
    at 100 attributes). The same integers: where the int64 path does not hold, _l1_cells.
    ``refs`` as :class:`_Unrounded` are rounded and scored in one compiled pass (the same
    integers: np.rint's rounding, exact integer sums, a sum that could overflow int64 redone
    by :func:`_l1`)."""
    if pool.cells_int is None:
        if not cells.size or np.abs(cells).max() >= _SCORE_LIMIT * SCORE_GRID:
            return _l1_cells(cells, refs.rounded() if isinstance(refs, _Unrounded) else refs,
                             pool.sizes)
        pool.cells_int = cells.astype(np.int64)
        pool.starts = np.concatenate(([0], np.cumsum(pool.sizes)[:-1]))
    if isinstance(refs, _Unrounded):
        from dpcore import _core
        l1, overflow = _core.grid_l1(pool.cells_int, refs.values, float(SCORE_GRID), pool.sizes)
        sums = l1.tolist()
        for r in np.flatnonzero(overflow).tolist():
            s, n = int(pool.starts[r]), int(pool.sizes[r])
            sums[r] = _l1(cells[s:s + n], _Unrounded(refs.values[s:s + n]).rounded())
        return sums
    diff = pool.cells_int - refs                 # |cells| < 2^60 and |refs| < 2^60: no overflow
    np.abs(diff, out=diff)
    starts, sizes = pool.starts, pool.sizes
    sums = np.add.reduceat(diff, starts).tolist()
    if int(diff.max()) >= (2 ** 63 - 1) // int(sizes.max()):   # else no candidate is risky
        risky = np.flatnonzero(np.maximum.reduceat(diff, starts) >= (2 ** 63 - 1) // sizes)
        for r in risky.tolist():
            s, n = int(starts[r]), int(sizes[r])
            sums[r] = _l1(cells[s:s + n], refs[s:s + n])
    return sums


def _l1_cells(cells: np.ndarray, refs: np.ndarray, sizes: np.ndarray) -> list[int]:
    """:func:`_l1_many` on the true cells already on the grid and concatenated."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if cells.size and np.abs(cells).max() >= _SCORE_LIMIT * SCORE_GRID:
        return [_l1(cells[s:s + n], refs[s:s + n]) for s, n in zip(starts.tolist(), sizes.tolist())]
    diff = np.abs(cells.astype(np.int64) - refs)   # each < 2^61
    sums = np.add.reduceat(diff, starts).tolist()
    risky = np.flatnonzero(np.maximum.reduceat(diff, starts) >= (2 ** 63 - 1) // sizes)
    for r in risky.tolist():
        s, n = int(starts[r]), int(sizes[r])
        sums[r] = _l1(cells[s:s + n], refs[s:s + n])
    return sums


def _l1(cells: np.ndarray, ref: np.ndarray) -> int:
    """sum |cells - ref| exactly, for grid numerators (floats holding integers, int64 ref)."""
    if cells.size and np.abs(cells).max() >= _SCORE_LIMIT * SCORE_GRID:
        # A count of 2^40 records or more: exact Python integers instead of int64.
        return sum(abs(int(c) - int(r)) for c, r in zip(cells.tolist(), ref.tolist()))
    diff = np.abs(cells.astype(np.int64) - ref)  # each < 2^61
    if diff.size and int(diff.max()) >= (2 ** 63 - 1) // diff.size:
        return sum(diff.tolist())
    return int(diff.sum())
