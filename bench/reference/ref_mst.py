"""MST (NIST-MST paper, Sec. 5 / Alg. 1-10 generalised) on the reference `mbi` estimation API.

Mirrors Private-PGM's mechanisms/mst.py: rho split in thirds (one-way measurements, selection,
two-way measurements), domain compression of values whose noisy one-way count is below 3 sigma,
a maximum spanning tree over L1 errors of pairwise marginals chosen with r - 1 exponential
mechanism draws, 1000 mirror-descent iterations for selection and 5000 for the final model.
"""

from __future__ import annotations

import itertools

import numpy as np

import mbi
from refcommon import Stopwatch, datavector, estimator, exponential_mechanism, measure
from refcommon import model_marginals, model_size_mb


def compress_domain(data: mbi.Dataset, oneway: list[mbi.LinearMeasurement]):
    """Merge every value with noisy count < 3 sigma into one extra value (MST's compression)."""
    mapping: dict[str, np.ndarray] = {}
    for m in oneway:
        (col,) = m.clique
        y = np.asarray(m.noisy_measurement)
        keep = y >= 3 * m.stddev
        if keep.all():
            continue
        codes = np.full(y.size, keep.sum(), dtype=np.int64)
        codes[keep] = np.arange(keep.sum())
        mapping[col] = codes
    compressed = data.compress(mapping) if mapping else data
    measurements = [m.compress(mapping, data.domain) for m in oneway]
    return compressed, measurements, mapping


class _Components:
    """Union-find over attributes, to draw only edges joining two trees."""

    def __init__(self, attrs) -> None:
        self.parent = {a: a for a in attrs}

    def find(self, a):
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)


def select(data: mbi.Dataset, rho: float, log, rng, watch: Stopwatch):
    with watch.phase("estimate"):
        est = estimator().estimate(data.domain, log, iters=1000)
    with watch.phase("select"):
        attrs = data.domain.attributes
        pairs = list(itertools.combinations(attrs, 2))
        estimates = model_marginals(est, pairs)
        weights = {e: np.abs(datavector(data, e) - estimates[e]).sum() for e in pairs}
        forest = _Components(attrs)
        epsilon = np.sqrt(8 * rho / (len(attrs) - 1))
        edges = []
        for _ in range(len(attrs) - 1):
            cands = [e for e in weights if forest.find(e[0]) != forest.find(e[1])]
            q = np.array([weights[e] for e in cands])
            e = cands[exponential_mechanism(rng, q, epsilon, 1.0)]
            forest.union(*e)
            edges.append(e)
    return edges


def run(data: mbi.Dataset, workload, rho: float, rng: np.random.Generator, *,
        watch: Stopwatch) -> dict:
    del workload  # MST is workload-agnostic.
    d = len(data.domain)
    sigma = np.sqrt(3 / (2 * rho))
    # Each third of the budget is spread over its marginals by weight 1/sqrt(count).
    oneway = [measure(data, (a,), sigma * np.sqrt(d), rng) for a in data.domain.attributes]
    with watch.phase("compress"):
        compressed, log1, mapping = compress_domain(data, oneway)
    edges = select(compressed, rho / 3, log1, rng, watch) if d > 1 else []
    k = max(len(edges), 1)
    log2 = [measure(compressed, e, sigma * np.sqrt(k), rng) for e in edges]
    with watch.phase("estimate"):
        model = estimator().estimate(compressed.domain, log1 + log2, iters=5000)
    with watch.phase("synthesize"):
        synth = model.synthetic_data()
        if mapping:
            synth = synth.decompress(mapping)
    return {
        "synthetic": synth,
        "rounds": len(edges),
        "measurements": len(log1) + len(log2),
        "selected": [list(e) for e in edges],
        "model_size_mb": model_size_mb(compressed.domain, model.cliques),
        "rho_used": float(rho),
    }
