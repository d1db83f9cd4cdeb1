"""Schema parsing and validation, encoding errors, decoding, the bundled Adult schema."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.encoding import (
    EncodingError, decode_codes, encode_frame, infer_schema, read_codes, write_table,
)
from dpcore.schema import INFER_WARNING, NumericColumn, Schema, SchemaError

DATA = Path(__file__).resolve().parents[2] / "dpcore" / "data" / "adult"
KIT = Path(__file__).resolve().parents[1] / "data/adult/adult.csv"


def schema(**cols):
    return Schema.from_dict({"columns": cols})


CAT = {"type": "categorical", "categories": ["a", "b"]}
NUM = {"type": "numeric", "lower": 0, "upper": 10, "bins": 5, "integer": True}


def test_domain_file_is_told_apart_from_schema_by_content():
    s = Schema.from_dict({"x": 3, "y": 2})
    assert s.encoded and s.domain_dict() == {"x": 3, "y": 2}
    assert not schema(c=CAT).encoded
    with pytest.raises(SchemaError, match="not a dpcore schema"):
        Schema.from_dict({"x": 3, "y": "two"})


@pytest.mark.parametrize("spec, message", [
    ({"type": "numeric", "bins": [0, 5, 3, 10]}, "edge 1 = 5 is followed by 3"),
    ({"type": "numeric", "bins": [0, 5, 5, 5, 10]}, "edge 5 appears three times"),
    ({"type": "numeric", "bins": [0, 10], "lower": 1}, "'lower' = 1 disagrees"),
    ({"type": "numeric", "lower": 5, "upper": 5, "bins": 2}, "'lower' must be < 'upper'"),
    ({"type": "numeric", "lower": 0, "upper": 3, "bins": 5, "integer": True}, "cannot have 5"),
    ({"type": "numeric", "bins": [0, 0.2, 0.7], "integer": True}, "contains no integer"),
    ({"type": "numeric", "lower": 0, "upper": 1, "bins": 0}, "'bins' must be >= 1"),
    ({"type": "numeric", "lower": 0, "upper": float("inf"), "bins": 2}, "finite number"),
    ({"type": "categorical", "categories": ["a", "a"]}, "'a' repeats"),
    ({"type": "categorical", "categories": []}, "non-empty list"),
    ({"type": "categorical", "categories": ["a"], "other": "a"}, "'other' must be a label"),
    ({"type": "categorical", "categories": ["a"], "missing": "drop"}, "'missing' must be one"),
    ({"type": "text"}, "'type' must be"),
])
def test_bad_column_spec_names_column_and_rule(spec, message):
    with pytest.raises(SchemaError, match="schema column 'c'") as err:
        schema(c=spec)
    assert message in str(err.value)


def test_point_bin_allowed_only_last_and_holds_the_top_value():
    col = schema(c={"type": "numeric", "bins": [0, 5, 9, 9], "integer": True})["c"]
    assert col.bins == 3
    codes = encode_frame(pd.DataFrame({"c": [0, 4, 5, 8, 9]}), Schema([col]))
    assert codes[:, 0].tolist() == [0, 0, 1, 1, 2]


def test_integer_count_bins_one_per_value():
    col = schema(c={"type": "numeric", "lower": 1, "upper": 16, "bins": 16, "integer": True})["c"]
    values = pd.DataFrame({"c": list(range(1, 17))})
    assert encode_frame(values, Schema([col]))[:, 0].tolist() == list(range(16))


def test_load_reports_file_and_json_errors(tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.load(bad)
    with pytest.raises(SchemaError, match="cannot read"):
        Schema.load(tmp_path / "absent.json")


def test_save_load_roundtrip(tmp_path):
    s = schema(c=dict(CAT, other="zz", missing="code"), n=NUM)
    s.save(tmp_path / "s.json")
    assert Schema.load(tmp_path / "s.json") == s
    assert list(tmp_path.iterdir()) == [tmp_path / "s.json"]


@pytest.mark.parametrize("frame, column, row, value", [
    (pd.DataFrame({"c": ["a", "q"], "n": ["1", "2"]}), "c", 2, "q"),
    (pd.DataFrame({"c": ["a", "b"], "n": ["1", "11"]}), "n", 2, "11"),
    (pd.DataFrame({"c": ["a", "b"], "n": ["-1", "2"]}), "n", 1, "-1"),
    (pd.DataFrame({"c": ["a", "b"], "n": ["1", "NaN"]}), "n", 2, "NaN"),
    (pd.DataFrame({"c": ["a", "b"], "n": ["1", "2.5"]}), "n", 2, "2.5"),
    (pd.DataFrame({"c": ["a", "b"], "n": [1.0, np.nan]}), "n", 2, np.nan),
    (pd.DataFrame({"c": ["a", ""], "n": ["1", "2"]}), "c", 2, ""),
])
def test_encoding_error_names_column_row_value(frame, column, row, value):
    with pytest.raises(EncodingError) as err:
        encode_frame(frame, schema(c=CAT, n=NUM), row_offset=0)
    assert (err.value.column, err.value.row, err.value.value) == (column, row, None)
    assert f"column {column!r}, row {row}: the value " in str(err.value)
    with pytest.raises(EncodingError) as shown:
        encode_frame(frame, schema(c=CAT, n=NUM), row_offset=0, debug=True)
    assert f"column {column!r}, row {row}: value {value!r} " in str(shown.value)
    if isinstance(value, str):
        assert shown.value.value == value


def test_clip_other_and_missing_codes():
    s = schema(c=dict(CAT, other="rest", missing="code"),
               n=dict(NUM, out_of_bounds="clip", missing="code"))
    frame = pd.DataFrame({"c": ["a", "zzz", ""], "n": ["-5", "100", ""]})
    codes = encode_frame(frame, s)
    assert codes.tolist() == [[0, 0], [2, 4], [3, 5]]
    back = decode_codes(codes, s, seed=1)
    assert back["c"].tolist() == ["a", "rest", None]
    assert back["n"].isna().tolist() == [False, False, True]


def test_missing_header_columns_and_delimiter_hint():
    s = schema(c=CAT, n=NUM)
    with pytest.raises(EncodingError, match=r"lacks schema column\(s\) \['n'\]"):
        encode_frame(pd.DataFrame({"c": ["a"]}), s)
    with pytest.raises(EncodingError, match=r"not in the schema"):
        encode_frame(pd.DataFrame({"c": ["a"], "n": ["1"], "z": ["1"]}), s)
    with pytest.raises(EncodingError, match="wrong delimiter"):
        encode_frame(pd.DataFrame({"c;n": ["a;1"]}), s)


def test_pre_encoded_codes_validated():
    s = Schema.from_dict({"x": 3})
    assert encode_frame(pd.DataFrame({"x": ["0", "2"]}), s).tolist() == [[0], [2]]
    with pytest.raises(EncodingError, match=r"row 2: value '3' is not an integer code in 0..2"):
        encode_frame(pd.DataFrame({"x": ["0", "3"]}), s, debug=True)


def test_decode_numeric_values_inside_bins():
    col = NumericColumn("f", (0.0, 0.5, 2.0))
    s = Schema([col])
    codes = np.array([[0], [1]] * 500)
    values = decode_codes(codes, s, seed=3)["f"].to_numpy()
    assert ((values >= 0) & (values < 0.5))[codes[:, 0] == 0].all()
    assert ((values >= 0.5) & (values <= 2))[codes[:, 0] == 1].all()
    assert decode_codes(codes[:2], s, method="midpoint")["f"].tolist() == [0.25, 1.25]


def test_read_codes_chunked_equals_whole(tmp_path):
    s = schema(c=CAT, n=NUM)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"n": rng.integers(0, 11, 1000).astype(str),
                          "c": rng.choice(["a", "b"], 1000)})
    write_table(frame, tmp_path / "d.csv")
    whole = read_codes(tmp_path / "d.csv", s)
    assert np.array_equal(read_codes(tmp_path / "d.csv", s, chunk_rows=37), whole)
    frame.loc[700, "c"] = "bad"
    write_table(frame, tmp_path / "d.csv")
    with pytest.raises(EncodingError, match="row 701: the value is not one of") as err:
        read_codes(tmp_path / "d.csv", s, chunk_rows=37)
    assert "bad" not in str(err.value) and err.value.value is None
    with pytest.raises(EncodingError, match="row 701: value 'bad'"):
        read_codes(tmp_path / "d.csv", s, chunk_rows=37, debug=True)


def test_read_codes_malformed_and_empty(tmp_path):
    s = schema(c=CAT, n=NUM)
    p = tmp_path / "d.csv"
    p.write_text("c,n\na,1\nb,2,3\n")
    with pytest.raises(EncodingError, match="row 2 has 3 fields but the header has 2"):
        read_codes(p, s)
    p.write_text("")
    with pytest.raises(EncodingError, match="empty"):
        read_codes(p, s)
    p.write_text("c,n\n")
    with pytest.raises(EncodingError, match="no data rows"):
        read_codes(p, s)


def test_bundled_adult_encodes_to_the_kit_codes():
    s = Schema.load(DATA / "schema.json")
    codes = read_codes(DATA / "adult-raw.csv", s)
    assert codes.dtype == np.uint8 and codes.shape == (48842, 15)
    assert list(s.domain_dict().values()) == [32, 9, 32, 16, 16, 7, 15, 6, 5, 2, 24, 23, 29,
                                              42, 2]
    assert np.array_equal(codes, pd.read_csv(KIT).to_numpy())


def test_infer_warns_and_respects_public_flags():
    frame = pd.DataFrame({"age": ["20", "30", "?"] * 5, "sex": ["F", "M", "F"] * 5,
                          "w": [f"{1.5 + k / 7:.3f}" for k in range(15)],
                          "few": ["1.5", "2.5", "3.0"] * 5})
    s = infer_schema(frame, bounds={"age": (0, 99)}, missing_values=["?"], bins=10)
    assert s.warning.startswith(INFER_WARNING) and "['sex', 'w', 'few']" in s.warning
    assert s["age"].edges[0] == 0 and s["age"].edges[-1] == 99 and s["age"].integer
    assert s["sex"].categories == ("F", "M") and not s["w"].integer
    assert s["few"].categories == ("1.5", "2.5", "3")     # few-valued: a category per value
    public = infer_schema(frame[["sex"]], categories={"sex": ["F", "M", "X"]})
    assert public.warning is None
    with pytest.raises(ValueError, match="not in the data"):
        infer_schema(frame, bounds={"height": (0, 3)})


def test_parquet_roundtrip_when_pyarrow_is_installed(tmp_path):
    pytest.importorskip("pyarrow")
    s = schema(c=dict(CAT, missing="code"), n=NUM)
    codes = np.array([[0, 1], [2, 4], [1, 0]] * 5)
    write_table(decode_codes(codes, s, seed=2), tmp_path / "d.parquet")
    assert np.array_equal(read_codes(tmp_path / "d.parquet", s, chunk_rows=4), codes)


@pytest.mark.parametrize("column, token, clash", [
    ({"type": "numeric", "lower": 0, "upper": 10, "integer": True, "bins": 2}, "9", True),
    ({"type": "numeric", "lower": 0, "upper": 10, "integer": True, "bins": 2}, "9.0", True),
    ({"type": "numeric", "lower": 0, "upper": 10, "integer": True, "bins": 2}, "5.5", False),
    ({"type": "numeric", "lower": 0, "upper": 10, "integer": True, "bins": 2}, "-1", False),
    ({"type": "numeric", "lower": -5, "upper": 5, "bins": 2}, "-1", True),
    ({"type": "numeric", "lower": 0, "upper": 10, "bins": 2}, "1e1", True),
    ({"type": "numeric", "lower": 0, "upper": 10, "bins": 2}, "11", False),
    ({"type": "numeric", "lower": 0, "upper": 10, "bins": 2}, "NA", False),
    ({"type": "datetime", "lower": "2020-01-01", "upper": "2021-01-01", "bins": 4},
     "2020-03-01", True),
    ({"type": "datetime", "lower": "2020-01-01", "upper": "2021-01-01", "bins": 4},
     "1999-01-01", False),
    ({"type": "categorical", "categories": ["9", "x"]}, "9.0", True)])
def test_a_missing_token_the_column_can_hold_is_refused(column, token, clash):
    """Audit 17 H1: "missing_values": ["?", "9"] over an integer column in [0, 10] was accepted:
    real 9s read as missing, and synthetic 9s written as "9" read back as missing (breaking a
    derived rule). A token that is a value within a column's bounds is a schema error."""
    spec = {"missing_values": ["?", token], "columns": {"c": column}}
    if clash:
        with pytest.raises(SchemaError, match=r"column 'c'.*missing-value token"):
            Schema.from_dict(spec)
    else:
        Schema.from_dict(spec)
