"""AIM (McKenna et al., AIM paper Alg. 2-4) on the reference `mbi` estimation API.

Mirrors Private-PGM's mechanisms/aim.py: T = 16 d, alpha = 0.9, MAX-SIZE = 80 MB, candidates
= downward closure of the workload filtered by JT-SIZE (Alg. 4 line 13), quality score Eq. (1)
with weights w_r = sum_s c_s |r ∩ s|, one-way initialisation (Alg. 2), annealing (Alg. 3),
1000 warm-started mirror-descent iterations per round and a final fit before generating data.
"""

from __future__ import annotations

import itertools

import numpy as np

import mbi
from refcommon import Stopwatch, datavector, estimator, exponential_mechanism, measure
from refcommon import model_marginals, model_size_mb


def downward_closure(workload: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    closure: set[tuple[str, ...]] = set()
    for cl in workload:
        for r in range(1, len(cl) + 1):
            closure.update(itertools.combinations(cl, r))
    return sorted(closure, key=len)


def workload_weights(workload: list[tuple[str, ...]]) -> dict[tuple[str, ...], float]:
    # AIM paper Sec. 4, "Better Selection Criteria": w_r = sum_s c_s |r ∩ s| with unit c_s.
    sets = [set(s) for s in workload]
    return {r: float(sum(len(set(r) & s) for s in sets)) for r in downward_closure(workload)}


def run(data: mbi.Dataset, workload, rho: float, rng: np.random.Generator, *,
        max_model_size: float = 80.0, max_iters: int = 1000, watch: Stopwatch) -> dict:
    domain = data.domain
    rounds = 16 * len(domain)
    alpha = 0.9
    candidates = workload_weights(workload)
    with watch.phase("answers"):
        answers = {cl: datavector(data, cl) for cl in candidates}
    oneway = [cl for cl in candidates if len(cl) == 1]

    sigma = np.sqrt(rounds / (2 * alpha * rho))
    epsilon = np.sqrt(8 * (1 - alpha) * rho / rounds)
    measurements = [measure(data, cl, sigma, rng) for cl in oneway]
    rho_used = len(oneway) * 0.5 / sigma**2
    engine = estimator()
    with watch.phase("estimate"):
        model = engine.estimate(domain, measurements, iters=max_iters)

    selected: list[tuple[str, ...]] = []
    terminate = False
    while not terminate:
        # Alg. 4 lines 10-12 and the final-round rule of Sec. 4 (never overspend rho).
        if rho - rho_used < 2 * (0.5 / sigma**2 + epsilon**2 / 8):
            remaining = rho - rho_used
            sigma = np.sqrt(1 / (2 * alpha * remaining))
            epsilon = np.sqrt(8 * (1 - alpha) * remaining)
            terminate = True
        rho_used += epsilon**2 / 8 + 0.5 / sigma**2
        size_limit = max_model_size * rho_used / rho

        with watch.phase("filter"):
            free = set(downward_closure([tuple(c) for c in model.cliques]))
            current = [tuple(c) for c in model.cliques]
            small = [cl for cl in candidates
                     if cl in free or model_size_mb(domain, current + [cl]) <= size_limit]
        with watch.phase("select"):
            estimates = model_marginals(model, small)
            scores = np.empty(len(small))
            for i, cl in enumerate(small):
                bias = np.sqrt(2 / np.pi) * sigma * domain.size(cl)
                err = np.abs(answers[cl] - estimates[cl]).sum()
                scores[i] = candidates[cl] * (err - bias)
            sensitivity = max(candidates[cl] for cl in small)
            cl = small[exponential_mechanism(rng, scores, epsilon, sensitivity)]
        selected.append(cl)
        n = domain.size(cl)
        measurements.append(measure(data, cl, sigma, rng))
        z = datavector(model, cl)
        with watch.phase("estimate"):
            model = engine.estimate(domain, measurements, iters=max_iters, warm_start=model)
        w = datavector(model, cl)
        # Progress in the log: a run killed at its cap still says how far it got.
        print(f"round {len(selected)} selected {cl} size {n} model "
              f"{model_size_mb(domain, model.cliques):.2f} MB at {watch.elapsed():.1f} s",
              flush=True)
        # Alg. 3: anneal when the new estimate moved less than the measurement's expected error.
        if np.abs(w - z).sum() <= sigma * np.sqrt(2 / np.pi) * n:
            sigma /= 2
            epsilon *= 2

    with watch.phase("estimate"):
        model = engine.estimate(domain, measurements, iters=max_iters, warm_start=model)
    with watch.phase("synthesize"):
        synth = model.synthetic_data()
    return {
        "synthetic": synth,
        "rounds": len(selected),
        "measurements": len(measurements),
        "selected": [list(c) for c in selected],
        "model_size_mb": model_size_mb(domain, model.cliques),
        "rho_used": float(rho_used),
    }
