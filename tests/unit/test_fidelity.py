"""Raw-value fidelity: point masses, quantiles, correlations and train-on-synthetic/test-on-real."""
import re

import numpy as np
import pandas as pd
import pytest

from dpcore.fidelity import QUANTILES, compare, train_synthetic_test_real
from dpcore.schema import Schema
from dpcore.cli import main

SCHEMA = Schema.from_dict({"columns": {
    "affairs": {"type": "numeric", "lower": 0, "upper": 12, "bins": 4, "integer": True},
    "age": {"type": "numeric", "lower": 17, "upper": 57, "bins": 8},
    "kind": {"type": "categorical", "categories": ["a", "b"]}}})


def _frames(seed=0, n=2000):
    rng = np.random.default_rng(seed)
    age = rng.uniform(17, 57, n)
    affairs = np.where(rng.random(n) < 0.68, 0, rng.integers(1, 13, n))
    kind = np.where(age + rng.normal(0, 5, n) > 37, "b", "a")
    real = pd.DataFrame({"affairs": affairs, "age": age, "kind": kind})
    # A synthetic table that decodes affairs uniformly in its bins: no point mass at 0.
    synth = pd.DataFrame({"affairs": rng.integers(0, 13, n), "age": rng.uniform(17, 57, n),
                          "kind": rng.choice(["a", "b"], n)})
    return real, synth


def test_point_masses_means_and_quantiles():
    real, synth = _frames()
    fid = compare(real.astype(str), synth.astype(str), SCHEMA)
    affairs = next(c for c in fid.columns if c.name == "affairs")
    value, real_share, synth_share = affairs.point_masses[0]
    assert value == 0 and abs(real_share - np.mean(real.affairs == 0)) < 1e-12
    assert abs(synth_share - np.mean(synth.affairs == 0)) < 1e-12 and synth_share < 0.15
    assert affairs.mean == pytest.approx((real.affairs.mean(), synth.affairs.mean()))
    assert [q[0] for q in affairs.quantiles] == pytest.approx(
        list(np.quantile(real.affairs, QUANTILES)))
    age = next(c for c in fid.columns if c.name == "age")
    assert age.point_masses == ()                # a continuous column has none


def test_correlations_match_numpy_and_reveal_a_lost_dependence():
    real, synth = _frames()
    real["affairs"] = (real.age > 40) * 5 + real.affairs    # a real dependence
    fid = compare(real.astype(str), synth.astype(str), SCHEMA)
    assert fid.correlation_names == ("affairs", "age")
    expected = np.corrcoef(real.affairs, real.age)[0, 1]
    assert fid.correlation_real[0, 1] == pytest.approx(expected)
    assert fid.max_correlation_gap == pytest.approx(
        abs(expected - np.corrcoef(synth.affairs, synth.age)[0, 1]))


def test_tstr_scores_a_useless_synthetic_table_below_the_real_one():
    from dpcore.encoding import encode_frame
    real, synth = _frames()
    real_codes, synth_codes = encode_frame(real, SCHEMA), encode_frame(synth, SCHEMA)
    out = train_synthetic_test_real(real_codes, synth_codes, SCHEMA, "kind")
    assert out["train_real"]["accuracy"] > 0.8
    assert out["train_synthetic"]["accuracy"] < out["train_real"]["accuracy"] - 0.15
    good = train_synthetic_test_real(real_codes, real_codes[::-1].copy(), SCHEMA, "kind")
    assert good["train_synthetic"]["accuracy"] > 0.8


def test_cli_evaluate_reports_raw_values_clips_and_labels(tmp_path, capsys):
    real, synth = _frames()
    synth.loc[0, "age"] = 99.0                          # out of the public bounds
    real.to_csv(tmp_path / "real.csv", index=False)
    synth.to_csv(tmp_path / "synth.csv", index=False)
    import json
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA.to_dict()))
    args = ["evaluate", "--real", str(tmp_path / "real.csv"), "--synth", str(tmp_path / "synth.csv"),
            "--schema", str(tmp_path / "schema.json"), "--workload", "all-2way"]
    assert main(args) == 2                              # the stray value is an error ...
    capsys.readouterr()
    assert main(args + ["--clip", "--target", "kind", "--report", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"affairs: .*; 0: 6\d\.\d% -> \d\.\d%", out) and "train on synthetic" in out
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Raw values" in page and "correlations.png" in page and "Train on synthetic" in page
    from dpcore.report import _labels
    assert _labels(SCHEMA["affairs"]) == ["0-2", "3-5", "6-8", "9-12"]
    assert _labels(SCHEMA["age"])[:2] == ["[17, 22)", "[22, 27)"]
