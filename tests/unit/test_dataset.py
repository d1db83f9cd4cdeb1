"""Dataset: construction from arrays, frames and CSV files; every bad-input path raises a
typed error (never a crash); marginals match numpy counts."""
import os

import numpy as np
import pandas as pd
import pytest

from dpcore import _core
from dpcore.dataset import Dataset
from dpcore.domain import Domain
from dpcore.errors import (DomainError, DpcoreTypeError, InvalidArgumentError,
                           TableTooLargeError)
from dpcore.factor import Factor

DOMAIN = Domain(("a", "b", "c"), (2, 3, 4))
RECORDS = np.array([[0, 1, 3], [1, 2, 0], [1, 1, 3], [0, 0, 0]])


def test_project_and_marginals_match_numpy():
    ds = Dataset(RECORDS, DOMAIN)
    assert len(ds) == 4 and ds.domain == DOMAIN and ds.weights is None
    f = ds.project(("c", "a"))
    assert isinstance(f, Factor) and f.attributes == ("c", "a")
    want = np.zeros((4, 2))
    np.add.at(want, (RECORDS[:, 2], RECORDS[:, 0]), 1)
    np.testing.assert_array_equal(f.values, want)
    total, b = ds.marginals([(), ("b",)])
    assert total.values.shape == () and float(total.values) == 4.0
    np.testing.assert_array_equal(b.values, [1, 2, 1])


def test_weights():
    ds = Dataset(RECORDS, DOMAIN, weights=[0.5, 1, 2, 0.25])
    np.testing.assert_allclose(ds.project("a").values, [0.75, 3.0])
    assert not ds.weights.flags.writeable
    with pytest.raises(InvalidArgumentError, match=r"shape \(4,\)"):
        Dataset(RECORDS, DOMAIN, weights=[1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="finite, got nan at row 2"):
        Dataset(RECORDS, DOMAIN, weights=[1.0, 2.0, np.nan, 1.0])
    with pytest.raises(DpcoreTypeError, match="weights must be real"):
        Dataset(RECORDS, DOMAIN, weights=["x"] * 4)


def test_records_are_read_in_place_and_read_only():
    records = np.asfortranarray(RECORDS.astype(np.uint8))
    ds = Dataset(records, DOMAIN)
    assert np.shares_memory(ds.records, records) and not ds.records.flags.writeable


@pytest.mark.parametrize("records, error, match", [
    (RECORDS.astype(float), DpcoreTypeError, "integer codes, got dtype float64"),
    (RECORDS.astype(bool), DpcoreTypeError, "integer codes"),
    (RECORDS[:, :2], InvalidArgumentError, r"N x 3 array.*\(4, 2\)"),
    (RECORDS[0], InvalidArgumentError, "N x 3"),
    (np.array([[0, 1, 3], [1, 3, 0]]), DomainError, "'b'.*row 1.*value 3 not in \\[0, 3\\)"),
    (np.array([[0, 1, -1]], dtype=np.int8), DomainError, "'c'.*row 0.*value -1"),
])
def test_bad_records(records, error, match):
    with pytest.raises(error, match=match):
        Dataset(records, DOMAIN)


def test_bad_domain_type():
    with pytest.raises(DpcoreTypeError, match="dpcore.Domain"):
        Dataset(RECORDS, {"a": 2})


def test_dataframe_input():
    frame = pd.DataFrame(RECORDS[:, ::-1], columns=["c", "b", "a"])
    ds = Dataset(frame, DOMAIN)
    np.testing.assert_array_equal(ds.records, RECORDS)
    with pytest.raises(InvalidArgumentError, match=r"missing columns \['a'\].*unexpected columns \['z'\]"):
        Dataset(frame.rename(columns={"a": "z"}), DOMAIN)
    with pytest.raises(DpcoreTypeError, match="column 'b' must hold integer codes, got dtype float64"):
        Dataset(frame.astype({"b": float}), DOMAIN)
    empty = Dataset(pd.DataFrame({a: pd.Series([], dtype=int) for a in DOMAIN}), DOMAIN)
    assert len(empty) == 0 and empty.project("b").values.tolist() == [0, 0, 0]


def test_csv_round_trip(tmp_path):
    path = tmp_path / "data.csv"
    Dataset(RECORDS, DOMAIN).to_csv(path)
    assert os.listdir(tmp_path) == ["data.csv"]  # no temp file left behind
    back = Dataset.from_csv(path, DOMAIN)
    np.testing.assert_array_equal(back.records, RECORDS)
    np.testing.assert_array_equal(back.to_dataframe().to_numpy(), RECORDS)


@pytest.mark.parametrize("text, error, match", [
    ("a,b\n0,1\n", InvalidArgumentError, r"lacks schema column\(s\) \['c'\]"),
    ("a,b,c,d\n0,1,2,3\n", InvalidArgumentError, r"column\(s\) \['d'\] that are not in"),
    ("a,b,c\n0,1,2\n1,x,0\n", InvalidArgumentError, "column 'b', row 2: the value is not"),
    ("a,b,c\n0,1,2\n1,,0\n", InvalidArgumentError, "column 'b', row 2"),
    ("a,b,c\n0,1.5,2\n", InvalidArgumentError, "column 'b', row 1: the value is not an integer code"),
    ("a,b,c\n0,1,2\n1,1,9\n", InvalidArgumentError, "column 'c', row 2.*0..3"),
    ("a,b,c\n0,1,2,\n", InvalidArgumentError, "row 1 has 4 fields but the header has 3"),
    ("", InvalidArgumentError, "empty"),
])
def test_bad_csv(tmp_path, text, error, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(error, match=match):
        Dataset.from_csv(path, DOMAIN)


def test_csv_columns_in_another_order(tmp_path):
    path = tmp_path / "perm.csv"
    path.write_text("c,a,b\n3,0,1\n0,1,2\n")
    np.testing.assert_array_equal(Dataset.from_csv(path, DOMAIN).records, [[0, 1, 3], [1, 2, 0]])


def test_marginal_errors():
    ds = Dataset(RECORDS, DOMAIN)
    with pytest.raises(InvalidArgumentError, match="'z' is not in the domain"):
        ds.project("z")
    with pytest.raises(DpcoreTypeError, match="list of attribute tuples"):
        ds.marginals("ab")
    big = Domain([f"x{i}" for i in range(20)], [2**32] * 20)
    wide = Dataset(np.zeros((1, 20), dtype=np.int64), big)
    with pytest.raises(TableTooLargeError, match="2\\^64"):
        wide.project(big.attrs)
    with pytest.raises(TableTooLargeError, match="memory cap"):
        wide.project(big.attrs[:1])


def test_core_rejects_bad_inputs_with_typed_errors():
    """The binding itself, below the facade: typed errors, never a crash."""
    X = np.zeros((3, 2), dtype=np.int64)
    cases = [
        (lambda: _core.count_marginals(X.astype(float), [2, 2], [[0]]), DpcoreTypeError),
        (lambda: _core.count_marginals([[0, 1]], [2, 2], [[0]]), DpcoreTypeError),
        (lambda: _core.count_marginals(X, [2], [[0]]), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 0], [[0]]), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2.5], [[0]]), DpcoreTypeError),
        (lambda: _core.count_marginals(X, [2, 2], [[5]]), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[-1]]), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[0, 0]]), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [0]), DpcoreTypeError),
        (lambda: _core.count_marginals(X[0], [2, 2], [[0]]), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[0]], np.ones(2)), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[0]], np.ones((3, 1))), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[0]], np.array([1, np.inf, 1])),
         InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[0]], np.array(["a"] * 3)), DpcoreTypeError),
        (lambda: _core.count_marginals(X, [2, 2], [[0]], threads=-2), InvalidArgumentError),
        (lambda: _core.count_marginals(X, [2, 2], [[0, 1]], max_cells=3), TableTooLargeError),
        (lambda: _core.count_marginals(X - 1, [2, 2], [[0]]), DomainError),
        (lambda: _core.validate_codes(X + 2, [2, 2]), DomainError),
    ]
    for call, error in cases:
        with pytest.raises(error):
            call()


def test_non_native_byte_order_and_views_are_counted_correctly():
    swapped = RECORDS.astype(RECORDS.dtype.newbyteorder(">" if np.little_endian else "<"))
    ds = Dataset(swapped, DOMAIN)
    np.testing.assert_array_equal(ds.project(("a", "c")).values,
                                  Dataset(RECORDS, DOMAIN).project(("a", "c")).values)
    view = np.repeat(RECORDS, 2, axis=0)[::2]  # a strided view, read in place
    np.testing.assert_array_equal(Dataset(view, DOMAIN).project("b").values, [1, 2, 1])
