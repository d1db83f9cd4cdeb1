"""MWEM+PGM (AIM paper Alg. 1) on the reference `mbi` estimation API.

Mirrors Private-PGM's mechanisms/mwem+pgm.py with Gaussian noise: T rounds (the runner passes
the same T to both sides), rho split evenly across rounds, alpha = 0.9 of each round's share
for measurement and the rest for selection, quality ||M_r(D) - M_r(p)||_1 - n_r over the
workload, candidates limited so JT-SIZE stays under MAX-SIZE * t / T (25 MB), and 1000
warm-started mirror-descent iterations per round.
"""

from __future__ import annotations

import numpy as np

import mbi
from refcommon import Stopwatch, datavector, estimator, exponential_mechanism, measure
from refcommon import model_marginals, model_size_mb


def run(data: mbi.Dataset, workload, rho: float, rng: np.random.Generator, *,
        rounds: int | None = None, max_model_size: float = 25.0, max_iters: int = 1000,
        watch: Stopwatch) -> dict:
    domain = data.domain
    rounds = rounds or len(domain)
    alpha = 0.9
    rho_round = rho / rounds
    sigma = np.sqrt(0.5 / (alpha * rho_round))
    epsilon = np.sqrt(8 * (1 - alpha) * rho_round)
    with watch.phase("answers"):
        answers = {cl: datavector(data, cl) for cl in workload}
    engine = estimator()
    with watch.phase("estimate"):
        model = engine.estimate(domain, [], iters=max_iters)
    measurements: list[mbi.LinearMeasurement] = []
    selected: list[tuple[str, ...]] = []
    for t in range(1, rounds + 1):
        with watch.phase("filter"):
            cands = [cl for cl in workload
                     if model_size_mb(domain, selected + [cl]) <= max_model_size * t / rounds]
        with watch.phase("select"):
            estimates = model_marginals(model, cands)
            scores = np.array([np.abs(answers[cl] - estimates[cl]).sum() - domain.size(cl)
                               for cl in cands])
            cl = cands[exponential_mechanism(rng, scores, epsilon, 1.0)]
        selected.append(cl)
        measurements.append(measure(data, cl, sigma, rng))
        with watch.phase("estimate"):
            model = engine.estimate(domain, measurements, iters=max_iters, warm_start=model)
        print(f"round {t} selected {cl} at {watch.elapsed():.1f} s", flush=True)
    with watch.phase("synthesize"):
        synth = model.synthetic_data()
    return {
        "synthetic": synth,
        "rounds": rounds,
        "measurements": len(measurements),
        "selected": [list(c) for c in selected],
        "model_size_mb": model_size_mb(domain, model.cliques),
        "rho_used": float(rho),
    }
