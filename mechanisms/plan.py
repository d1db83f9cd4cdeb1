"""The plan step: every argument and every size a run will need, checked before any budget is spent.

A run charges its privacy filter step by step; an error after the first charge wastes budget
that can never be recovered. So each mechanism has a planner here that takes only public
inputs (the domain, the budget, the options) and either returns a frozen :class:`Plan` (the
validated options the mechanism runs with) or raises :class:`InvalidArgumentError` naming the
argument and the rule. :meth:`mechanisms.synthesizer.Synthesizer.fit_codes` calls it before it
creates the filter (and so before a ledger file exists), and the CLI calls it before it reads
the data.

What is checked, and the limits (all public):

* **Marginal tables.** The counting kernel refuses a batch of tables with more than
  :func:`cell_cap` cells in total (``dpcore._core.max_table_cells()``, 2^30 by default, 8 bytes a
  cell, at most 2^32 - 1: its cell indices are 32-bit) with ``TableTooLargeError``. Each
  mechanism's largest batch is bounded from the domain: MST's first private Kruskal step reads
  every attribute pair at once; an AIM or MWEM selection reads its uncached candidates at once,
  and every candidate it can pool fits ``max_model_size`` on its own.
* **Model size.** ``max_model_size`` (MB of 2^20 bytes, 8 bytes a cell) must be finite, > 0 and at
  most :func:`model_ceiling_mb` (a junction tree no larger than the cell cap), and the first
  round must have a candidate: AIM's first pool (:func:`mechanisms.aim.first_round_pool`) is
  non-empty, MWEM's smallest workload marginal fits. Later pools then never empty (they hold
  the cliques already measured). MWEM without a cap runs with the ceiling as its cap.
* **Schema rules.** A forbidden rule over several columns is a model clique of AIM, MWEM and
  MST (a structural zero, :func:`dpcore.constraints.zero_cliques`; ``fixed`` below): each must
  fit the cell cap (its mask is built whole), and AIM's and MWEM's first pool is computed with
  those cliques in the model, as the mechanisms compute it (an AIM schema with derived columns
  also fits them on their parents, ``derived``). MST's model joins them to a spanning tree chosen
  from the data (on the compressed domain): only the cliques themselves are sized here.
* **Rounds.** An int in [1, :func:`max_rounds`] (AIM: at least the column count, Theorem 1).
* **Workload.** Known columns, weights finite, >= 0 and not all 0 (``make_workload``).
* **Rows.** ``rows`` synthetic records of d columns: an int >= 1 with rows x d <= :func:`cell_cap`
  (the sampler holds an int64 array of that shape).
* **Seed.** None or an int in [0, 2^64): the junction-tree sampler's seed is a uint64.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from functools import partial
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from dpcore.errors import InvalidArgumentError

from .workload import downward_closure, make_workload

SEED_LIMIT = 2 ** 64
# AIM and MWEM: every round is a private selection over the candidates plus a model refit
# (milliseconds on the smallest domains), and the per-round noise grows as sqrt(T). Past
# 10^4 rounds (or AIM's default 16 d, if larger) a run takes hours and its measurements are
# noise; a larger T is almost certainly a typo (--rounds 1e8), refused before any charge.
MAX_ROUNDS = 10_000
_BYTES_PER_CELL = 8
_MB = 2 ** 20
_AIM_ALPHA = Fraction(9, 10)


@dataclass(frozen=True)
class Plan:
    """A run that is known to be feasible: the options the mechanism function gets
    (``options``, keyword arguments), the synthetic row count and the largest marginal batch
    (in cells) the run may ask the counting kernel for."""

    mechanism: str
    rho: Fraction
    options: Mapping[str, Any] = field(default_factory=dict)
    rows: int | None = None
    seed: int | None = None
    largest_batch_cells: int = 0


def cell_cap() -> int:
    """The most cells one counting batch (or one dense table) may have: the kernel's cap."""
    from dpcore import _core
    return min(int(_core.max_table_cells()), int(_core.MAX_CELLS_LIMIT))


def model_ceiling_mb() -> float:
    """The largest ``max_model_size`` (MB) accepted: a junction tree of :func:`cell_cap` cells."""
    return cell_cap() * _BYTES_PER_CELL / _MB


def max_rounds(columns: int) -> int:
    """Upper bound on AIM's T and MWEM's rounds (see ``MAX_ROUNDS``)."""
    return max(MAX_ROUNDS, 16 * columns)


def check_seed(seed) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidArgumentError(f"seed must be an int in [0, 2**64) or None, got {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise InvalidArgumentError(f"seed must be in [0, 2**64), got {seed}")
    return int(seed)


def check_rows(rows, columns: int, name: str = "rows") -> int | None:
    """``rows`` synthetic records of ``columns`` columns: None (the model's noisy total) or an
    int >= 1 whose table (8 bytes a cell) fits the cell cap; errors name the option ``name``."""
    if rows is None:
        return None
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral):
        raise InvalidArgumentError(f"{name} must be an int >= 1 or None, got {rows!r}")
    rows = int(rows)
    if rows < 1:
        raise InvalidArgumentError(f"{name} must be >= 1, got {rows}")
    limit = cell_cap() // max(columns, 1)
    if rows > limit:
        raise InvalidArgumentError(f"{name} must be <= {limit} for {columns} columns (rows x "
                                   f"columns <= the cell cap {cell_cap()}, 8 bytes a cell), "
                                   f"got {rows}")
    return rows


def _check_rounds(rounds, columns: int, least: int) -> int:
    top = max_rounds(columns)
    if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or not (
            least <= rounds <= top):
        raise InvalidArgumentError(f"rounds must be an int in [{least}, {top}] "
                                   f"(at most {top}: see mechanisms.plan.MAX_ROUNDS), "
                                   f"got {rounds!r}")
    return int(rounds)


def _check_model_size(value) -> float:
    ceiling = model_ceiling_mb()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            math.isfinite(float(value)) and 0 < float(value) <= ceiling):
        raise InvalidArgumentError(f"max_model_size must be > 0 and <= {ceiling:g} MB (a junction "
                                   f"tree within the cell cap), got {value!r}")
    return float(value)


def _mb(cells: int) -> float:
    return cells * _BYTES_PER_CELL / _MB


def _check_batch(cells: int, what: str, advice: str) -> int:
    cap = cell_cap()
    if cells > cap:
        raise InvalidArgumentError(f"{what} needs up to {cells} cells of marginal tables at once, "
                                   f"above the cell cap {cap} (8 bytes a cell); {advice}")
    return cells


def _largest_oneway(domain) -> int:
    return max((domain.size((a,)) for a in domain.attrs), default=1)


def _workload(domain, workload):
    work = make_workload(domain, workload)
    if not work:
        raise InvalidArgumentError("workload must name at least one marginal, got an empty "
                                   "workload")
    return work


def plan_aim(domain, rho, *, workload="all-3way", max_model_size=80.0, rounds=None,
             rows=None, seed=None, fixed=(), derived=None) -> Plan:
    """AIM (``mechanisms.aim.aim``) on ``domain`` with budget ``rho``, checked (module docstring).
    ``fixed``: the model cliques the schema's rules force; ``derived``: ``{child: (parent,
    table)}`` for derived columns of ``domain`` (fit on their parents)."""
    from .aim import first_round_pool
    d, rho = len(domain), Fraction(rho)
    work = _workload(domain, workload)
    size = _check_model_size(max_model_size)
    T = 16 * d if rounds is None else _check_rounds(rounds, d, d)
    candidates = downward_closure([c for c, _ in work])
    fixed = _check_fixed(domain, fixed)
    if fixed or derived:    # the model's own columns and cliques, as aim() checks them
        from . import coarsen
        derived = dict(derived or {})
        model_domain = domain.project([a for a in domain.attrs if a not in derived])
        bases = [b for b in (coarsen.base(r, derived) for r in candidates) if b is not None]
        pool = first_round_pool(model_domain, bases, rho, T, _AIM_ALPHA, size, fixed)
    else:
        pool = first_round_pool(domain, candidates, rho, T, _AIM_ALPHA, size)
    if not pool:
        rules = " with the schema's rule cliques" if fixed else ""
        raise InvalidArgumentError(f"max_model_size {size:g} MB is too small: AIM's first round "
                                   f"would have no candidate (the 1-way model{rules} does not "
                                   f"fit the round's share of it)")
    # a round's pool (1-ways and the marginals that fit the model) is projected into one
    # vector and its true marginals read in one batch; the confidence bounds read every
    # candidate, in batches under the cap, so each must fit alone (review 15: a pool at the
    # cap failed after the charges)
    poolable = [r for r in candidates if len(r) == 1 or _mb(domain.size(r)) <= size]
    batch = max(_largest_oneway(domain), sum(domain.size(r) for r in poolable),
                max((domain.size(r) for r in candidates), default=1))
    _check_batch(batch, "an AIM selection", "lower --max-model-size or use a smaller workload")
    options = {"workload": work, "max_model_size": size, "rounds": T}
    return Plan("aim", rho, MappingProxyType(options), check_rows(rows, d), check_seed(seed),
                batch)


def _check_fixed(domain, fixed) -> list[tuple[str, ...]]:
    """The rule cliques: each within the cell cap (its mask and a model table over it are
    built whole; :func:`dpcore.constraints.zero_cliques` checks the same, naming the rule)."""
    out = [tuple(c) for c in fixed]
    for clique in out:
        _check_batch(domain.size(clique), f"the schema rule's model clique {list(clique)}",
                     "coarsen these columns (fewer categories or bins)")
    return out


def plan_mwem(domain, rho, *, workload="all-3way", max_model_size=None, rounds=None,
              rows=None, seed=None, fixed=()) -> Plan:
    """MWEM+PGM (``mechanisms.mwem.mwem``), checked; without a cap it runs with the ceiling.
    ``fixed``: the model cliques the schema's rules force (held from the first round)."""
    d, rho = len(domain), Fraction(rho)
    work = _workload(domain, workload)
    size = model_ceiling_mb() if max_model_size is None else _check_model_size(max_model_size)
    T = 10 if rounds is None else _check_rounds(rounds, d, 1)
    cliques = [c for c, _ in work]
    fixed = _check_fixed(domain, fixed)
    if fixed:   # mwem() pools by JT-SIZE of the measured cliques plus these
        from dpcore.junction_tree import JunctionTree
        smallest = min(JunctionTree(domain, fixed).hypothetical_sizes_mb(cliques))
        if smallest > size:
            raise InvalidArgumentError(
                f"max_model_size {size:g} MB is too small: MWEM's first round would have no "
                f"candidate (the schema's rule cliques with the smallest workload marginal "
                f"make a {smallest:.3g} MB model)")
    smallest = min(domain.size(c) for c in cliques)
    if _mb(smallest) > size:
        raise InvalidArgumentError(f"max_model_size {size:g} MB is too small: MWEM's first round "
                                   f"would have no candidate (the smallest workload marginal "
                                   f"needs {_mb(smallest):.3g} MB)")
    batch = sum(domain.size(c) for c in cliques if _mb(domain.size(c)) <= size)
    _check_batch(max(batch, _largest_oneway(domain)), "an MWEM selection",
                 "lower --max-model-size or use a smaller workload")
    options = {"workload": work, "max_model_size": size, "rounds": T}
    return Plan("mwem", rho, MappingProxyType(options), check_rows(rows, d), check_seed(seed),
                batch)


def plan_mst(domain, rho, *, rows=None, seed=None, fixed=()) -> Plan:
    """MST (``mechanisms.mst.mst``), checked: its first Kruskal step reads every pair at once,
    and each rule clique (``fixed``) fits the cell cap."""
    _check_fixed(domain, fixed)
    attrs = list(domain.attrs)
    pairs = sum(domain.size((a, b)) for i, a in enumerate(attrs) for b in attrs[i + 1:])
    batch = _check_batch(max(pairs, _largest_oneway(domain)), "MST's spanning-tree selection",
                         "coarsen the schema (fewer categories or bins)")
    return Plan("mst", Fraction(rho), MappingProxyType({}), check_rows(rows, len(domain)),
                check_seed(seed), batch)


def plan_independent(domain, rho, *, rows=None, seed=None) -> Plan:
    """Independent (``mechanisms.independent.independent``), checked."""
    batch = _check_batch(_largest_oneway(domain), "a 1-way marginal",
                         "coarsen the schema (fewer categories or bins)")
    return Plan("independent", Fraction(rho), MappingProxyType({}),
                check_rows(rows, len(domain)), check_seed(seed), batch)


PLANNERS = {"aim": plan_aim, "mst": plan_mst, "mwem": plan_mwem, "independent": plan_independent}


# FEM (mechanisms.fem): the defaults below were chosen on small domains; the paper grid-searches
# eps0 in [0.003, 0.019] and eta in [1, 4] (its Table 2) and its code uses s = 20 samples.
FEM_EPSILON0 = 0.01
FEM_MAX_SAMPLES = 1000


def plan_fem(domain, rho, *, workload="all-3way", rounds=None, samples=20, eta=2.0,
             total=None, total_share=0.05, keep="all", time_limit=10.0, rows=None,
             seed=None) -> Plan:
    """FEM (``mechanisms.fem.fem``), checked: the binarised domain and the query count are
    capped (``mechanisms.fem.check_fem_domain``), and one selection reads every workload
    marginal at once. Without ``rounds``, T is as many rounds of eps0 = ``FEM_EPSILON0`` as
    the budget pays for (``exponential_rounds``), within [1, max_rounds]."""
    from dpcore.accounting.calibration import exponential_rounds
    from .fem import KEEP, check_fem_domain
    d, rho = len(domain), Fraction(rho)
    work = _workload(domain, workload)
    cliques = [c for c, _ in work]
    check_fem_domain(domain, cliques)
    batch = _check_batch(max(sum(domain.size(c) for c in cliques), _largest_oneway(domain)),
                         "an FEM selection", "use fewer or smaller marginals")
    if total is not None and (isinstance(total, bool) or not isinstance(total, numbers.Real)
                              or not (math.isfinite(float(total)) and float(total) > 0)):
        raise InvalidArgumentError(f"total must be a finite public count > 0, got {total!r}")
    for name, value, top in (("eta", eta, math.inf), ("time_limit", time_limit, math.inf),
                             ("total_share", total_share, 1.0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
                math.isfinite(float(value)) and 0 < float(value) < top):
            bound = "< 1" if top == 1.0 else "finite"
            raise InvalidArgumentError(f"{name} must be > 0 and {bound}, got {value!r}")
    if isinstance(samples, bool) or not isinstance(samples, numbers.Integral) or not (
            1 <= samples <= FEM_MAX_SAMPLES):
        raise InvalidArgumentError(f"samples must be an int in [1, {FEM_MAX_SAMPLES}], got {samples!r}")
    if keep not in KEEP:
        raise InvalidArgumentError(f"keep must be one of {KEEP}, got {keep!r}")
    if rounds is None:
        share = rho if total is not None else rho * (1 - Fraction(float(total_share)))
        T = min(max(1, exponential_rounds(share, FEM_EPSILON0)), max_rounds(d))
    else:
        T = _check_rounds(rounds, d, 1)
    options = {"workload": work, "rounds": T, "samples": int(samples), "eta": float(eta),
               "total": None if total is None else float(total),
               "total_share": float(total_share), "keep": keep, "time_limit": float(time_limit)}
    return Plan("fem", rho, MappingProxyType(options), check_rows(rows, d), check_seed(seed), batch)


PLANNERS["fem"] = PLANNERS["sepfem"] = plan_fem


def plan_dqrs(domain, rho, *, workload="all-3way", rounds=None, samples=30, eta=0.3,
              total=None, total_share=0.05, time_limit=10.0, rows=None, seed=None) -> Plan:
    """DQRS (``mechanisms.dqrs.dqrs``), checked as FEM (the same caps and options); ``rounds``
    caps T (the mechanism runs as many rounds as the budget pays for, up to the cap)."""
    from .dqrs import MAX_DQRS_ROUNDS, check_eta
    base = plan_fem(domain, rho, workload=workload, rounds=1, samples=samples, eta=eta,
                    total=total, total_share=total_share, time_limit=time_limit, rows=rows,
                    seed=seed)
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral)
                               or not 1 <= rounds <= MAX_DQRS_ROUNDS):
        raise InvalidArgumentError(f"rounds must be an int in [1, {MAX_DQRS_ROUNDS}], got {rounds!r}")
    check_eta(eta)
    options = {k: v for k, v in base.options.items() if k not in ("keep",)}
    options["rounds"] = None if rounds is None else int(rounds)
    return Plan("dqrs", base.rho, MappingProxyType(options), base.rows, base.seed,
                base.largest_batch_cells)


PLANNERS["dqrs"] = plan_dqrs


# Adaptive Measurements (mechanisms.adaptive). Default rounds: PEP the anchor T = 50;
# MWEM learns by small multiplicative steps and needs more (the paper's grid for MWEM with past
# queries reaches 300; 200 is where all-3way reduced Adult levels off); RAP-softmax the anchor's
# T = 5 with 10 marginals a round, and GEM the same (on Adult it beat T = 30 with one a round:
# 0.33 against 0.35 all-3-way error at 11 against 17 CPU-s, bench/gem.py's setting).
_ADAPTIVE_ROUNDS = {"mwem": 200, "pep": 50, "rap-softmax": 5, "gem": 5, "gem-pub": 5}
_ADAPTIVE_PER_ROUND = {"rap-softmax": 10, "gem": 10, "gem-pub": 10}
_HISTOGRAM_FAMILIES = ("mwem", "pep")
# The product-mixture families' components (RAPSoftmax rows, GEM batch): their defaults, for the
# memory check below (a family built with more is checked when it is built).
_MIXTURE_COMPONENTS = 1000


def plan_adaptive(domain, rho, *, family, workload="all-3way", rounds=None, per_round=None,
                  alpha=0.5, rows=None, seed=None) -> Plan:
    """Adaptive Measurements (``mechanisms.adaptive.adaptive_measurements``) with ``family``
    ("mwem", "pep", "rap-softmax", "gem", "gem-pub"), checked: an explicit histogram fits its
    cap (and the cell cap, since the fitted model is one table), a product mixture's largest
    temporary (components x a marginal's cells) fits the cell cap, T rounds of k =
    ``per_round`` distinct selections from the workload, alpha in (0, 1), and a budget large
    enough for the calibration of k T selection and measurement pairs."""
    from dpcore.accounting.calibration import adaptive_measurements_round

    from .adaptive import check_histogram_domain
    if family not in _ADAPTIVE_ROUNDS:
        raise InvalidArgumentError(f"family must be one of {sorted(_ADAPTIVE_ROUNDS)}, "
                                   f"got {family!r}")
    d, rho = len(domain), Fraction(rho)
    work = _workload(domain, workload)
    cliques = list(dict.fromkeys(c for c, weight in work if weight > 0))
    if family in _HISTOGRAM_FAMILIES:
        cells = check_histogram_domain(domain)
        _check_batch(cells, "the explicit histogram", "use a smaller schema")
    else:
        _check_batch(_MIXTURE_COMPONENTS * max(domain.size(c) for c in cliques),
                     f"{family} (1000 components times a marginal's cells)",
                     "use a workload of smaller marginals")
    T = _ADAPTIVE_ROUNDS[family] if rounds is None else _check_rounds(rounds, d, 1)
    if per_round is None:
        per_round = min(_ADAPTIVE_PER_ROUND.get(family, 1), len(cliques))
    if isinstance(per_round, bool) or not isinstance(per_round, numbers.Integral) or not (
            1 <= per_round <= len(cliques)):
        raise InvalidArgumentError(f"per_round must be an int in [1, {len(cliques)}] (the "
                                   f"workload's marginals), got {per_round!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not (
            0 < float(alpha) < 1):
        raise InvalidArgumentError(f"alpha must be a number in (0, 1), got {alpha!r}")
    adaptive_measurements_round(rho, T, int(per_round), float(alpha))  # the budget suffices
    batch = _check_batch(max(sum(domain.size(c) for c in cliques), _largest_oneway(domain)),
                         "an Adaptive Measurements selection", "use a smaller workload")
    options = {"workload": work, "rounds": T, "per_round": int(per_round),
               "alpha": float(alpha)}
    name = "mwem-explicit" if family == "mwem" else family
    return Plan(name, rho, MappingProxyType(options), check_rows(rows, d), check_seed(seed),
                batch)


def check_family_table(cells: int, name: str) -> None:
    """A product-mixture family's largest array (``largest_table``: its rows or batch times a
    width) fits the cell cap: a family built with more components than the default 1000 is
    refused here, before any charge, not by the allocator halfway through a run."""
    _check_batch(cells, f"{name} with these options", "use fewer rows (components) or "
                 "narrower layers")


def plan_mwem_explicit(domain, rho, **options) -> Plan:
    """MWEM on an explicit histogram (``plan_adaptive`` with family "mwem")."""
    return plan_adaptive(domain, rho, family="mwem", **options)


def plan_pep(domain, rho, **options) -> Plan:
    """PEP (``plan_adaptive`` with family "pep")."""
    return plan_adaptive(domain, rho, family="pep", **options)


PLANNERS.update({"mwem-explicit": plan_mwem_explicit, "pep": plan_pep})
PLANNERS.update({f: partial(plan_adaptive, family=f) for f in ("rap-softmax", "gem", "gem-pub")})


# PrivPGD (mechanisms.privpgd). Memory: the particles, their gradient and two Adam moments are
# m x d doubles each, and a kernel call keeps per-particle scratch (~300 bytes a particle: the
# gradient buffers of up to 16 tasks and two threads' workspaces). Work: epochs x pairs x K
# projections of m particles; past PRIVPGD_MAX_WORK (~10x the paper's default on Adult, hours
# of CPU) a run is refused as a likely typo before any charge.
PRIVPGD_SCRATCH_CELLS = 40
PRIVPGD_MAX_WORK = 10 ** 12


def plan_privpgd(domain, rho, *, workload="all-2way", particles=100_000, epochs=1000, lr=0.1,
                 projections=10, batch=5, keep=0.2, step_size=None, gamma=0.75,
                 total_share=0.01, projection="consistent", protect=None, rows=None,
                 seed=None) -> Plan:
    """PrivPGD (``mechanisms.privpgd.privpgd``), checked: at least one attribute pair, the
    options' ranges, the protected query's (``check_protect``), the particles' memory
    (4 m d + 40 m cells within the cell cap) and the descent's work (epochs x pairs x
    projections x m <= ``PRIVPGD_MAX_WORK``)."""
    from dpcore.accounting.calibration import gaussian_sigma

    from .privpgd import attribute_pairs, check_options, check_protect
    d, rho = len(domain), Fraction(rho)
    work = _workload(domain, workload)
    pairs = attribute_pairs(work)
    if not pairs:
        raise InvalidArgumentError("privpgd fits 2-way marginals: the schema needs >= 2 columns "
                                   "and the workload a marginal of >= 2 of them")
    options = check_options(particles, epochs, lr, projections, batch, keep, step_size, gamma,
                            total_share, projection)
    options["protect"] = check_protect(protect, domain, options["total_share"])
    # every share must buy a Gaussian sigma, checked here: the protected statistic's is
    # charged after the count, so a share too small to calibrate would fail after a charge
    shares = {"total_share": options["total_share"]}
    if options["protect"] is not None:
        shares["protect.share"] = options["protect"].share
    pairs_share = (1 - sum(Fraction(v) for v in shares.values())) / len(pairs)
    for name, share in {**shares, "the pairs' share": pairs_share}.items():
        try:
            gaussian_sigma(rho * Fraction(share))
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"{name} = {float(share):.3g} of rho = {float(rho):.3g} "
                                       f"buys no Gaussian noise scale ({exc})") from exc
    m = options["particles"]
    cells = m * (4 * d + PRIVPGD_SCRATCH_CELLS)
    if cells > cell_cap():
        raise InvalidArgumentError(
            f"particles={m} needs {_mb(cells):.0f} MB for {d} columns, more than the cap "
            f"{_mb(cell_cap()):.0f} MB (the cell cap, 8 bytes a cell): use fewer particles")
    effort = options["epochs"] * len(pairs) * options["projections"] * m
    if effort > PRIVPGD_MAX_WORK:
        raise InvalidArgumentError(
            f"epochs x pairs x projections x particles = {effort:.3g} exceeds {PRIVPGD_MAX_WORK:.0e} "
            f"(hours of CPU): use fewer epochs, projections or particles")
    batch_cells = _check_batch(max(max(domain.size(p) for p in pairs), _largest_oneway(domain)),
                               "a PrivPGD measurement", "coarsen the schema")
    return Plan("privpgd", rho, MappingProxyType({"workload": work, **options}),
                check_rows(rows, d), check_seed(seed), batch_cells)


PLANNERS["privpgd"] = plan_privpgd
