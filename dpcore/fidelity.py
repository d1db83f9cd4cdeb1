"""Raw-value fidelity: how the synthetic *values* compare with the real ones, beyond marginals.

Marginal errors are measured on codes, so a numeric column can look fine there while its values
are distorted inside the bins (a zero-heavy column decoded uniformly over a bin [0, 2) loses all
its zeros). This module compares decoded values:

* per numeric column: mean, quantiles and the share of each *point mass* (a value holding at
  least ``point_mass`` of the real rows, e.g. the 0 of a zero-heavy count);
* pairwise Pearson correlations of the numeric columns (real, synthetic, difference);
* train on synthetic, test on real (TSTR): a classifier for a chosen target column trained on the
  synthetic table and scored on real rows, beside the same model trained on real rows
  (needs scikit-learn: ``pip install 'dpcore[eval]'``).

Everything here reads the real data: it is for the data steward and is not private.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dpcore.datetimes import DatetimeColumn
from dpcore.errors import InvalidArgumentError
from dpcore.schema import NumericColumn, Schema

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class ColumnStats:
    """Raw statistics of one numeric column in the real and the synthetic table."""

    name: str
    mean: tuple[float, float]                      # (real, synthetic)
    quantiles: tuple[tuple[float, float], ...]     # one (real, synthetic) pair per QUANTILES
    point_masses: tuple[tuple[float, float, float], ...] = ()   # (value, real share, synth share)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "mean": list(self.mean),
                "quantiles": {str(q): list(v) for q, v in zip(QUANTILES, self.quantiles)},
                "point_masses": [{"value": v, "real": r, "synthetic": s}
                                 for v, r, s in self.point_masses]}


@dataclass(frozen=True)
class Fidelity:
    columns: tuple[ColumnStats, ...]
    correlation_names: tuple[str, ...]
    correlation_real: np.ndarray
    correlation_synthetic: np.ndarray
    tstr: dict[str, Any] | None = field(default=None)

    @property
    def max_correlation_gap(self) -> float:
        if not self.correlation_names:
            return 0.0
        gap = np.abs(self.correlation_real - self.correlation_synthetic)
        return float(np.nanmax(gap)) if np.isfinite(gap).any() else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"columns": [c.to_dict() for c in self.columns],
                "correlations": {"columns": list(self.correlation_names),
                                 "real": _matrix(self.correlation_real),
                                 "synthetic": _matrix(self.correlation_synthetic),
                                 "max_abs_difference": self.max_correlation_gap},
                "tstr": self.tstr}


def _matrix(m: np.ndarray) -> list[list[float | None]]:
    return [[None if not np.isfinite(x) else float(x) for x in row] for row in m]


def numeric_values(frame: pd.DataFrame, schema: Schema, name: str,
                   missing_values: Sequence[str] = ("",)) -> np.ndarray:
    """A column as floats (missing tokens and unparsable text as NaN)."""
    series = frame[name]
    if series.dtype == object:
        series = series.where(~series.isin(list(missing_values)))
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)


def compare(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, *,
            point_mass: float = 0.05) -> Fidelity:
    """Column statistics and correlations of the numeric columns of ``schema``."""
    if not 0 < point_mass < 1:
        raise InvalidArgumentError(f"point_mass must be in (0, 1), got {point_mass}")
    numeric = [c.name for c in schema.columns
               if isinstance(c, NumericColumn) and not isinstance(c, DatetimeColumn)]
    stats, real_cols, synth_cols = [], [], []
    for name in numeric:
        r = numeric_values(real, schema, name, schema.missing_values)
        s = numeric_values(synthetic, schema, name, schema.missing_values)
        r, s = r[np.isfinite(r)], s[np.isfinite(s)]
        real_cols.append(r)
        synth_cols.append(s)
        if not len(r) or not len(s):
            continue
        values, counts = np.unique(r, return_counts=True)
        masses = tuple((float(v), float(c / len(r)), float(np.mean(s == v)))
                       for v, c in zip(values, counts) if c / len(r) >= point_mass)
        stats.append(ColumnStats(
            name, (float(r.mean()), float(s.mean())),
            tuple((float(a), float(b)) for a, b in zip(np.quantile(r, QUANTILES),
                                                       np.quantile(s, QUANTILES))),
            masses))
    names = tuple(n for n, r, s in zip(numeric, real_cols, synth_cols) if len(r) > 1 and len(s) > 1)
    return Fidelity(tuple(stats), names, _correlations(real, schema, names),
                    _correlations(synthetic, schema, names))


def _correlations(frame: pd.DataFrame, schema: Schema, names: Sequence[str]) -> np.ndarray:
    if not names:
        return np.zeros((0, 0))
    table = pd.DataFrame({n: numeric_values(frame, schema, n, schema.missing_values) for n in names})
    with np.errstate(invalid="ignore", divide="ignore"):
        return table.corr(method="pearson").to_numpy()


def train_synthetic_test_real(real_codes: np.ndarray, synthetic_codes: np.ndarray,
                              schema: Schema, target: str, *, seed: int = 0) -> dict[str, Any]:
    """TSTR for ``target``: a gradient-boosted classifier on the other columns' codes, trained
    on the synthetic rows and, as the reference, on 70 % of the real rows; both scored on the
    other 30 % of the real rows (accuracy, and ROC AUC for a binary target)."""
    if target not in schema.names:
        raise InvalidArgumentError(f"target must be a schema column, got {target!r}")
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import accuracy_score, roc_auc_score
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise InvalidArgumentError("train-on-synthetic/test-on-real needs scikit-learn: "
                                   "pip install 'dpcore[eval]'") from None
    j = list(schema.names).index(target)
    features = [k for k in range(len(schema)) if k != j]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(real_codes))
    cut = int(0.7 * len(order))
    train_real, test = real_codes[order[:cut]], real_codes[order[cut:]]
    # Codes are categories for the trees, except past 255 codes (then ordinal, as binned numbers).
    categorical = np.array([schema.columns[k].size <= 255 for k in features], dtype=bool)

    def score(train: np.ndarray) -> dict[str, float]:
        y = train[:, j]
        if len(np.unique(y)) < 2:
            return {"accuracy": float(np.mean(test[:, j] == y[0])), "roc_auc": None}
        model = HistGradientBoostingClassifier(categorical_features=categorical,
                                               random_state=seed, max_iter=100)
        model.fit(train[:, features].astype(np.float64), y)
        x = test[:, features].astype(np.float64)
        out = {"accuracy": float(accuracy_score(test[:, j], model.predict(x))), "roc_auc": None}
        classes = list(model.classes_)
        if len(classes) == 2 and len(np.unique(test[:, j])) == 2:
            out["roc_auc"] = float(roc_auc_score(test[:, j] == classes[1],
                                                 model.predict_proba(x)[:, 1]))
        return out

    # One thread: OpenMP workers that spin on a busy machine made a 0.3 s fit take 20 s.
    with threadpool_limits(1):
        return {"target": target, "train_synthetic": score(synthetic_codes),
                "train_real": score(train_real), "test_rows": int(len(test))}
