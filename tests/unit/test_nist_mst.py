"""NIST-MST through the front doors: Synthesizer.create("nist-mst", public=...) and
dpcore synth --mechanism nist-mst --public."""
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.errors import InvalidArgumentError
from mechanisms.synthesizer import NISTMST, Synthesizer

SCHEMA = {"format": "dpcore-schema", "missing_values": ["N"], "columns": {
    "income": {"type": "numeric", "lower": -100, "upper": 9999999, "bins": 8, "integer": True,
               "missing": "code"},
    "sex": {"type": "categorical", "categories": ["F", "M"]},
    "age": {"type": "numeric", "lower": 0, "upper": 99, "bins": 10, "integer": True}}}


def people(n, seed):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    income = np.where(rng.random(n) < 0.7, 100 * rng.integers(0, 300, n), rng.integers(0, 30000, n))
    income = np.where(sex == "M", income + 5000, income)
    income = np.where(rng.random(n) < 0.02, 9999999, income).astype(object)
    income[rng.random(n) < 0.1] = "N"
    return pd.DataFrame({"income": income, "sex": sex, "age": rng.integers(0, 100, n)})


@pytest.fixture(scope="module")
def fitted():
    return Synthesizer.create("nist-mst", epsilon=1.0, public=people(800, 1), transform="auto", seed=0,
                              progress=False).fit(people(3000, 2), schema=SCHEMA)


def test_fits_samples_in_the_original_schema_and_verifies(fitted):
    assert isinstance(fitted, NISTMST)
    assert fitted.schema_.names == ("income_A", "income_B", "sex", "age")   # what was measured
    assert fitted.transform_.to_dict()["income"]["specials"] == [9999999]
    sample = fitted.sample(2000, seed=1)
    assert list(sample.columns) == ["income", "sex", "age"]
    income = sample["income"].dropna()
    assert income.between(-100, 9999999).all() and (income == 9999999).any()
    assert sample["income"].isna().any() and set(sample["sex"]) <= {"F", "M"}
    assert fitted.verify(allow_fixed_seed=True).ok
    opening = [e for e in fitted.ledger.entries if e.kind == "open"][-1]
    assert fitted.ledger.spent == fitted.ledger.budget          # zcdp: the whole budget
    assert "income" in json.dumps(opening.to_dict())            # the public transform is on record


def test_nist_calibration_verifies_within_budget():
    synth = NISTMST(epsilon=1.0, public=people(500, 3), calibration="nist", seed=0,
                    progress=False).fit(people(1500, 4), schema=SCHEMA)
    assert synth.verify(allow_fixed_seed=True).ok and 0 < synth.ledger.spent < synth.ledger.budget


def test_transform_comes_from_the_public_table_only():
    """Two sensitive tables, one public table: the same transform and transformed schema."""
    public = people(600, 5)
    a = NISTMST(epsilon=1.0, public=public, seed=0, progress=False).fit(people(1000, 6), SCHEMA)
    b = NISTMST(epsilon=1.0, public=public, seed=0, progress=False).fit(
        people(1000, 7).assign(income=50), SCHEMA)
    assert a.transform_.to_dict() == b.transform_.to_dict() and a.schema_ == b.schema_


def test_transform_none_keeps_the_schema():
    synth = NISTMST(epsilon=1.0, public=people(500, 8), transform=None, seed=0,
                    progress=False).fit(people(800, 9), SCHEMA)
    assert synth.schema_.names == ("income", "sex", "age") and synth.verify(allow_fixed_seed=True).ok


def test_bad_arguments_are_typed_errors():
    with pytest.raises(InvalidArgumentError, match="public must be a pandas DataFrame"):
        NISTMST(epsilon=1.0, public=None)
    with pytest.raises(InvalidArgumentError, match="calibration must be"):
        NISTMST(epsilon=1.0, public=people(10, 0), calibration="rdp")
    synth = NISTMST(epsilon=1.0, public=people(100, 0), transform="auto", progress=False)
    from dpcore.encoding import encode_frame
    from dpcore.schema import Schema
    schema = Schema.from_dict(SCHEMA)
    with pytest.raises(InvalidArgumentError, match="encode the data with prepare"):
        synth.fit_codes(encode_frame(people(50, 1), schema), schema)
    assert synth.result_ is None
    bad_public = people(100, 0).assign(age=150)
    with pytest.raises(InvalidArgumentError, match="public data"):
        NISTMST(epsilon=1.0, public=bad_public, progress=False).fit(people(50, 1), SCHEMA)


# ------------------------------------------------------------------------ CLI
@pytest.fixture
def files(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    people(1500, 10).to_csv(tmp_path / "data.csv", index=False)
    people(500, 11).to_csv(tmp_path / "public.csv", index=False)
    return tmp_path


def argv(tmp, **overrides):
    args = {"--mechanism": "nist-mst", "--data": str(tmp / "data.csv"),
            "--schema": str(tmp / "schema.json"), "--public": str(tmp / "public.csv"),
            "--epsilon": "1", "--delta": "1e-9", "--out": str(tmp / "out.csv"),
            "--ledger": str(tmp / "ledger.json"), "--seed": "0"}
    args.update(overrides)
    out = ["synth", "--quiet"]
    for k, v in args.items():
        if v is not None:
            out += [k, v]
    return out


def test_cli_nist_mst_with_public(files, capsys):
    assert main(argv(files)) == 0
    out = pd.read_csv(files / "out.csv", keep_default_na=False)
    assert list(out.columns) == ["income", "sex", "age"]
    assert "N" in set(out["income"].astype(str))                # missing written back as N
    assert main(["verify", "--allow-fixed-seed", str(files / "ledger.json")]) == 0


@pytest.mark.parametrize("overrides, expected", [
    ({"--public": None}, "--public PUBLIC.csv is required by --mechanism nist-mst"),
    ({"--mechanism": "mst"}, "applies to no other mechanism"),
    ({"--public": "missing.csv"}, "no such file"),
])
def test_cli_refuses_bad_combinations_before_any_charge(files, capsys, overrides, expected):
    if overrides.get("--public") == "missing.csv":
        overrides = {"--public": str(files / "missing.csv")}
    code = main(argv(files, **overrides))
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and len(err.splitlines()) == 1
    assert not (files / "ledger.json").exists() and not (files / "out.csv").exists()


def test_cli_bad_public_value_exits_2_before_any_charge(files, capsys):
    people(500, 11).assign(age=-1).to_csv(files / "public.csv", index=False)
    assert main(argv(files)) == 2
    assert "public data" in capsys.readouterr().err
    assert not (files / "ledger.json").exists()


def test_schema_rules_hold_in_nist_mst_samples():
    # review 15: the transform dropped the schema's rules, so NIST-MST sampled forbidden cells
    # and ignored derived columns; they now carry over to the transformed schema
    rules = [{"type": "forbidden", "name": "no_young_men",
              "when": {"sex": {"in": ["M"]}, "age": {"range": [0, 29]}}},
             {"type": "derived", "name": "grown", "column": "adult", "from": "age",
              "ranges": [[0, 19, "no"], [20, 99, "yes"]]}]
    schema = {**SCHEMA, "columns": {**SCHEMA["columns"], "adult": {
        "type": "categorical", "categories": ["no", "yes"]}}, "constraints": rules}

    def table(n, seed):
        df = people(n, seed)
        df.loc[(df["sex"] == "M") & (df["age"] < 30), "age"] = 45
        return df.assign(adult=np.where(df["age"] >= 20, "yes", "no"))
    s = Synthesizer.create("nist-mst", epsilon=0.5, public=table(600, 1), transform="auto",
                           seed=0, progress=False).fit(table(3000, 2), schema=schema)
    assert "income" in s.transform_.maps      # the unruled wide column is still transformed
    out = s.sample(3000, seed=1)
    assert not ((out["sex"] == "M") & (out["age"] < 30)).any()
    assert (out["adult"] == np.where(out["age"] >= 20, "yes", "no")).all()
    with pytest.raises(InvalidArgumentError, match="a schema rule names it"):
        Synthesizer.create("nist-mst", epsilon=0.5, public=table(600, 1),
                           transform={"age": "grid"}, progress=False).fit(table(100, 2), schema=schema)
