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
