"""Utility of synthetic data: the workload error of AIM (McKenna et al., "AIM", Definition 2).

A workload is a list of marginal queries ``r_i`` (tuples of column names) with weights
``c_i >= 0``. With ``p_r`` and ``q_r`` the real and synthetic marginals of ``r`` normalised to
sum to 1,

    Error(D, D^) = (1/k) * sum_i c_i * || p_{r_i} - q_{r_i} ||_1 ,

which equals Definition 2 when the synthetic table has as many rows as the real one and stays
meaningful when it does not. Each per-marginal error lies in [0, 2].

Evaluation reads the real data, so its numbers are *not* differentially private: they are for
the data steward, not for release.
"""
from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

from dpcore.errors import InvalidArgumentError
from dpcore.jsonio import load_path

Marginal = tuple[str, ...]
Workload = list[tuple[Marginal, float]]
WorkloadSpec = Union[str, Sequence[Any]]

_NAMED = {"all-1way": 1, "all-2way": 2, "all-3way": 3}


def all_k_way(names: Sequence[str], k: int) -> Workload:
    """Every k-way marginal over ``names``, weight 1 (AIM's ALL-kWAY workloads)."""
    if not 1 <= k <= len(names):
        raise InvalidArgumentError(f"k must lie in 1..{len(names)}, got {k}")
    return [(tuple(c), 1.0) for c in itertools.combinations(names, k)]


def _entry(item: Any, names: Sequence[str], where: str) -> tuple[Marginal, float]:
    weight: Any = 1.0
    attrs = item
    if isinstance(item, dict):
        unknown_keys = sorted(map(str, set(item) - {"attrs", "weight"}))
        if unknown_keys:      # a misspelt "wieght" must not silently mean weight 1
            raise InvalidArgumentError(f"{where}: a marginal object takes the keys attrs and "
                                       f"weight, got {unknown_keys[:5]}")
        attrs, weight = item.get("attrs"), item.get("weight", 1.0)
    if isinstance(attrs, str) or not isinstance(attrs, (list, tuple)) or not attrs:
        raise InvalidArgumentError(f"{where}: a marginal must be a non-empty list of column "
                                   f"names, got {attrs!r}")
    attrs = tuple(str(a) for a in attrs)
    unknown = [a for a in attrs if a not in names]
    if unknown:
        raise InvalidArgumentError(f"{where}: marginal {list(attrs)} names unknown column(s) "
                                   f"{unknown}")
    if len(set(attrs)) != len(attrs):
        raise InvalidArgumentError(f"{where}: marginal {list(attrs)} repeats a column")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not (
            math.isfinite(weight) and weight >= 0):
        raise InvalidArgumentError(f"{where}: weight must be a finite number >= 0, "
                                   f"got {weight!r}")
    # Domain order, so ("b", "a") and ("a", "b") are one marginal.
    return tuple(sorted(attrs, key=list(names).index)), float(weight)


def parse_workload(spec: WorkloadSpec, names: Sequence[str]) -> Workload:
    """``"all-1way"``, ``"all-2way"``, ``"all-3way"``, a JSON file path, or a list.

    The JSON file (or list) holds marginals as lists of column names, or objects
    ``{"attrs": [...], "weight": w}``; optionally wrapped as ``{"workload": [...]}``.

    >>> parse_workload([["b", "a"], {"attrs": ["c"], "weight": 2}], ["a", "b", "c"])
    [(('a', 'b'), 1.0), (('c',), 2.0)]
    """
    names = list(names)
    where = "workload"
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if isinstance(spec, str):
        if spec in _NAMED:
            return all_k_way(names, min(_NAMED[spec], len(names)))
        path = Path(spec)
        where = f"workload file {spec!r}"
        if not path.is_file():
            raise InvalidArgumentError(f"workload must be one of {sorted(_NAMED)} or a JSON "
                                       f"file, got {spec!r} (no such file)")
        spec = load_path(path, what=where)  # strict: UTF-8, no duplicate keys, bounded depth
        if isinstance(spec, dict):
            if set(spec) != {"workload"}:
                raise InvalidArgumentError(f"{where}: a JSON object holds one key, workload, "
                                           f"got {sorted(map(str, spec))[:5]}")
            spec = spec.get("workload")
    if not isinstance(spec, (list, tuple)) or not spec:
        raise InvalidArgumentError(f"{where} must be a non-empty list of marginals")
    out = [_entry(item, names, where) for item in spec]
    seen = set()
    for attrs, _ in out:
        if attrs in seen:
            raise InvalidArgumentError(f"{where}: marginal {list(attrs)} appears twice")
        seen.add(attrs)
    return out


def marginal(codes: np.ndarray, axes: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Normalised contingency table of ``codes[:, axes]`` (flat, C order)."""
    sizes = [int(shape[a]) for a in axes]
    flat = np.ravel_multi_index(tuple(codes[:, a].astype(np.intp) for a in axes), sizes)
    counts = np.bincount(flat, minlength=math.prod(sizes)).astype(np.float64)
    return counts / max(len(codes), 1)


@dataclass(frozen=True)
class MarginalError:
    attrs: Marginal
    weight: float
    error: float  # L1 distance of the normalised marginals, in [0, 2]


@dataclass(frozen=True)
class EvaluationResult:
    workload_error: float
    marginals: list[MarginalError] = field(default_factory=list)
    rows_real: int = 0
    rows_synthetic: int = 0
    max_error: float = 0.0  # max over the workload's cells of |p - q| (FEM paper, Sec. 6)

    def to_dict(self) -> dict[str, Any]:
        return {"workload_error": self.workload_error, "rows_real": self.rows_real,
                "rows_synthetic": self.rows_synthetic, "max_error": self.max_error,
                "marginals": [{"attrs": list(m.attrs), "weight": m.weight, "error": m.error}
                              for m in self.marginals]}


def evaluate(real: np.ndarray, synthetic: np.ndarray, domain: dict[str, int],
             workload: WorkloadSpec = "all-2way") -> EvaluationResult:
    """Workload error of ``synthetic`` against ``real`` (both ``N x d`` codes in the order of
    ``domain``, a ``{"column": size}`` mapping).

    >>> real = np.array([[0, 0], [1, 1]]); synth = np.array([[0, 0], [0, 1]])
    >>> r = evaluate(real, synth, {"a": 2, "b": 2}, "all-1way")
    >>> r.workload_error, [m.error for m in r.marginals]
    (0.5, [1.0, 0.0])
    """
    names = list(domain)
    shape = [int(domain[n]) for n in names]
    for label, arr in (("real", real), ("synthetic", synthetic)):
        if arr.ndim != 2 or arr.shape[1] != len(names):
            raise InvalidArgumentError(f"{label} codes must be N x {len(names)}, "
                                       f"got shape {arr.shape}")
        if len(arr) == 0:
            raise InvalidArgumentError(f"{label} data has no rows")
    work = parse_workload(workload, names)
    out = []
    worst = 0.0
    for attrs, weight in work:
        axes = [names.index(a) for a in attrs]
        diff = marginal(real, axes, shape) - marginal(synthetic, axes, shape)
        out.append(MarginalError(attrs, weight, float(np.abs(diff).sum())))
        worst = max(worst, float(np.abs(diff).max()))
    total = sum(m.weight * m.error for m in out) / len(out)
    return EvaluationResult(total, out, len(real), len(synthetic), worst)


def max_error(real: np.ndarray, synthetic: np.ndarray, domain: dict[str, int],
              workload: WorkloadSpec = "all-2way") -> float:
    """The largest error of a single counting query of the workload, max_q |q(D) − q(D^)| over
    every cell of every marginal (a negation has the same error): the metric of the FEM paper
    (Vietri et al. 2020, Sec. 6). Weights are ignored. Not private (see the module docstring).

    >>> real = np.array([[0, 0], [1, 1]]); synth = np.array([[0, 0], [0, 1]])
    >>> max_error(real, synth, {"a": 2, "b": 2}, "all-1way")
    0.5
    """
    return evaluate(real, synthetic, domain, workload).max_error


# ----------------------------------------------------------------- the PrivPGD paper's metrics
@dataclass(frozen=True)
class TransportMetrics:
    """The metric table of the PrivPGD paper (Donhauser et al. 2024, Sec. 4.1), on the
    embedding x -> (x + 1/2) / k of each column (eq. 4). All lower is better:

    ``tv_2way``: mean total variation over all 2-way marginals (eq. 11; half the L1 workload
    error). ``covariance``: ||Cov(real) - Cov(synth)||_F / ||Cov(real)||_F (the paper prints the
    synthetic covariance in the denominator; the real one cannot be gamed). ``counting``: eq. 9
    over 3-sparse range queries holding for 5-95% of the real rows. ``threshold``: the same
    relative error for 3-sparse halfspaces 1[<theta, x> > b]. ``sw1``: mean over 2-way marginals
    and random directions of W1 of the projected marginals (eq. 10)."""

    tv_2way: float
    covariance: float
    counting: float
    threshold: float
    sw1: float

    def to_dict(self) -> dict[str, float]:
        return {"tv_2way": self.tv_2way, "covariance": self.covariance,
                "counting": self.counting, "threshold": self.threshold, "sw1": self.sw1}


def embed(codes: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The paper's embedding (eq. 4): code c of a column of size k -> (c + 1/2) / k."""
    return (np.asarray(codes, dtype=np.float64) + 0.5) / np.asarray(shape, dtype=np.float64)


def w1_on_grid(p: np.ndarray, q: np.ndarray, points: np.ndarray) -> float:
    """W1 between two distributions with weights ``p`` and ``q`` on the same 1-D ``points``:
    the integral of |F_p - F_q| (Vallender), by sorting the points once."""
    order = np.argsort(points, kind="stable")
    gaps = np.diff(points[order])
    return float(np.sum(np.abs(np.cumsum(p[order] - q[order])[:-1]) * gaps))


def transport_metrics(real: np.ndarray, synthetic: np.ndarray, domain: dict[str, int], *,
                      queries: int = 200, directions: int = 50, seed=0) -> TransportMetrics:
    """The PrivPGD paper's metrics (:class:`TransportMetrics`) of ``synthetic`` against ``real``
    (codes in the order of ``domain``). The random queries and directions come from ``seed``,
    so two synthetic tables are compared on the same ones. Not private (module docstring)."""
    names = list(domain)
    shape = [int(domain[n]) for n in names]
    d = len(names)
    if d < 2:
        raise InvalidArgumentError(f"transport metrics need >= 2 columns, got {d}")
    for label, arr in (("real", real), ("synthetic", synthetic)):
        if arr.ndim != 2 or arr.shape[1] != d or len(arr) == 0:
            raise InvalidArgumentError(f"{label} codes must be N x {d} with N >= 1, got {arr.shape}")
    rng = np.random.default_rng(seed)
    x, y = embed(real, shape), embed(synthetic, shape)
    cov_x, cov_y = np.cov(x, rowvar=False), np.cov(y, rowvar=False) if len(y) > 1 else 0 * np.eye(d)
    covariance = float(np.linalg.norm(cov_x - cov_y) / max(np.linalg.norm(cov_x), 1e-300))

    tv, sw, pairs = 0.0, 0.0, list(itertools.combinations(range(d), 2))
    for a, b in pairs:
        p, q = marginal(real, [a, b], shape), marginal(synthetic, [a, b], shape)
        tv += 0.5 * float(np.abs(p - q).sum())
        ci = np.repeat((np.arange(shape[a]) + 0.5) / shape[a], shape[b])
        cj = np.tile((np.arange(shape[b]) + 0.5) / shape[b], shape[a])
        theta = rng.normal(size=(directions, 2))
        theta /= np.linalg.norm(theta, axis=1, keepdims=True)
        sw += sum(w1_on_grid(p, q, t1 * ci + t2 * cj) for t1, t2 in theta) / directions

    def relative(answers_real, answers_synth):
        return float(np.mean(np.abs(answers_synth - answers_real)) / max(np.mean(answers_real), 1e-300))

    counts_real, counts_synth = [], []
    for _ in range(100 * queries):
        if len(counts_real) == queries:
            break
        attrs = rng.choice(d, size=min(3, d), replace=False)
        lo = [int(rng.integers(shape[a])) for a in attrs]
        hi = [int(rng.integers(low, shape[a])) for low, a in zip(lo, attrs)]
        def hold(codes):
            return np.mean(np.all([(codes[:, a] >= l) & (codes[:, a] <= h)
                                   for a, l, h in zip(attrs, lo, hi)], axis=0))
        share = hold(real)
        if 0.05 <= share <= 0.95:
            counts_real.append(share)
            counts_synth.append(hold(synthetic))
    thresholds_real, thresholds_synth = [], []
    for _ in range(queries):
        attrs = rng.choice(d, size=min(3, d), replace=False)
        theta = rng.normal(size=len(attrs))
        proj_x, proj_y = x[:, attrs] @ theta, y[:, attrs] @ theta
        b = rng.uniform(proj_x.min(), proj_x.max())
        thresholds_real.append(np.mean(proj_x > b))
        thresholds_synth.append(np.mean(proj_y > b))
    counting = (relative(np.array(counts_real), np.array(counts_synth)) if counts_real
                else float("nan"))
    threshold = relative(np.array(thresholds_real), np.array(thresholds_synth))
    return TransportMetrics(tv / len(pairs), covariance, counting, threshold, sw / len(pairs))
