"""The CLI end to end on the bundled Adult raw data, as a user runs it (subprocesses):
synth -> verify -> evaluate for MST and AIM (AIM with a 3-marginal workload and the minimum
number of rounds to stay fast), pre-encoded data in and out, and a tampered ledger."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dpcore as dpcore_package

# The subprocesses import the same dpcore this test imported: the installed package in CI,
# the source tree (with its in-place extension) in development.
PACKAGE_PARENT = Path(dpcore_package.__file__).resolve().parents[1]
ADULT = PACKAGE_PARENT / "dpcore" / "data" / "adult"


def dpcore(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_PARENT), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "dpcore.cli", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)


def check(proc, code=0):
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["mst", "aim"])
def test_synth_verify_evaluate_adult(tmp_path, mechanism):
    extra, workload = [], "all-2way"
    if mechanism == "aim":
        (tmp_path / "w.json").write_text(json.dumps(
            [["age", "income"], ["education", "occupation", "sex"], ["race", "hours-per-week"]]))
        extra, workload = ["--workload", "w.json", "--rounds", "15"], "w.json"
    check(dpcore("synth", "--mechanism", mechanism, "--data", ADULT / "adult-raw.csv",
                 "--schema", ADULT / "schema.json", "--epsilon", "1", "--delta", "1e-9",
                 "--seed", "5", "--out", "synth.csv", "--ledger", "ledger.json",
                 "--result", "result.json", *extra, cwd=tmp_path))
    synth = pd.read_csv(tmp_path / "synth.csv", keep_default_na=False)
    real_header = (ADULT / "adult-raw.csv").read_text().splitlines()[0].split(",")
    assert list(synth.columns) == real_header and 40_000 < len(synth) < 60_000
    assert set(synth["sex"]) <= {"Male", "Female"} and synth["age"].between(17, 90).all()

    verified = check(dpcore("verify", "--allow-fixed-seed", "ledger.json", cwd=tmp_path))
    assert "PASS" in verified.stdout

    proc = check(dpcore("evaluate", "--dataset", "adult", "--synth", "synth.csv", "--workload",
                        workload, "--json", "--report", "report", "--result", "result.json",
                        cwd=tmp_path))
    doc = json.loads(proc.stdout)
    assert len(doc["marginals"]) == (105 if mechanism == "mst" else 3)
    # At epsilon = 1 both mechanisms land far below the error of uniformly random rows (about
    # 1.5 on these marginals); observed ~0.1-0.25. AIM is scored on its own workload: it
    # measures nothing outside the workload's downward closure.
    assert 0 < doc["workload_error"] < 0.6
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["format"] == "dpcore-result" and result["mechanism"] == mechanism
    pages = {p.name for p in (tmp_path / "report").iterdir()}
    assert {"index.html", "oneway.png", "marginal_errors.png"} <= pages
    if mechanism == "aim":
        assert result["confidence_bounds"] and "confidence_bounds.png" in pages


def test_pre_encoded_domain_file_in_codes_out(tmp_path):
    codes = pd.DataFrame({"a": [0, 1, 2, 1, 0] * 40, "b": [1, 0, 1, 1, 0] * 40})
    codes.to_csv(tmp_path / "codes.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps({"a": 3, "b": 2}))
    check(dpcore("synth", "--mechanism", "independent", "--data", "codes.csv", "--schema",
                 "domain.json", "--epsilon", "2", "--delta", "1e-6", "--rows", "77",
                 "--out", "out.csv", "--ledger", "l.json", "--quiet", cwd=tmp_path))
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns) == ["a", "b"] and len(out) == 77
    assert out["a"].between(0, 2).all() and pd.api.types.is_integer_dtype(out["a"])
    check(dpcore("verify", "l.json", cwd=tmp_path))
    bad = codes.copy()
    bad.loc[3, "a"] = 3
    bad.to_csv(tmp_path / "bad.csv", index=False)
    proc = check(dpcore("synth", "--mechanism", "mst", "--data", "bad.csv", "--schema",
                        "domain.json", "--epsilon", "1", "--delta", "1e-6", "--out", "o2.csv",
                        "--ledger", "l2.json", cwd=tmp_path), code=2)
    assert "column 'a', row 4: the value" in proc.stderr and "0..2" in proc.stderr
    assert not (tmp_path / "o2.csv").exists() and not (tmp_path / "l2.json").exists()
