"""One schema, one encoding: the same table read from CSV, from pandas (float-typed integer
columns included) and from Parquet gives the same codes."""
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.encoding import encode_frame, read_codes
from dpcore.schema import Schema

SCHEMA = Schema.from_dict({"missing_values": [""], "columns": {
    "age": {"type": "categorical", "categories": ["18", "32", "45"], "missing": "code"},
    "hours": {"type": "numeric", "lower": 0, "upper": 99, "bins": 10, "integer": True,
              "points": [40]},
    "ratio": {"type": "numeric", "lower": 0, "upper": 1, "bins": 4},
    "sex": {"type": "categorical", "categories": ["F", "M"]}}})


def _frame():
    return pd.DataFrame({"age": [18, 32, np.nan, 45, 32.0],          # float-typed (NaN present)
                         "hours": [40.0, 41.0, 0.0, 99.0, 40.0],
                         "ratio": [0.1, 0.5, 1.0, 0.25, 0.75],
                         "sex": ["F", "M", "M", "F", "M"]})


def test_csv_pandas_and_parquet_encode_alike(tmp_path):
    pytest.importorskip("pyarrow")
    frame = _frame()
    from_pandas = encode_frame(frame, SCHEMA)
    frame.to_csv(tmp_path / "t.csv", index=False)            # writes 18.0, 32.0, "" for NaN
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    from_csv = read_codes(tmp_path / "t.csv", SCHEMA)
    from_parquet = read_codes(tmp_path / "t.parquet", SCHEMA)
    assert np.array_equal(from_pandas, from_csv) and np.array_equal(from_pandas, from_parquet)
    assert from_pandas[:, 0].tolist() == [0, 1, 3, 2, 1]          # 3: the missing code
    assert from_pandas[:, 1].tolist()[0] == from_pandas[:, 1].tolist()[4]   # 40 is its own bin
    ints = frame.assign(age=[18, 32, 32, 45, 32]).astype({"age": "Int64"})
    assert encode_frame(ints, SCHEMA)[:, 0].tolist() == [0, 1, 1, 2, 1]


def test_a_long_parquet_file_encodes_as_its_csv(tmp_path):
    # Parquet's texts are read as dictionaries and its integers encoded once per distinct
    # value (long columns): the codes of the CSV of the same table, nulls and bad values too
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(5)
    n = 20_000
    frame = pd.DataFrame({"age": rng.choice([18, 32, 45], n),
                          "hours": rng.integers(0, 100, n),
                          "ratio": rng.random(n).round(3),
                          "sex": rng.choice(["F", "M"], n).astype(object)})
    frame.loc[rng.choice(n, 50), "sex"] = None
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    with pytest.raises(ValueError, match="column 'sex'") as from_csv:
        read_codes(tmp_path / "t.csv", SCHEMA)
    with pytest.raises(ValueError, match="column 'sex'") as from_parquet:
        read_codes(tmp_path / "t.parquet", SCHEMA)
    assert from_csv.value.row == from_parquet.value.row
    frame["sex"] = frame["sex"].fillna("F")
    frame.loc[12_345, "hours"] = 150                    # above the upper bound
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    for path in ("t.csv", "t.parquet"):
        with pytest.raises(ValueError, match="column 'hours', row 12346"):
            read_codes(tmp_path / path, SCHEMA)
    frame.loc[12_345, "hours"] = 40
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    assert np.array_equal(read_codes(tmp_path / "t.csv", SCHEMA),
                          read_codes(tmp_path / "t.parquet", SCHEMA))


def test_a_file_under_a_parquet_name_that_is_not_parquet_is_a_typed_error(tmp_path, capsys):
    """Audit 17 F8: a CSV renamed .parquet, a cut Parquet file, an empty one and the magic bytes
    alone gave raw pyarrow tracebacks (exit 1) from synth, --public, evaluate and schema infer.
    Now one line naming the file and the error's class (not Arrow's text, which can quote
    values), before any ledger exists."""
    pytest.importorskip("pyarrow")
    from dpcore.cli import main
    from dpcore.encoding import EncodingError
    good = tmp_path / "good.parquet"
    _frame().to_parquet(good, index=False)
    _frame().to_csv(tmp_path / "t.csv", index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA.to_dict()))
    bad = {"csv": (tmp_path / "t.csv").read_bytes(), "cut": good.read_bytes()[:200],
           "empty": b"", "magic": b"PAR1xxxxPAR1"}
    for name, content in bad.items():
        path = tmp_path / f"{name}.parquet"
        path.write_bytes(content)
        with pytest.raises(EncodingError, match=f"{name}.parquet: not a readable Parquet file"):
            read_codes(path, SCHEMA)
        ledger = tmp_path / f"{name}-ledger.json"
        for argv in (["synth", "--mechanism", "mst", "--data", str(path), "--schema", str(schema),
                      "--epsilon", "1", "--delta", "1e-6", "--out", str(tmp_path / "o.csv"),
                      "--ledger", str(ledger),
                      "--quiet"],
                     ["evaluate", "--real", str(path), "--synth", str(tmp_path / "t.csv"),
                      "--schema", str(schema)],
                     ["schema", "infer", str(path)]):
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert "not a readable Parquet file" in err and "Traceback" not in err, err
        assert not ledger.exists()
