"""AIM: an Adaptive and Iterative Mechanism (McKenna, Mullins, Sheldon, Miklau; "the AIM paper").

Implements Algorithm 4 with its subroutines Algorithm 2 (initialisation on the 1-way marginals
of the downward closure) and Algorithm 3 (budget annealing and the final-round rule), the
quality score of Eq. (1), the JT-SIZE capacity filter (line 13) and the uncertainty
quantification of Section 5 (see :mod:`mechanisms.aim_bounds`).

Privacy (Theorem 1): every data access goes through the curator, which charges the filter
before reading. Per-round parameters come from ``dpcore.accounting.calibration`` (costs a few
ulps below target, never above) and every budget quantity is an exact rational taken from the
filter, so the spend can be audited from the ledger alone (proofs/aim_budget.py). The
exponential mechanism uses Pr ∝ exp(ε q / (2Δ)) with Δ = max_{r ∈ C_t} w_r, costing ε²/8 (the
paper's Prop. 2).
"""
from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import numpy as np

from dpcore.accounting import ExponentialEvent, GaussianEvent, ZCDPAccountant
from dpcore.accounting.calibration import exponential_epsilon, gaussian_sigma
from dpcore.errors import InvalidArgumentError
from dpcore.inference import Measurement, check_first_step, estimate
from dpcore.junction_tree import JunctionTree

from . import coarsen
from .aim_bounds import RoundSummary, confidence_bounds
from .result import MechanismResult, RoundRecord, Timer, check_output, round_options, synthesize
from .workload import candidate_weights, downward_closure, make_workload, normalise_weights

_COST = ZCDPAccountant()
_EXPECTED_ABS = math.sqrt(2 / math.pi)  # E|N(0,1)|, AIM Theorem 5


def _round_cost(epsilon: float, sigma: float) -> Fraction:
    return Fraction(_COST.rho(ExponentialEvent(epsilon, 1))) + Fraction(_COST.rho(GaussianEvent(sigma, 1)))


def aim(curator, workload, *, max_model_size: float = 80.0, rounds: int | None = None,
        alpha=Fraction(9, 10), synthetic_rows: int | None = None, sample_method: str = "round",
        seed=None, confidence: float = 0.95, callback=None, estimate_options=None,
        round_iters: int = 70, round_window: int = 10, round_share: float = 0.0,
        first_step: float = 1024.0, round_refresh: bool = False, final_iters: int = 100,
        discrete: bool | None = None, zeros=(),
        derived=None) -> MechanismResult:
    """Run AIM (Algorithm 4) on the curator's data for a workload of weighted marginals.

    ``workload``: attribute tuples or ``(attrs, weight)`` pairs. ``max_model_size``: MAX-SIZE
    in MB (JT-SIZE, 8 bytes a cell). ``rounds``: T, default 16 d. ``alpha``: the share of each
    round's budget spent on measurement (0.9 = the paper's 10 %/90 % select/measure split).
    ``seed`` fixes synthetic sampling (the curator's seed fixes the noise). ``callback`` gets a
    :class:`RoundRecord` after each round. The whole remaining budget of the curator's filter is
    spent; the result's ``confidence_bounds`` holds Sec. 5's bounds at level ``confidence`` for
    every marginal in the downward closure of the workload. ``estimate_options`` go to
    :func:`dpcore.inference.estimate`; each round's refit (warm-started from the last model)
    stops after at most ``round_iters`` iterations, since selection needs only the model's
    shape (post-processing: no effect on privacy), and the final model is refit (at most
    ``final_iters`` iterations, and within ``estimate_options``) after the last round. Every fit takes a first step of ``first_step`` / L (the smoothness
    bound is a worst case; an accepted momentum step never grows the step, so from 1/L the
    refits crawled): 70 such iterations reach the loss 250 from 1/L reached (replayed AIM
    refits, bench/results/aim_scaling.md), so the model moves about as far per round and the
    annealing (Alg. 3) fires as before. The final fit stops after ``final_iters`` (error flat
    from 50 to 200 there). ``round_refresh``: start each refit with one IPF step onto the new
    measurement (``estimate``'s ``refresh``); ``round_share`` > 0: stop a refit once its
    last ``round_window`` iterations took off at most that share of its decrease
    (:func:`_round_stop`). Both make the refits converge further, so the chosen marginal moves
    more, annealing fires later and AIM runs more rounds (measured: twice as many, same
    error, no faster): off by default.
    ``discrete`` goes to :meth:`Curator.measure` (None: the exact
    discrete Gaussian for integer counts; the bounds then rest on its sub-Gaussian tails).
    ``zeros``: public structural zeros (:class:`dpcore.inference.StructuralZero`, e.g. a
    schema's forbidden cells): every model is fit with zero mass on them, so each zero's
    attributes are a model clique from the start, counted in JT-SIZE like a measured clique
    (public, so it costs nothing and changes no release's sensitivity).
    ``derived``: ``{child: (parent, table)}``, columns of the curator's data that are public
    functions of another (``table[parent code] = child code``). The model omits them; a
    marginal holding one is measured from the data like any other and fit as a coarsening of
    its parent's marginal (:mod:`mechanisms.coarsen`), and the synthetic records are on the
    model's columns (the caller regenerates the children). ``zeros`` are over those columns.
    """
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, sample_method, seed)
    derived = dict(derived or {})
    model_domain = domain.project([a for a in domain.attrs if a not in derived])
    work = make_workload(domain, workload)
    if not work:
        raise InvalidArgumentError("workload must name at least one marginal, got an empty workload")
    alpha = Fraction(alpha)
    if not 0 < alpha < 1:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    if not (isinstance(max_model_size, (int, float)) and max_model_size > 0):
        raise InvalidArgumentError(f"max_model_size must be > 0 MB, got {max_model_size!r}")
    T = 16 * len(domain) if rounds is None else int(rounds)
    if T < len(domain):
        raise InvalidArgumentError(f"rounds must be >= the number of attributes {len(domain)} (Theorem 1), got {T}")
    rho = Fraction(curator.privacy_filter.remaining)
    if rho <= 0:
        raise InvalidArgumentError(f"the privacy filter has no budget left, remaining = {rho}")
    if isinstance(final_iters, bool) or not isinstance(final_iters, int) or final_iters < 1:
        raise InvalidArgumentError(f"final_iters must be an int >= 1, got {final_iters!r}")
    if isinstance(round_window, bool) or not isinstance(round_window, int) or round_window < 1:
        raise InvalidArgumentError(f"round_window must be an int >= 1, got {round_window!r}")
    if not (isinstance(round_share, (int, float)) and 0 <= round_share < 1):
        raise InvalidArgumentError(f"round_share must be a number in [0, 1), got {round_share!r}")
    check_first_step(first_step)
    options = dict(estimate_options or {})
    zeros = list(zeros)
    if zeros:
        options["zeros"] = zeros
    options.setdefault("first_step", first_step)
    per_round = round_options(options, round_iters)
    fixed = [z.attrs for z in zeros]   # cliques the model holds whatever is measured

    candidates = downward_closure([c for c, _ in work])
    # a marginal holding a derived column and its parent is a function of the parent's one
    candidates = [r for r in candidates if coarsen.base(r, derived) is not None]
    bases = {r: coarsen.base(r, derived) for r in candidates}      # model attributes
    queries = {r: coarsen.query(r, derived, domain, model_domain) for r in candidates}

    def project(model, cliques):
        """The model's marginals on ``cliques`` (data-domain cells: coarsened when derived)."""
        # pairs across cliques by one pass per source attribute (equal up to rounding): at
        # 100 attributes the per-pair eliminations were most of AIM's time
        out = model.project_values([bases[r] for r in cliques], by_source=True)
        return [v if queries[r] is None else queries[r] @ v for r, v in zip(cliques, out)]
    weights = dict(zip(candidates, candidate_weights(candidates, normalise_weights(work))))
    sizes = {r: domain.size(r) for r in candidates}
    cell_counts = np.array([sizes[r] for r in candidates], dtype=np.int64)
    cell_list = cell_counts.tolist()
    zero_cells = np.zeros(max(cell_list, default=0))   # read only: the cells of a candidate left out
    all_weights = np.array([weights[r] for r in candidates], dtype=np.float64)
    # JT-SIZE of the model each candidate's base would make, with the rule cliques it holds
    all_bases = [bases[r] for r in candidates]
    jt_sizes = JTSizes(model_domain, all_bases)
    for clique in fixed:
        jt_sizes.add(clique)
    # The plan checked the first round on the data's columns; the model also holds the rule
    # cliques and fits derived columns on their parents: check again before the first charge.
    if zeros or derived:
        if not first_round_pool(model_domain, [bases[r] for r in candidates], rho, T, alpha,
                                max_model_size, fixed):
            raise InvalidArgumentError(
                f"max_model_size {max_model_size:g} MB is too small: AIM's first round would "
                f"have no candidate (the 1-way model with the schema's rule cliques does not "
                f"fit the round's share of it)")
    measurements: list[Measurement] = []
    records: list[RoundRecord] = []

    def log(record):
        records.append(record)
        if callback is not None:
            callback(record)

    # Algorithm 2: measure the 1-way marginals of W_+ at sigma_0 = sqrt(T / (2 alpha rho)).
    sigma = gaussian_sigma(alpha * rho / T)
    for r in (c for c in candidates if len(c) == 1):
        start = time.perf_counter()
        before = curator.privacy_filter.spent
        y = curator.measure(r, sigma, discrete=discrete)
        measurements.append(Measurement(bases[r], y, sigma, query=queries[r]))
        jt_sizes.add(bases[r])
        timer.add("measure", time.perf_counter() - start)
        log(RoundRecord(len(records), "measure", r, sigma, None, None, 0,
                        Fraction(curator.privacy_filter.spent - before), time.perf_counter() - start))
    start = time.perf_counter()
    model = estimate(model_domain, measurements, **per_round).model
    timer.add("estimate", time.perf_counter() - start)

    epsilon = exponential_epsilon((1 - alpha) * rho / T)
    summaries: list[RoundSummary] = []
    last = _LastReferences(cell_counts)
    final = False
    if Fraction(curator.privacy_filter.remaining) <= 2 * _round_cost(epsilon, sigma):   # Alg. 3 line 8
        epsilon, sigma = _final_parameters(curator, alpha)
        final = True
    while True:
        start = time.perf_counter()
        remaining = Fraction(curator.privacy_filter.remaining)
        used_after = rho - remaining + _round_cost(epsilon, sigma)  # line 12: counts this round
        limit = float(used_after / rho) * max_model_size
        fits = np.array(jt_sizes.sizes_mb()) <= limit
        live = np.flatnonzero(fits)
        pool = [candidates[i] for i in live.tolist()]
        w = all_weights[live]
        before = curator.privacy_filter.spent
        # The pool as a subset of the fixed candidate list (Curator.select's `among`: the list
        # is checked and its cells read once). Only the pool competes; the others' cells get a
        # zero reference, scored inside the curator (after the charge) but never drawn.
        # every candidate's cells in list order (a pool candidate's reference is its slice)
        if live.size == len(candidates) and not derived:
            # every candidate: the model's marginals in one vector (project's numbers, bit for
            # bit), laid out as the candidate list (its starts are cell_counts' offsets)
            flat, _ = model.project_flat(all_bases, by_source=True)
        elif live.size == len(candidates):
            flat = np.concatenate(project(model, pool))
        else:   # in list order, views of one zero buffer between (a third cheaper than a mask)
            given = iter(project(model, pool))
            flat = np.concatenate([next(given) if f else zero_cells[:n]
                                   for f, n in zip(fits.tolist(), cell_list)])
        index = int(np.searchsorted(live, curator.select(
            candidates, flat, epsilon, weights=all_weights, penalties=_EXPECTED_ABS * sigma * cell_counts,
            among=fits)))
        chosen = pool[index]
        timer.add("select", time.perf_counter() - start)
        last.record(len(summaries), live, flat)
        reference = last.slice(flat, int(live[index]))

        t_measure = time.perf_counter()
        y = curator.measure(chosen, sigma, discrete=discrete)
        measurements.append(Measurement(bases[chosen], y, sigma, query=queries[chosen]))
        jt_sizes.add(bases[chosen])
        timer.add("measure", time.perf_counter() - t_measure)
        summaries.append(RoundSummary(chosen, sigma, epsilon, float(w.max()), len(pool), float(weights[chosen]),
                                      float(np.abs(reference - y).sum())))

        t_est = time.perf_counter()
        # the refit starts from the last model moved onto the new measurement (one IPF step;
        # a derived marginal is fit through its query and keeps the plain warm start)
        refresh = [bases[chosen]] if round_refresh and queries[chosen] is None else []
        model = estimate(model_domain, measurements, warm_start=model, refresh=refresh,
                         **{**per_round, **_round_stop(per_round, round_window, round_share)}).model
        timer.add("estimate", time.perf_counter() - t_est)
        log(RoundRecord(len(records), "select+measure", chosen, sigma, epsilon, float(w.max()), len(pool),
                        Fraction(curator.privacy_filter.spent - before), time.perf_counter() - start))
        if final:
            break
        # Algorithm 3, lines 1-7: anneal when the model barely moved on the chosen marginal.
        moved = float(np.abs(project(model, [chosen])[0] - reference).sum())
        if moved <= _EXPECTED_ABS * sigma * sizes[chosen]:
            epsilon, sigma = 2 * epsilon, sigma / 2
        # Lines 8-11: if two more rounds would not fit, spend exactly what is left in one.
        if Fraction(curator.privacy_filter.remaining) <= 2 * _round_cost(epsilon, sigma):
            epsilon, sigma = _final_parameters(curator, alpha)
            final = True
    retired = curator.retire("AIM final-round calibration residue")
    start = time.perf_counter()
    model = estimate(model_domain, measurements, warm_start=model,
                     **round_options(options, final_iters)).model
    timer.add("estimate", time.perf_counter() - start)

    start = time.perf_counter()
    synthetic = synthesize(model, synthetic_rows, sample_method, seed)
    timer.add("generate", time.perf_counter() - start)

    start = time.perf_counter()
    on_data = synthetic
    if derived:   # the bounds read the synthetic marginals on data-domain cliques
        from dpcore.dataset import Dataset
        on_data = Dataset(coarsen.expand_records(np.asarray(synthetic.records), derived, domain,
                                                 model_domain), domain)
    bounds = confidence_bounds(domain, candidates, weights, measurements, summaries, last.mapping(candidates),
                               on_data, confidence)
    timer.add("bounds", time.perf_counter() - start)
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records), timer.done(),
                           {"confidence_bounds": bounds, "workload": work, "retired_rho": retired,
                            "rounds_run": len(summaries)})


class _LastReferences:
    """Each candidate's last reference (the model's marginal when it was last in the pool) and
    that round, for the bounds (Sec. 5): kept as the rounds' flat vectors (candidate list
    layout) and each candidate's last round, not as ~5,000 views a round in a dict (at 100
    attributes that loop was a tenth of a second a run). A round's vector is dropped once no
    candidate's last round is that round."""

    def __init__(self, cell_counts: np.ndarray):
        self._cells = cell_counts
        self._starts = np.concatenate(([0], np.cumsum(cell_counts)[:-1])).astype(np.int64)
        self._round = np.full(len(cell_counts), -1, dtype=np.int64)
        self._flats: dict = {}

    def record(self, t: int, live: np.ndarray, flat: np.ndarray) -> None:
        """Round ``t`` gave the candidates ``live`` (indices) their references in ``flat``."""
        self._round[live] = t
        self._flats[t] = flat
        held = set(np.unique(self._round).tolist())
        for old in [u for u in self._flats if u not in held]:
            del self._flats[old]

    def slice(self, flat: np.ndarray, i: int) -> np.ndarray:
        """Candidate ``i``'s cells in a flat vector of the list's layout (a view)."""
        s = int(self._starts[i])
        return flat[s:s + int(self._cells[i])]

    def mapping(self, candidates) -> dict:
        """``{candidate: (round, reference)}`` for every candidate some round's pool held."""
        return {candidates[i]: (t, self.slice(self._flats[t], i))
                for i, t in enumerate(self._round.tolist()) if t >= 0}


class JTSizes:
    """JT-SIZE of the model each candidate would make (Alg. 4 line 13), kept across rounds.

    ``sizes_mb()[i]`` is ``JunctionTree(domain, added + [candidates[i]]).size_mb`` for the
    cliques ``added`` so far. The junction tree is a function of the graph the cliques draw
    (an edge between attributes that share a clique), not of the cliques themselves, so the
    sizes stay valid while no added clique brings a new edge — AIM re-measuring a clique it
    has measured, or a 1-way marginal.

    When the graph grows, only the candidates touching a connected component that a new edge
    touches are recomputed (one compiled call); every other candidate's size moves by the
    model's own change. Why: the greedy triangulation eliminates, at each step, the attribute
    of least (cost, index), and an attribute's cost reads only its own component, so the
    steps taken inside one component are the steps of that component run alone; the tree's
    cells are the sum over components of the component's own cells. A candidate that touches
    none of the components the new edges touch adds the same term before and after, and the
    new edges change the same components with or without it. (Across several additions the
    touched components accumulate; the differences telescope.) The sizes are multiples of
    2**-17 MB (8-byte cells in 2**20-byte MB), so below 2**33 MB these differences are exact
    in a double; beyond that everything is recomputed.
    """

    _EXACT_MB = 2.0 ** 33

    def __init__(self, domain, candidates):
        self._domain = domain
        # a tuple of tuples: the junction tree remembers its checked ids across rounds
        self._candidates = tuple(tuple(c) for c in candidates)
        self._cliques: list = []
        self._edges: set = set()
        self._sizes: list[float] | None = None
        # union-find over attributes (roots map to their component's members)
        self._root: dict = {}
        self._members: dict = {}
        # the last sizes computed, the model's size then, and the attributes whose
        # components new edges have touched since
        self._known: np.ndarray | None = None
        self._known_base = 0.0
        self._touched: set = set()
        index = {a: i for i, a in enumerate(domain.attrs)}
        self._index = index
        self._holds = np.zeros((len(self._candidates), len(domain.attrs)), dtype=bool)
        for i, c in enumerate(self._candidates):
            for a in c:
                if a in index:
                    self._holds[i, index[a]] = True

    def _find(self, a):
        root = self._root.get(a, a)
        while root != a:
            a, root = root, self._root.get(root, root)
        return root

    def add(self, clique) -> None:
        clique = tuple(clique)
        self._cliques.append(clique)
        new = {frozenset(e) for e in itertools.combinations(clique, 2)} - self._edges
        if new:
            self._edges |= new
            self._sizes = None
            for e in new:
                if len(e) < 2:   # an attribute repeated within the clique: no edge
                    continue
                a, b = tuple(e)
                ra, rb = self._find(a), self._find(b)
                self._touched |= self._members.get(ra, {ra}) | self._members.get(rb, {rb})
                if ra != rb:
                    self._members[ra] = self._members.pop(ra, {ra}) | self._members.pop(rb, {rb})
                    self._root[rb] = ra

    def sizes_mb(self) -> list[float]:
        if self._sizes is None:
            tree = JunctionTree(self._domain, self._cliques)
            base = tree.size_mb
            known = self._known
            if (known is None or not (abs(self._known_base) < self._EXACT_MB)
                    or not (abs(base) < self._EXACT_MB)
                    or not np.all(np.abs(known) < self._EXACT_MB)
                    or not all(a in self._index for a in self._touched)):
                sizes = np.array(tree.hypothetical_sizes_mb(self._candidates), dtype=np.float64)
            else:
                cols = [self._index[a] for a in self._touched]
                stale = np.flatnonzero(self._holds[:, cols].any(axis=1))
                sizes = known + (base - self._known_base)
                if stale.size:
                    sizes[stale] = tree.hypothetical_sizes_mb(self._candidates, stale.tolist())
            self._known, self._known_base = sizes, base
            self._touched = set()
            self._sizes = sizes.tolist()
        return self._sizes


def first_round_pool(domain, candidates, rho: Fraction, rounds: int, alpha: Fraction,
                     max_model_size: float, fixed=()) -> list:
    """The candidates AIM's first selection may choose from (JT-SIZE, line 13), computed from
    public quantities exactly as :func:`aim` computes them, before anything is spent.

    Every later round's pool contains the cliques already measured (their hypothetical size is
    the current size, which fitted the previous, smaller limit), so a non-empty first pool
    means no round runs out of candidates: what the plan step checks
    (:func:`mechanisms.plan.plan_aim`), and :func:`aim` again before its first charge with
    the model's own cliques (``fixed``: the structural zeros' attributes, held from the start;
    candidates as the model attributes they are fit on).
    """
    sigma = gaussian_sigma(alpha * rho / rounds)
    oneway = [c for c in candidates if len(c) == 1]
    spent = len(oneway) * Fraction(_COST.rho(GaussianEvent(sigma, 1)))
    epsilon = exponential_epsilon((1 - alpha) * rho / rounds)
    if rho - spent <= 2 * _round_cost(epsilon, sigma):   # Alg. 3 line 8: one final round
        epsilon = exponential_epsilon((1 - alpha) * (rho - spent))
        sigma = gaussian_sigma(rho - spent - Fraction(_COST.rho(ExponentialEvent(epsilon, 1))))
    used_after = spent + _round_cost(epsilon, sigma)
    limit = float(used_after / rho) * max_model_size
    tree = JunctionTree(domain, oneway + list(fixed))
    return [r for r, mb in zip(candidates, tree.hypothetical_sizes_mb(candidates)) if mb <= limit]


def _final_parameters(curator, alpha: Fraction) -> tuple[float, float]:
    """Algorithm 3, lines 9-10: ε = √(8(1−α)R), σ = √(1/(2αR)) for the exact remainder R.

    The measurement gets whatever the selection's calibrated ε leaves (≥ αR), so the round
    spends R up to the calibration's few-ulp residue, which the caller retires.
    """
    remaining = Fraction(curator.privacy_filter.remaining)
    epsilon = exponential_epsilon((1 - alpha) * remaining)
    rest = remaining - Fraction(_COST.rho(ExponentialEvent(epsilon, 1)))
    return epsilon, gaussian_sigma(rest)


def _round_stop(options: dict, window: int, share: float) -> dict:
    """A round's refit stops once its last ``window`` iterations took off at most ``share``
    of what the refit has taken off so far (a relative test: the rounds' losses span orders
    of magnitude), or at the ``round_iters`` cap. Returned as ``estimate``'s callback, after
    any callback of the caller's ``estimate_options`` (which may still stop it)."""
    given = options.get("callback")
    history: list[float] = []

    def stop(iteration: int, loss: float) -> bool:
        history.append(loss)
        if given is not None and given(iteration, loss):
            return True
        if len(history) <= window:
            return False
        return history[-1 - window] - loss <= share * (history[0] - loss)
    return {"callback": stop}
