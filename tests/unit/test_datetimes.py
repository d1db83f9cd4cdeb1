"""Datetime columns: parsed at a resolution, binned as integers, decoded to valid timestamps."""
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.encoding import decode_codes, encode_frame
from dpcore.schema import Schema, SchemaError


def _schema(**spec):
    return Schema.from_dict({"columns": {"when": {"type": "datetime", **spec}}})


def test_days_round_trip_to_valid_dates_in_their_bins():
    s = _schema(lower="2019-01-01", upper="2019-12-31", resolution="day", bins=12)
    dates = pd.Series(pd.date_range("2019-01-01", "2019-12-31", freq="7D").strftime("%Y-%m-%d"))
    codes = encode_frame(pd.DataFrame({"when": dates}), s)
    back = decode_codes(np.repeat(codes, 5, axis=0), s, seed=3)["when"]
    assert back.str.fullmatch(r"2019-\d\d-\d\d").all()
    assert (pd.to_datetime(back) >= "2019-01-01").all() and (pd.to_datetime(back) <= "2019-12-31").all()
    again = encode_frame(pd.DataFrame({"when": back}), s)
    assert np.array_equal(again, np.repeat(codes, 5, axis=0))      # decoded values stay in their bin


def test_yyyymmdd_integers_come_back_as_yyyymmdd_dates():
    s = _schema(lower="20190101", upper="20191231", resolution="day", bins=4, format="%Y%m%d")
    codes = encode_frame(pd.DataFrame({"when": ["20190315", "20191130"]}), s)
    back = decode_codes(np.repeat(codes, 50, axis=0), s, seed=1)["when"]
    parsed = pd.to_datetime(back, format="%Y%m%d")        # every value is a real date
    assert parsed.between("2019-01-01", "2019-12-31").all()


def test_month_resolution_pandas_datetimes_and_schema_round_trip():
    s = _schema(lower="2020-01", upper="2020-12", resolution="month", bins=4, missing="code")
    frame = pd.DataFrame({"when": pd.to_datetime(["2020-02-01", None, "2020-11-01"])})
    codes = encode_frame(frame, s)
    assert codes[:, 0].tolist() == [0, 4, 3]
    again = Schema.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s
    out = decode_codes(codes, s, seed=0)["when"].tolist()
    assert out[1] is None and out[0].startswith("2020-0") and len(out[2]) == 7


@pytest.mark.parametrize("value, match", [("2019-13-01", "not a timestamp"),
                                          ("2019-03-05T10:30", "resolution day"),
                                          ("yesterday", "not a timestamp")])
def test_bad_values_name_the_row_and_rule(value, match):
    s = _schema(lower="2019-01-01", upper="2019-12-31", resolution="day", bins=2)
    with pytest.raises(ValueError, match=match) as err:
        encode_frame(pd.DataFrame({"when": ["2019-01-02", value]}), s)
    assert "row 2" in str(err.value)


def test_mixed_utc_offsets_read_alike_whatever_shares_a_batch():
    # audit 16 F9: pandas refuses a batch of texts with two UTC offsets even when coercing,
    # so a file read or failed (a bare ValueError) as its chunks grouped the values
    s = _schema(lower="2019-12-31T00:00:00", upper="2020-01-02T00:00:00", bins=4,
                resolution="hour")
    texts = ["2020-01-01T05:00:00+01:00", "2020-01-01T06:00:00+02:00", "2020-01-01T04:00:00",
             "2020-01-01T04:00:00Z"]
    together = encode_frame(pd.DataFrame({"when": texts}), s)
    alone = np.concatenate([encode_frame(pd.DataFrame({"when": [t]}), s) for t in texts])
    assert np.array_equal(together, alone) and together[:, 0].tolist() == [2] * 4
    with pytest.raises(ValueError, match="row 2: .*not a timestamp"):
        encode_frame(pd.DataFrame({"when": [texts[0], "2020-01-01T06:00:00+99:00"]}), s)


def test_mixed_utc_offsets_as_pandas_2_returns_them(monkeypatch):
    # review 16: pandas 2.x returns such a batch as objects instead of raising; and parsing
    # value by value took 1.3 ms a value (a day of local times across a DST change)
    import dpcore.datetimes as datetimes
    real = pd.to_datetime

    def like_pandas_2(values, **kwargs):
        offsets = {str(v)[-6:] for v in values if str(v)[-6] in "+-"}
        return pd.Series(list(values), dtype=object) if len(offsets) > 1 else real(values,
                                                                                  **kwargs)
    s = _schema(lower="2024-03-30", upper="2024-04-02", bins=3, resolution="minute")
    stamps = pd.date_range("2024-03-30T12:00", periods=3000, freq="min", tz="Europe/Berlin")
    texts = pd.DataFrame({"when": [t.isoformat() for t in stamps]})
    want = encode_frame(texts, s)
    monkeypatch.setattr(datetimes.pd, "to_datetime", like_pandas_2)
    assert np.array_equal(encode_frame(texts, s), want)
    assert sorted(set(want[:, 0].tolist())) == [0, 1, 2]


@pytest.mark.parametrize("spec, match", [
    (dict(lower="2019-01-01", upper="2019-12-31", resolution="week", bins=2), "resolution"),
    (dict(lower="2019-12-31", upper="2019-01-01", bins=2), "before"),
    (dict(lower="soon", upper="2019-01-01", bins=2), "not a timestamp"),
    (dict(lower="2019-01-01", upper="2019-01-03", bins=5), "cannot have 5"),
    (dict(lower="2019-01-01", upper="2019-12-31", bins=2, format="Y-m-d"), "strftime"),
])
def test_bad_specs(spec, match):
    with pytest.raises(SchemaError, match=match):
        _schema(**spec)


def test_a_synthesizer_writes_valid_dates():
    from mechanisms import Synthesizer
    rng = np.random.default_rng(0)
    days = pd.to_datetime("2021-01-01") + pd.to_timedelta(rng.integers(0, 365, 400), unit="D")
    frame = pd.DataFrame({"when": days.strftime("%Y-%m-%d"), "kind": rng.choice(["a", "b"], 400)})
    schema = Schema.from_dict({"columns": {
        "when": {"type": "datetime", "lower": "2021-01-01", "upper": "2021-12-31", "bins": 12},
        "kind": {"type": "categorical", "categories": ["a", "b"]}}})
    out = Synthesizer.create("mst", epsilon=1.0, seed=2, progress=False).fit_sample(frame, schema, n=200)
    assert pd.to_datetime(out["when"], format="%Y-%m-%d").between("2021-01-01", "2021-12-31").all()
