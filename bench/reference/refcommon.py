"""Shared plumbing for the reference (mbi) drivers; runs only inside bench/.venv-mbi.

The drivers in this directory re-implement Private-PGM's own mechanism scripts (AIM, MST,
MWEM+PGM) on the public API of the pip package `mbi`, which ships the estimation library but
not the mechanisms. They follow the algorithms as published (AIM paper Alg. 2-4 and Alg. 1;
NIST-MST paper Alg. 1-10 / MST) and the parameter defaults of Private-PGM's scripts, so that the
timings and errors measured here are those a user of `mbi` would see.

Privacy parameters arrive as a zCDP budget rho computed by the runner, so the reference and
dpcore spend exactly the same budget for a given (epsilon, delta).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy.special import softmax

import mbi
from mbi import junction_tree, marginal_oracles


def load_dataset(csv_path: str, domain_path: str) -> mbi.Dataset:
    with open(domain_path) as f:
        config = json.load(f)
    frame = pd.read_csv(csv_path)
    domain = mbi.Domain(tuple(config), tuple(int(config[a]) for a in config))
    data = {a: frame[a].to_numpy() for a in domain.attributes}
    return mbi.Dataset(data, domain)


def load_workload(path: str) -> list[tuple[str, ...]]:
    with open(path) as f:
        return [tuple(cl) for cl in json.load(f)]


def datavector(projectable, clique: Sequence[str]) -> np.ndarray:
    return np.asarray(projectable.project(tuple(clique)).datavector(), dtype=np.float64)


# "bulk" (default) or "project"; set by run_mbi.py --marginals.
MARGINALS_ROUTE = "bulk"


def model_marginals(model, cliques: Sequence[Sequence[str]]) -> dict[tuple[str, ...], np.ndarray]:
    """The model's marginals on many cliques, by mbi's fastest public route: read off the
    calibrated marginals where a clique lies inside a model clique, and answer the rest with
    one bulk_variable_elimination call (mbi compiles those queries in parallel)."""
    cliques = [tuple(cl) for cl in cliques]
    if MARGINALS_ROUTE == "project":
        # What Private-PGM's mechanism scripts do: one model.project call per clique.
        return {cl: datavector(model, cl) for cl in cliques}
    # MarkovRandomField.supports only checks the domain; the calibrated marginals know
    # which cliques lie inside a model clique.
    out = {cl: datavector(model, cl) for cl in cliques if model.marginals.supports(cl)}
    rest = [cl for cl in cliques if cl not in out]
    if rest:
        answers = marginal_oracles.bulk_variable_elimination(
            model.potentials, rest, float(model.total))
        for cl in rest:
            out[cl] = np.asarray(answers[cl].datavector(), dtype=np.float64)
    return out


def model_size_mb(domain: mbi.Domain, cliques: Iterable[Sequence[str]]) -> float:
    """JT-SIZE in MB (8 bytes a cell, 2**20 bytes a MB), as AIM defines it."""
    cliques = [tuple(cl) for cl in cliques]
    if not cliques:
        return sum(domain.size((a,)) for a in domain.attributes) * 8 / 2**20
    return float(junction_tree.hypothetical_model_size(domain, cliques))


def exponential_mechanism(
    rng: np.random.Generator, qualities: np.ndarray, epsilon: float, sensitivity: float
) -> int:
    """Pr[i] ∝ exp(epsilon * q_i / (2 * sensitivity)): the parameterisation Private-PGM uses."""
    q = np.asarray(qualities, dtype=np.float64)
    p = softmax(0.5 * epsilon / sensitivity * (q - q.max()))
    return int(rng.choice(q.size, p=p))


def measure(
    data: mbi.Dataset, clique: Sequence[str], sigma: float, rng: np.random.Generator
) -> mbi.LinearMeasurement:
    x = datavector(data, clique)
    y = x + rng.normal(0.0, sigma, size=x.size)
    return mbi.LinearMeasurement(y, tuple(clique), stddev=sigma)


class Stopwatch:
    """Accumulates wall time per phase, so the report says where the time went."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def phase(self, name: str) -> "_Phase":
        return _Phase(self, name)


class _Phase:
    def __init__(self, watch: Stopwatch, name: str) -> None:
        self.watch, self.name = watch, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc) -> None:
        elapsed = time.perf_counter() - self.start
        self.watch.totals[self.name] = self.watch.totals.get(self.name, 0.0) + elapsed


def write_json_atomic(path: str, payload: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def write_csv_atomic(path: str, synth: mbi.Dataset, columns: Sequence[str]) -> None:
    frame = pd.DataFrame({a: np.asarray(synth.data[a]).astype(np.int64) for a in columns})
    tmp = f"{path}.{os.getpid()}.tmp"
    frame.to_csv(tmp, index=False)
    os.replace(tmp, path)


def estimator() -> mbi.estimation.MirrorDescent:
    """Private-PGM's recommended estimator (mirror descent with Armijo line search)."""
    return mbi.estimation.MirrorDescent()
