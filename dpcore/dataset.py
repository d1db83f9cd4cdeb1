"""Datasets: integer-coded records over a Domain, with optional per-record weights.

A :class:`Dataset` holds the codes as an N x d integer array in domain column order (C or
Fortran order, any integer dtype: the kernels read it in place). Every code is checked on
construction, so marginals never see an out-of-range value. Marginals are counted by the
compiled kernel ``dpcore._core.count_marginals``, one batched call for many attribute sets.
"""
from __future__ import annotations

import copy
import os
import tempfile

import numpy as np
import pandas as pd

from dpcore import _core
from dpcore.domain import Domain
from dpcore.errors import DomainError, DpcoreTypeError, InvalidArgumentError
from dpcore.files import replace_into

__all__ = ["Dataset"]


def _attr_tuple(attrs) -> tuple:
    return (attrs,) if isinstance(attrs, str) else tuple(attrs)


def _check_columns(columns, domain: Domain, where: str) -> None:
    """Names the missing and the unexpected columns when ``columns`` != the domain's."""
    columns = [str(c) for c in columns]
    missing = [a for a in domain.attrs if a not in columns]
    extra = [c for c in columns if c not in domain]
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    problems = []
    if missing:
        problems.append(f"missing columns {missing}")
    if extra:
        problems.append(f"unexpected columns {extra}")
    if duplicated:
        problems.append(f"duplicated columns {duplicated}")
    if problems:
        raise InvalidArgumentError(
            f"{where} must have exactly the domain's columns {list(domain.attrs)}: "
            + "; ".join(problems))


def _frame_codes(frame: pd.DataFrame, domain: Domain, where: str) -> np.ndarray:
    """The frame's columns in domain order as one integer array."""
    _check_columns(frame.columns, domain, where)
    for name in domain.attrs:
        dtype = frame[name].dtype
        if not pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_extension_array_dtype(dtype):
            raise DpcoreTypeError(
                f"{where}: column {name!r} must hold integer codes, got dtype {dtype}")
    return frame.loc[:, list(domain.attrs)].to_numpy()


def _parse_codes(text: pd.Series, name: str, path: str) -> np.ndarray:
    """A CSV column read as strings, parsed to int64; the first bad cell is named."""
    numeric = pd.to_numeric(text.str.strip(), errors="coerce")
    bad = numeric.isna() | (numeric != np.floor(numeric))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DpcoreTypeError(
            f"{path}: column {name!r} must hold integer codes, got {text.iloc[row]!r} at "
            f"row {row} (line {row + 2})")
    return numeric.to_numpy(dtype=np.int64)


_SOFT_COUNT_ROWS = 1 << 20     # rows a block of Dataset.soft_count (bounded scratch memory)


class Dataset:
    """Integer-coded records over ``domain`` and optional per-record ``weights``.

    ``records`` is an N x d integer array (columns in domain order, C or Fortran order, any
    integer dtype; kept as a read-only view, not copied) or a DataFrame with exactly the
    domain's columns. Codes must lie in ``[0, size)``; a bad one raises ``DomainError``
    naming its column, row and value.

    >>> ds = Dataset(np.array([[0, 1], [1, 1], [1, 0]]), Domain(("a", "b"), (2, 2)))
    >>> ds.project("a").values.tolist()
    [1.0, 2.0]
    """

    __slots__ = ("_records", "_domain", "_weights")

    def __init__(self, records, domain: Domain, weights=None):
        if not isinstance(domain, Domain):
            raise DpcoreTypeError(f"domain must be a dpcore.Domain, got {type(domain).__name__}")
        if isinstance(records, pd.DataFrame):
            records = _frame_codes(records, domain, "records")
        elif not isinstance(records, np.ndarray):
            records = np.asarray(records)
            if records.size == 0 and records.ndim == 1:  # [] has no column count
                records = np.zeros((0, len(domain)), dtype=np.int64)
        if records.dtype.kind not in "iu":
            raise DpcoreTypeError(f"records must hold integer codes, got dtype {records.dtype}")
        if records.ndim != 2 or records.shape[1] != len(domain):
            raise InvalidArgumentError(
                f"records must be an N x {len(domain)} array (one column per domain "
                f"attribute), got shape {records.shape}")
        _core.validate_codes(records, list(domain.shape), names=list(domain.attrs))
        view = records.view()
        view.flags.writeable = False
        self._records = view
        self._domain = domain
        self._weights = None if weights is None else self._check_weights(weights, len(view))

    def _with_weights(self, weights) -> "Dataset":
        """A shallow copy (the same type, records and state) holding ``weights`` instead."""
        out = copy.copy(self)
        out._weights = self._check_weights(weights, len(self._records))
        return out

    @staticmethod
    def _check_weights(weights, rows: int) -> np.ndarray:
        array = np.asarray(weights)
        if array.dtype.kind not in "iuf":
            raise DpcoreTypeError(f"weights must be real numbers, got dtype {array.dtype}")
        array = np.array(array, dtype=np.float64)  # a private copy: weights are small
        if array.shape != (rows,):
            raise InvalidArgumentError(
                f"weights must have shape ({rows},) (one per record), got {array.shape}")
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            raise InvalidArgumentError(
                f"weights must be finite, got {array[bad[0]]} at row {int(bad[0])}")
        array.flags.writeable = False
        return array

    # -- I/O ---------------------------------------------------------------------------------
    @classmethod
    def from_csv(cls, path, domain: Domain) -> Dataset:
        """Reads integer codes from a CSV whose header holds exactly the domain's columns
        (in any order; missing, repeated or unexpected columns are named in the error). The
        strict reader of :func:`dpcore.encoding.read_codes`: a ragged row or a trailing
        delimiter is an error naming the row, never a silent shift of the columns. The codes
        keep the reader's smallest unsigned dtype (1 byte a cell for sizes up to 256)."""
        from dpcore.encoding import read_codes
        from dpcore.schema import Schema
        schema = Schema.from_dict(domain.to_dict())
        return cls(read_codes(os.fspath(path), schema), domain)

    def to_csv(self, path) -> None:
        """Writes the codes with a header, atomically (temp file + rename). Weights are not
        part of the CSV format and are not written."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".dataset-", suffix=".csv.tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
                self.to_dataframe().to_csv(f, index=False)
            replace_into(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def to_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(self._records, columns=list(self._domain.attrs))

    # -- views -------------------------------------------------------------------------------
    @property
    def records(self) -> np.ndarray:
        return self._records

    @property
    def domain(self) -> Domain:
        return self._domain

    @property
    def weights(self) -> np.ndarray | None:
        return self._weights

    def __len__(self) -> int:
        return int(self._records.shape[0])

    def __repr__(self) -> str:
        return f"Dataset(rows={len(self)}, domain={self._domain!r})"

    # -- marginals ---------------------------------------------------------------------------
    def project(self, attrs):
        """The count table (a Factor) over ``attrs``, in the order given."""
        return self.marginals([_attr_tuple(attrs)])[0]

    def marginals(self, attr_sets) -> list:
        """Count tables (Factors) over each attribute tuple, in one batched kernel call.
        Each table's attributes are in the order given; weights, if any, are summed."""
        from dpcore.factor import Factor

        if isinstance(attr_sets, str):
            raise DpcoreTypeError("marginals() takes a list of attribute tuples, got a string")
        domains = [self._domain.project(_attr_tuple(attrs)) for attrs in attr_sets]
        index = self._domain._index     # the attributes were checked by project
        subsets = [[index[a] for a in d.attrs] for d in domains]
        tables = _core.count_marginals(self._records, list(self._domain.shape), subsets,
                                       self._weights, names=list(self._domain.attrs))
        # the kernel's tables are float64, C-ordered and shaped by the subset: no re-check
        # (_trusted sends anything else through the checking constructor)
        return [Factor._trusted(d, t) for d, t in zip(domains, tables)]

    def soft_count(self, scores, threshold: float, sharpness: float, grid: int) -> int:
        """The soft count on the integer grid: sum over records r of
        ``rint(grid * w_r * sigmoid(sharpness * (score_r - threshold)))``, an exact int, where
        score_r = sum over attributes a of ``scores[a][x_ra]`` (``scores``: one float64 vector
        per domain attribute in domain order, or None for an attribute that adds nothing) and
        w_r the record's weight (1 without weights). Each record adds an integer in
        [0, grid] (a non-finite term counts 0, the rest is clipped: the curator's sensitivity
        argument rests on it). Callers keep the scores, threshold and sharpness finite and
        small enough that no sum overflows."""
        from scipy.special import expit

        records, weights = self._records, self._weights
        total = 0
        for start in range(0, len(records), _SOFT_COUNT_ROWS):
            block = records[start:start + _SOFT_COUNT_ROWS]
            score = np.zeros(len(block))
            for axis, table in enumerate(scores):
                if table is not None:
                    score += table[block[:, axis]]
            value = expit(sharpness * (score - threshold))
            if weights is not None:
                value *= weights[start:start + _SOFT_COUNT_ROWS]
            # a NaN would pass the clip and cast to INT64_MIN: no term is outside [0, grid]
            value = np.where(np.isfinite(value), value, 0.0)
            total += int(np.clip(np.rint(value * grid), 0, grid).astype(np.int64).sum())
        return total
