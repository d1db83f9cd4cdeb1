"""Datasets, workloads and the workload-error metric shared by the benchmark runner and report.

The metric is computed here with plain NumPy from the CSV files each side writes, the same way
for dpcore and for the reference, so neither implementation grades itself.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from dataclasses import dataclass

import numpy as np

DATA_ROOT = os.environ.get(
    "DPCORE_BENCH_DATA",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))

# The TARGET workload's label per dataset. The meta files carry no label field, so these are
# the prediction targets the datasets are known for (AIM paper Sec. 6.1 names INCOME>50K for
# adult and SURVIVED for titanic; the UCI sets' class columns for the others). national2019 has
# no single label; the AIM paper would pick one at random, we leave it out of TARGET.
LABELS = {
    "adult": "income>50K",
    "adult-pgm": "income>50K",
    "titanic": "survived",
    "nursery": "class",
    "mushroom": "class",
    "kr-vs-kp": "class",
}
DATASETS = ("adult", "adult-pgm", "titanic", "nursery", "mushroom", "kr-vs-kp", "national2019")
WORKLOADS = ("all3way", "target")


@dataclass(frozen=True)
class DatasetFiles:
    name: str
    csv: str
    domain: str

    def domain_dict(self) -> dict[str, int]:
        with open(self.domain) as f:
            return {a: int(n) for a, n in json.load(f).items()}


def dataset_files(name: str, root: str = DATA_ROOT) -> DatasetFiles:
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")
    base = os.path.join(os.path.abspath(root), name)
    files = DatasetFiles(name, os.path.join(base, f"{name}.csv"),
                         os.path.join(base, f"{name}-domain.json"))
    for path in (files.csv, files.domain):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"dataset {name!r}: missing file {path}")
    return files


def workload_cliques(name: str, workload: str) -> list[tuple[str, ...]] | None:
    """The workload's 3-way marginals (attributes in domain order), or None if undefined."""
    attrs = list(dataset_files(name).domain_dict())
    triples = list(itertools.combinations(attrs, 3))
    if workload == "all3way":
        return triples
    if workload == "target":
        label = LABELS.get(name)
        return None if label is None else [t for t in triples if label in t]
    raise ValueError(f"workload must be one of {WORKLOADS}, got {workload!r}")


def read_codes(path: str, attrs: list[str]) -> np.ndarray:
    """Integer codes of ``attrs`` from a CSV with a header, as an N x d int64 array."""
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    missing = [a for a in attrs if a not in header]
    if missing:
        raise ValueError(f"{path}: columns {missing} missing from header {header}")
    cols = [header.index(a) for a in attrs]
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, usecols=cols, ndmin=2)
    return data.reshape(-1, len(attrs))


def marginal(codes: np.ndarray, axes: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in axes), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64)


def workload_error(real_csv: str, synth_csv: str, domain: dict[str, int],
                   cliques: list[tuple[str, ...]]) -> float:
    """AIM's Definition 2 with unit weights, each dataset normalised by its own size:
    (1/k) sum_i || M_i(D)/|D| - M_i(D^)/|D^| ||_1. (Total variation distance is half this.)"""
    attrs = list(domain)
    real = read_codes(real_csv, attrs)
    synth = read_codes(synth_csv, attrs)
    sizes = np.array([domain[a] for a in attrs])
    if len(synth) == 0:
        raise ValueError(f"{synth_csv}: synthetic data has no rows")
    if (synth < 0).any() or (synth >= sizes).any():
        bad = np.argwhere((synth < 0) | (synth >= sizes))[0]
        raise ValueError(f"{synth_csv}: row {bad[0]} column {attrs[bad[1]]!r} has code "
                         f"{synth[bad[0], bad[1]]} outside [0, {sizes[bad[1]]})")
    total = 0.0
    for cl in cliques:
        axes = tuple(attrs.index(a) for a in cl)
        shape = tuple(int(sizes[a]) for a in axes)
        p = marginal(real, axes, shape)
        q = marginal(synth, axes, shape)
        total += float(np.abs(p / p.sum() - q / q.sum()).sum())
    return total / len(cliques)
