"""MWEM+PGM: the AIM paper's Algorithm 1 (McKenna, Mullins, Sheldon, Miklau), on the curator.

T rounds; in each, select a workload marginal with the exponential mechanism on
q_r = ||M_r(D) − M_r(p̂_{t−1})||₁ − n_r (sensitivity 1), measure it with Gaussian noise σ, and
re-estimate p̂_t with Private-PGM (warm-started from p̂_{t−1}).

Parameterisation. The paper sets ε = 2√(ρ/T) and σ = √(T/ρ) with the exponential mechanism
Pr ∝ exp(ε q / (2Δ)) (its Definition 6), which costs ε²/8 = ρ/(2T); the Gaussian costs
1/(2σ²) = ρ/(2T); so each round costs ρ/T and T rounds cost ρ (Prop. 3;
proofs/mwem_pgm_budget.py). We use the same convention, calibrating each round's ε and σ to an
exact half of its share of what is left.

Initialisation. p̂_0 is uniform over the domain scaled to the record count N, which is private
under add/remove-one DP. Without a public ``total`` the first round's reference marginals are
0, so q_r = N − n_r: the first selection favours small marginals but stays ε-DP. Later rounds
use the model's estimated total.
"""
from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from dpcore.accounting.calibration import exponential_epsilon, gaussian_sigma
from dpcore.errors import InvalidArgumentError
from dpcore.inference import Measurement, estimate
from dpcore.junction_tree import JunctionTree

from .result import MechanismResult, RoundRecord, Timer, check_output, round_options, synthesize
from .workload import make_workload


def mwem(curator, workload, *, rounds: int = 10, max_model_size: float | None = None, total=None,
         synthetic_rows: int | None = None, sample_method: str = "round", seed=None, callback=None,
         estimate_options=None, round_iters: int = 250, discrete: bool | None = None,
         zeros=()) -> MechanismResult:
    """Run MWEM+PGM for ``rounds`` rounds, spending the curator filter's whole remaining budget.

    ``max_model_size`` (MB, optional) drops candidates whose addition would make the junction
    tree larger than that. ``total``: a public record count for the uniform p̂_0, if known.
    ``discrete`` goes to :meth:`Curator.measure` (None: exact discrete Gaussian for counts). Each round's
    refit stops after at most ``round_iters`` iterations; the final model is refit to
    convergence with ``estimate_options`` (as in :func:`mechanisms.aim.aim`). ``zeros``: public
    structural zeros every model is fit with (as in :func:`mechanisms.aim.aim`).
    """
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, sample_method, seed)
    work = make_workload(domain, workload)
    if not work:
        raise InvalidArgumentError("workload must name at least one marginal, got an empty workload")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InvalidArgumentError(f"rounds must be an int >= 1, got {rounds!r}")
    if max_model_size is not None and not max_model_size > 0:
        raise InvalidArgumentError(f"max_model_size must be > 0 MB, got {max_model_size!r}")
    if Fraction(curator.privacy_filter.remaining) <= 0:
        raise InvalidArgumentError("the privacy filter has no budget left, remaining = 0")
    options = dict(estimate_options or {})
    zeros = list(zeros)
    if zeros:
        options["zeros"] = zeros
    per_round = round_options(options, round_iters)
    cliques = [c for c, _ in work]
    sizes = {r: domain.size(r) for r in cliques}
    measurements: list[Measurement] = []
    records: list[RoundRecord] = []
    model = None
    for t in range(rounds):
        start = time.perf_counter()
        share = Fraction(curator.privacy_filter.remaining) / (rounds - t)
        epsilon = exponential_epsilon(share / 2)
        pool = cliques
        if max_model_size is not None:
            tree = JunctionTree(domain, [m.attrs for m in measurements] + [z.attrs for z in zeros])
            pool = [r for r, mb in zip(cliques, tree.hypothetical_sizes_mb(cliques))
                    if mb <= max_model_size]
            pool = pool or [min(cliques, key=lambda r: sizes[r])]
        if model is not None:
            refs = [f.datavector() for f in model.project_many(pool)]
        elif total is not None:
            refs = [np.full(sizes[r], float(total) / sizes[r]) for r in pool]
        else:
            refs = [np.zeros(sizes[r]) for r in pool]
        before = curator.privacy_filter.spent
        index = curator.select(pool, refs, epsilon, penalties=[float(sizes[r]) for r in pool])
        chosen = pool[index]
        timer.add("select", time.perf_counter() - start)
        t_measure = time.perf_counter()
        # The measurement gets exactly what the selection left of this round's share.
        sigma = gaussian_sigma(share - Fraction(curator.privacy_filter.spent - before))
        y = curator.measure(chosen, sigma, discrete=discrete)
        measurements.append(Measurement(chosen, y, sigma))
        timer.add("measure", time.perf_counter() - t_measure)
        t_est = time.perf_counter()
        model = estimate(domain, measurements, warm_start=model, **per_round).model
        timer.add("estimate", time.perf_counter() - t_est)
        record = RoundRecord(t, "select+measure", chosen, sigma, epsilon, 1.0, len(pool),
                             Fraction(curator.privacy_filter.spent - before), time.perf_counter() - start)
        records.append(record)
        if callback is not None:
            callback(record)
    retired = curator.retire("MWEM+PGM calibration residue")
    start = time.perf_counter()
    model = estimate(domain, measurements, warm_start=model, **options).model
    timer.add("estimate", time.perf_counter() - start)
    start = time.perf_counter()
    synthetic = synthesize(model, synthetic_rows, sample_method, seed)
    timer.add("generate", time.perf_counter() - start)
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records), timer.done(),
                           {"workload": work, "retired_rho": retired})
