"""Point masses in numeric columns: a value that is its own bin anywhere in the range, and the
drafting rules that find them (and few-valued numbers) in `schema infer`."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from dpcore.encoding import bin_codes, decode_codes, encode_frame, infer_schema
from dpcore.schema import Schema, SchemaError, integer_bin_range


def _schema(spec):
    return Schema.from_dict({"columns": {"x": {"type": "numeric", **spec}}})


def test_points_split_their_bins_and_decode_exactly():
    s = _schema({"lower": 0, "upper": 12, "bins": 4, "integer": True, "points": [0, 5, 12]})
    runs = [integer_bin_range(s["x"].edges, k) for k in range(s["x"].bins)]
    assert runs == [(0, 0), (1, 2), (3, 4), (5, 5), (6, 8), (9, 11), (12, 12)]
    values = pd.DataFrame({"x": [0, 1, 2, 5, 6, 12, 11, 4]})
    codes = encode_frame(values, s)[:, 0].tolist()
    assert codes == [0, 1, 1, 3, 4, 6, 5, 2]
    f = _schema({"lower": 0, "upper": 1, "bins": 2, "points": [0.25]})
    assert f["x"].edges == (0, 0.25, 0.25, 0.5, 1)          # floats: [0, .25), {.25}, (.25, .5)
    assert encode_frame(pd.DataFrame({"x": [0.25, 0.3, 0.2]}), f)[:, 0].tolist() == [1, 2, 0]
    many = decode_codes(np.repeat(np.arange(s["x"].bins), 200)[:, None], s, seed=1)["x"].to_numpy()
    bins = np.repeat(np.arange(s["x"].bins), 200)
    for k in range(s["x"].bins):
        a, b = integer_bin_range(s["x"].edges, k)
        got = many[bins == k]
        assert got.min() >= a and got.max() <= b, (k, a, b)
    assert set(many[bins == 0]) == {0} and set(many[bins == 3]) == {5}
    assert 5 not in set(many[bins == 4]) and 0 not in set(many[bins == 1])


@settings(max_examples=60, deadline=None)
@given(edges=st.lists(st.integers(-50, 50), min_size=2, max_size=8, unique=True).map(sorted),
       points=st.lists(st.integers(-60, 60), max_size=3),
       values=st.lists(st.integers(-50, 50), min_size=1, max_size=40))
def test_bin_codes_match_a_brute_force_membership_rule(edges, points, values):
    points = [p for p in points if edges[0] <= p <= edges[-1]]
    s = _schema({"bins": edges, "points": points, "integer": True})
    e = s["x"].edges
    values = [v for v in values if e[0] <= v <= e[-1]]
    if not values:
        return
    got = bin_codes(e, np.array(values, dtype=float)).tolist()
    for v, k in zip(values, got):
        a, b = integer_bin_range(e, k)
        assert a <= v <= b, (e, v, k)               # the value lies in its bin's integers
        others = [j for j in range(len(e) - 1) if j != k]
        assert not any(integer_bin_range(e, j)[0] <= v <= integer_bin_range(e, j)[1]
                       for j in others), (e, v)     # and in no other bin


@pytest.mark.parametrize("spec, match", [
    ({"bins": [0, 1, 1, 1, 5]}, "three times"),
    ({"lower": 0, "upper": 5, "bins": 2, "points": [7]}, "outside the bounds"),
    ({"lower": 0, "upper": 5, "bins": 2, "integer": True, "points": [2.5]}, "not an integer"),
    ({"lower": 0, "upper": 5, "bins": 2, "points": "0"}, "list of numbers"),
])
def test_bad_points(spec, match):
    with pytest.raises(SchemaError, match=match):
        _schema(spec)


def test_infer_drafts_point_masses_and_few_valued_numbers_as_categories():
    rng = np.random.default_rng(0)
    n = 600
    affairs = np.where(rng.random(n) < 0.68, 0, rng.integers(1, 40, n))
    frame = pd.DataFrame({"affairs": affairs.astype(str),
                          "age": rng.choice(["17.5", "22.0", "27.0", "32.0", "37.0", "42.0"], n),
                          "income": rng.uniform(0, 1e5, n).round(2).astype(str)})
    s = infer_schema(frame)
    assert integer_bin_range(s["affairs"].edges, 0) == (0, 0)    # 0 is its own bin
    assert s["age"].categories == ("17.5", "22", "27", "32", "37", "42")
    assert s["income"].edges.count(s["income"].edges[1]) == 1   # no point mass in a continuum
    codes = encode_frame(frame, s)
    assert np.mean(codes[:, 0] == 0) == pytest.approx(np.mean(affairs == 0))
