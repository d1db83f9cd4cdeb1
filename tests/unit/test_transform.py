"""NIST-MST's Alg. 3 transform and Alg. 9-10 reverse (mechanisms/transform.py)."""
import doctest

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechanisms.transform as transform_module
from dpcore.encoding import encode_frame
from dpcore.errors import InvalidArgumentError
from dpcore.schema import Schema
from mechanisms.transform import MODULI, Grid, Split, Transform

SCHEMA = Schema.from_dict({"missing_values": ["N"], "columns": {
    "value": {"type": "numeric", "lower": 0, "upper": 9999999, "bins": 10, "integer": True,
              "missing": "code"},
    "wage": {"type": "numeric", "lower": -9000, "upper": 9999999, "bins": 10, "integer": True},
    "sex": {"type": "categorical", "categories": ["F", "M"]}}})


def test_doctests():
    result = doctest.testmod(transform_module)
    assert result.attempted > 0 and result.failed == 0


def census_like(n, seed):
    """VALUEH-like (multiples of 5 up to 25000, 2 sentinels) and INCWAGE-like columns."""
    rng = np.random.default_rng(seed)
    value = 5 * rng.integers(0, 5001, n)
    value = np.where(rng.random(n) < 0.03, 9999998, np.where(rng.random(n) < 0.03, 9999999, value))
    wage = np.where(rng.random(n) < 0.7, 100 * rng.integers(-90, 51, n), rng.integers(-9000, 5001, n))
    return pd.DataFrame({"value": value, "wage": wage, "sex": rng.choice(["F", "M"], n)})


def test_grid_finds_the_papers_valueh_domain():
    """Sec. 5, Step 3: multiples of 5 up to 25,000 and the two sentinels: 5003 values."""
    t = Transform.from_public(census_like(20000, 0), SCHEMA, {"value": "grid"}, coverage=1.0)
    m = t.maps["value"]
    assert (m.step, m.cutoff, m.specials) == (5, 25000, (9999998, 9999999))
    assert t.schema.domain_dict()["value"] == 5003 + 1          # + the missing code


def test_split_columns_and_sizes():
    t = Transform.from_public(census_like(5000, 1), SCHEMA, {"wage": "split"})
    assert t.schema.names == ("value", "wage_A", "wage_B", "sex")
    m = t.maps["wage"]
    assert m.cutoff == 5000 and t.schema.domain_dict()["wage_A"] == 5000 // 100 + 90 + 1
    assert t.schema.domain_dict()["wage_B"] == 8 and t.schema["wage_B"].missing == "error"


def test_residue_classes_are_alg_10():
    """Brute force of Alg. 10: class k holds the residues divisible by m_k and by no m_i, i < k."""
    left = set(range(100))
    expected = []
    for m in MODULI:
        cls = {r for r in left if r % m == 0}
        left -= cls
        expected.append(sorted(cls))
    split = Split("x", 0, 10 ** 6, 100, 10 ** 6)
    assert [c.tolist() for c in split.classes()] == expected
    assert [c.tolist() for c in Split("x", 0, 10 ** 6, 10, 10 ** 6).classes()] == [
        [0], [5], [2, 4, 6, 8], [1, 3, 7, 9]]           # width 10 leaves classes empty


@settings(max_examples=60, deadline=None)
@given(lower=st.integers(-1000, 1000), step=st.sampled_from([1, 2, 5, 25, 100]),
       span=st.integers(2, 300), specials=st.lists(st.integers(10 ** 6, 10 ** 6 + 50),
                                                   max_size=3, unique=True),
       data=st.data())
def test_grid_round_trip_on_covered_values(lower, step, span, specials, data):
    upper = 2 * 10 ** 6
    schema = Schema.from_dict({"columns": {"v": {"type": "numeric", "lower": lower,
                                                 "upper": upper, "bins": 4, "integer": True}}})
    grid = Grid("v", lower, step, lower + span * step, tuple(specials))
    t = Transform(schema, {"v": grid})
    on_grid = [g * step for g in range(-(-lower // step), (lower + span * step) // step + 1)]
    values = data.draw(st.lists(st.sampled_from(on_grid + specials), min_size=1, max_size=30))
    moved = t.apply(pd.DataFrame({"v": values}))
    encode_frame(moved, t.schema)                        # inside the transformed domain
    assert t.reverse(moved)["v"].tolist() == values


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-9000, 5000), min_size=1, max_size=40),
       seed=st.integers(0, 2 ** 32))
def test_split_keeps_coarse_value_and_residue_class_exactly(values, seed):
    t = Transform(SCHEMA, {"wage": Split("wage", -9000, 9999999, 100, 5000, (9999998,))})
    frame = pd.DataFrame({"value": 5, "wage": values + [9999998], "sex": "F"})
    moved = t.apply(frame)
    back = t.reverse(moved, seed=seed)
    again = t.apply(back)
    pd.testing.assert_frame_equal(again, moved)          # same A, same class B
    pinned = [v for v in values if v % 50 == 0]          # classes {0} and {50}: exact
    assert back["wage"][[v % 50 == 0 for v in values] + [True]].tolist() == pinned + [9999998]


def test_missing_values_pass_through():
    t = Transform.from_public(census_like(3000, 2), SCHEMA, {"value": "grid", "wage": "split"})
    frame = pd.DataFrame({"value": ["N", "25"], "wage": ["100", "-50"], "sex": ["F", "M"]})
    moved = t.apply(frame)
    codes = encode_frame(moved, t.schema)
    assert codes[0, 0] == t.schema["value"].missing_code
    assert t.reverse(moved, seed=0)["value"].isna().tolist() == [True, False]


def test_built_from_public_data_only():
    """The transform is a function of the public table and the schema: the same public table
    gives the same maps, another public table gives other maps."""
    a = Transform.from_public(census_like(4000, 3), SCHEMA, {"value": "grid", "wage": "split"})
    b = Transform.from_public(census_like(4000, 3), SCHEMA, {"value": "grid", "wage": "split"})
    assert a.to_dict() == b.to_dict()
    other = census_like(4000, 3).assign(
        value=lambda f: np.where(f["value"] < 9999998, 2 * f["value"], f["value"]))
    c = Transform.from_public(other, SCHEMA, {"value": "grid", "wage": "split"})
    assert c.to_dict()["value"] != a.to_dict()["value"]


def test_auto_picks_wide_integer_columns_and_split_only_when_periodic():
    t = Transform.from_public(census_like(5000, 4), SCHEMA, "auto")
    assert sorted(t.maps) == ["value", "wage"]
    assert isinstance(t.maps["value"], Grid) and isinstance(t.maps["wage"], Split)
    noisy = census_like(5000, 4).assign(wage=lambda f: np.random.default_rng(0).integers(-9000, 5000, len(f)))
    assert isinstance(Transform.from_public(noisy, SCHEMA, "auto").maps["wage"], Grid)


@pytest.mark.parametrize("columns, message", [
    ({"sex": "grid"}, "must be numeric with integer: true"),
    ({"nope": "grid"}, "not in the schema"),
    ({"value": "zigzag"}, "pattern must be one of"),
    ({"value": {"pattern": "grid", "width": 3}}, "unknown grid option"),
    ("everything", "must be 'auto'"),
])
def test_bad_options_are_typed_errors(columns, message):
    with pytest.raises(InvalidArgumentError, match=message):
        Transform.from_public(census_like(100, 5), SCHEMA, columns)


def test_bad_values_name_where_column_and_row_but_not_the_value():
    t = Transform.from_public(census_like(1000, 6), SCHEMA, {"wage": "split"})
    frame = pd.DataFrame({"value": [1, 2], "wage": ["7", "12.5"], "sex": ["F", "M"]})
    with pytest.raises(InvalidArgumentError, match=r"^sensitive, column 'wage', row 2: the value "
                                                   r"is not an integer$"):
        t.apply(frame, where="sensitive")
    with pytest.raises(InvalidArgumentError, match="public data, column 'wage', row 1: .*bounds"):
        Transform.from_public(pd.DataFrame({"value": [1], "wage": [-10 ** 6], "sex": ["F"]}),
                              SCHEMA, {"wage": "split"})
