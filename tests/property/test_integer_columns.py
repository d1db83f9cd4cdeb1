"""Machine-integer columns (a Parquet file's, a DataFrame's) are encoded once per distinct
value (:func:`dpcore.encoding._encode_integers`): the same codes, and the same error (message,
row), as encoding every value on its own, for dense and sparse ranges and every column kind."""
from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.encoding import EncodingError, _encode_column, _encode_integers
from dpcore.schema import Schema

COLUMNS = {
    "binned": {"type": "numeric", "lower": -50, "upper": 1000, "bins": 7, "integer": True},
    "clipped": {"type": "numeric", "lower": 0, "upper": 90, "bins": 5, "integer": True,
                "out_of_bounds": "clip"},
    "real": {"type": "numeric", "lower": -1e6, "upper": 3e6, "bins": 4},
    "points": {"type": "numeric", "lower": 0, "upper": 40, "bins": 4, "integer": True,
               "points": [0, 5, 40]},
    "category": {"type": "categorical", "categories": ["1", "2", "40"], "other": "rest"},
    "code": {"type": "code", "size": 30},
}
# the token is a value no column holds (a schema refuses one that a column can hold); the
# draws below reach it (-1 x 10^9)
SCHEMA = Schema.from_dict({"missing_values": ["", "-1000000000"], "columns": COLUMNS})


def _outcome(encode, col, series, offset):
    try:
        return encode(col, series, SCHEMA.missing_values, offset, False).tolist()
    except EncodingError as err:
        return str(err), err.row


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(COLUMNS)), st.sampled_from(["int64", "int32", "uint16", "int8"]),
       st.integers(0, 2), st.lists(st.integers(-60, 1100), min_size=1, max_size=60),
       st.integers(0, 10 ** 6))
def test_distinct_values_encode_as_every_value(name, dtype, spread, values, offset):
    col = next(c for c in SCHEMA.columns if c.name == name)
    info = np.iinfo(dtype)
    scale = (1, 1000, 10 ** 9)[spread]          # dense, sparse and very sparse ranges
    raw = np.clip(np.array(values, dtype=np.int64) * scale, info.min, info.max)
    series = pd.Series(raw.astype(dtype))
    assert _outcome(_encode_integers, col, series, offset) == \
        _outcome(_encode_column, col, series, offset)


EXTREMES = {"uint64": [0, 1, 40, 999, 2 ** 63 - 1, 2 ** 63, 2 ** 63 + 5, 2 ** 64 - 1],
            "int64": [-2 ** 63, -2 ** 63 + 1, -51, 0, 40, 999, 2 ** 63 - 2, 2 ** 63 - 1]}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(list(COLUMNS)), st.sampled_from(sorted(EXTREMES)), st.data())
def test_values_at_the_machine_limits_encode_as_every_value(name, dtype, data):
    """Audit 17 F2: a uint64 column holding values >= 2^63 wrapped to negatives in the dense
    path (a raw OverflowError instead of the out-of-bounds error)."""
    col = next(c for c in SCHEMA.columns if c.name == name)
    values = data.draw(st.lists(st.sampled_from(EXTREMES[dtype]), min_size=1, max_size=30))
    series = pd.Series(np.array(values, dtype=dtype))
    assert _outcome(_encode_integers, col, series, 0) == _outcome(_encode_column, col, series, 0)


def test_a_long_column_takes_the_distinct_value_path_and_agrees():
    rng = np.random.default_rng(0)
    col = next(c for c in SCHEMA.columns if c.name == "binned")
    for values in (rng.integers(-50, 1001, 50_000), rng.integers(0, 10 ** 9, 50_000) % 1001):
        series = pd.Series(values)
        assert np.array_equal(_encode_integers(col, series, [], 0, False),
                              _encode_column(col, series, [], 0, False))
    bad = pd.Series(rng.integers(0, 1000, 50_000))
    bad.iloc[31_337] = 5000
    with pytest.raises(EncodingError, match="row 31338: .*above the upper bound"):
        _encode_integers(col, bad, [], 0, False)


# Integer columns whose bounds lie where doubles are 1 or more apart (2^52 on; the schema
# holds integer bounds within +-2^53)
LARGE = [2 ** 52, 2 ** 52 + 7, 2 ** 53 - 1, 2 ** 53]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LARGE), st.booleans(), st.integers(-4, 4),
       st.sampled_from(["", ".5", ".25"]),
       st.sampled_from(["int64", "text", "object"]), st.booleans())
def test_large_integers_are_checked_exactly(bound, negative, delta, fraction, kind, clip):
    """An integer column's value is refused when it is not an integer or lies outside the
    bounds, judged on the integer or text given, not on the double it rounds to (2^53 + 1
    rounded onto an upper bound of 2^53 was accepted; 2^52 + 0.5 onto an integer)."""
    sign = -1 if negative else 1
    lower, upper = (-bound, 0) if negative else (0, bound)
    col = Schema.from_dict({"columns": {"x": {
        "type": "numeric", "lower": lower, "upper": upper, "bins": 4, "integer": True,
        "out_of_bounds": "clip" if clip else "error"}}}).columns[0]
    whole = sign * bound + delta
    if kind != "text":   # an integer holds no fraction
        fraction = ""
    text = f"{whole}{fraction}" if whole >= 0 or not fraction else f"-{-whole}{fraction}"
    value = {"int64": np.int64(whole), "text": text, "object": whole}[kind]
    series = pd.Series([5 * sign, value], dtype=np.int64 if kind == "int64" else object)
    try:
        codes = _encode_column(col, series, [], 0, False).tolist()
    except EncodingError as err:
        assert err.row == 2
        if fraction:
            assert "not an integer" in str(err)
        else:
            assert not lower <= whole <= upper and not clip and "bound" in str(err)
        return
    assert not fraction and (clip or lower <= whole <= upper)
    top = 3 if whole >= upper else 0 if whole <= lower else None   # clipped or at a bound
    if top is not None:
        assert codes[1] == top


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 90), st.integers(0, 25), st.sampled_from(["", "0", "1", "5"]),
       st.sampled_from(["", "e0", "e1", "E-1", "e+2"]), st.sampled_from(["clipped", "code"]))
def test_integer_texts_are_read_exactly(whole, zeros, digit, exponent, name):
    """A text in an integer or code column is an integer when its decimal is, however close
    to one its double is: '1.0000000000000001' was read as 1 (the double loses the digit)."""
    col = next(c for c in SCHEMA.columns if c.name == name)
    text = f"{whole}.{'0' * zeros}{digit}{exponent}"
    exact = Decimal(text)
    series = pd.Series(["3", text], dtype=object)
    try:
        codes = _encode_column(col, series, [], 0, False).tolist()
    except EncodingError as err:
        assert err.row == 2
        upper = 90 if name == "clipped" else 29
        assert exact != exact.to_integral_value() or (name == "code" and not 0 <= exact <= upper)
        return
    assert exact == exact.to_integral_value()
    if name == "code":
        assert codes[1] == int(exact)


@pytest.mark.parametrize("text, integer", [("0e99999999999999999999", True),
                                           ("1e-99999999999999999999", False),
                                           ("0.0e-1234567890123456789", True),
                                           ("25e-99999999999999999999999", False)])
def test_texts_with_exponents_past_decimals_range_are_judged_not_crashed(text, integer):
    """Review 18: an exponent of 19 digits or more raised decimal.InvalidOperation (a raw
    traceback from dpcore synth); its double is 0, the text is 0 or a fraction."""
    col = next(c for c in SCHEMA.columns if c.name == "code")
    series = pd.Series(["3", text], dtype=object)
    if integer:
        assert _encode_column(col, series, [], 0, False).tolist() == [3, 0]
    else:
        with pytest.raises(EncodingError, match="not an integer"):
            _encode_column(col, series, [], 0, False)


def test_a_missing_value_does_not_hide_a_large_integer():
    """Review 18: a nullable column holding a missing value skipped the exact check (the
    largest |value| was NaN), so 2^53 + 1 over an upper bound of 2^53 was accepted."""
    col = Schema.from_dict({"missing_values": [""], "columns": {"x": {
        "type": "numeric", "lower": 0, "upper": 2 ** 53, "bins": 4, "integer": True,
        "missing": "code"}}}).columns[0]
    series = pd.Series([5, 2 ** 53 + 1, None], dtype="Int64")
    with pytest.raises(EncodingError, match="above the upper bound"):
        _encode_column(col, series, [], 0, False)
