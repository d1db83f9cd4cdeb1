"""CLI input handling: every bad input exits 2 (or 3 for privacy) with one line naming the
problem, and leaves no output file behind. These run in-process and stop before any
mechanism runs, so they need no compiled kernels."""
import json
from pathlib import Path

import pytest

from dpcore.accounting import GaussianEvent, PrivacyFilter
from dpcore.cli import main

SCHEMA = {"format": "dpcore-schema", "missing_values": [""], "columns": {
    "color": {"type": "categorical", "categories": ["red", "green", "blue"]},
    "size": {"type": "numeric", "lower": 0, "upper": 10, "bins": 5, "integer": True},
    "flag": {"type": "categorical", "categories": ["y", "n"]}}}
ROWS = [("red", 1, "y"), ("green", 7, "n"), ("blue", 10, "y")] * 10


@pytest.fixture
def work(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    lines = ["color,size,flag"] + [f"{c},{s},{f}" for c, s, f in ROWS]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def synth_args(work, **overrides):
    args = {"--mechanism": "mst", "--data": str(work / "data.csv"),
            "--schema": str(work / "schema.json"), "--epsilon": "1", "--delta": "1e-6",
            "--out": str(work / "out.csv"), "--ledger": str(work / "ledger.json")}
    args.update(overrides)
    argv = ["synth", "--quiet"]
    for k, v in args.items():
        if v is not None:
            argv += [k, v]
    return argv


def run(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


def edit_data(work, old, new):
    path = work / "data.csv"
    path.write_text(path.read_text().replace(old, new, 1))


@pytest.mark.parametrize("mutate, expected", [
    (lambda w: edit_data(w, "green,7,n", "green,7,n,extra"), "malformed CSV"),
    (lambda w: (w / "data.csv").write_text((w / "data.csv").read_text().replace(",", ";")),
     "wrong delimiter"),
    (lambda w: (w / "data.csv").write_text("\n".join(
        ",".join(line.split(",")[:2]) for line in (w / "data.csv").read_text().splitlines())),
     "lacks schema column(s) ['flag']"),
    (lambda w: (w / "data.csv").write_text("\n".join(
        line + (",z" if i == 0 else ",1")
        for i, line in enumerate((w / "data.csv").read_text().splitlines()))),
     "not in the schema"),
    (lambda w: edit_data(w, "green,7,n", "purple,7,n"), "column 'color', row 2: value 'purple'"),
    (lambda w: edit_data(w, "green,7,n", "green,NaN,n"), "column 'size', row 2: value 'NaN'"),
    (lambda w: edit_data(w, "green,7,n", "green,11,n"), "above the upper bound 10"),
    (lambda w: (w / "schema.json").write_text(json.dumps({"columns": dict(
        SCHEMA["columns"], size={"type": "numeric", "bins": [0, 5, 3, 10]})})),
     "bin edges must increase"),
    (lambda w: (w / "schema.json").write_text("{"), "not valid JSON"),
    (lambda w: (w / "data.csv").write_text(""), "empty"),
])
def test_bad_data_or_schema_exits_2_without_files(work, capsys, mutate, expected):
    mutate(work)
    code, err = run(synth_args(work), capsys)
    assert code == 2
    assert expected in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not (work / "out.csv").exists() and not (work / "ledger.json").exists()


@pytest.mark.parametrize("overrides, expected", [
    ({"--epsilon": "0"}, "--epsilon must be > 0"),
    ({"--epsilon": "-1"}, "--epsilon must be > 0"),
    ({"--epsilon": "nan"}, "--epsilon must be > 0"),
    ({"--epsilon": "abc"}, "--epsilon must be a number"),
    ({"--delta": "1"}, "--delta must be in (0, 1)"),
    ({"--delta": "0"}, "--delta must be in (0, 1)"),
    ({"--out": "/nonexistent-dir/out.csv"}, "does not exist"),
    ({"--ledger": "/nonexistent-dir/l.json"}, "does not exist"),
    ({"--out": "."}, "is a directory"),
    ({"--data": None, "--schema": None}, "give --data DATA.csv with --schema"),
    ({"--dataset": "nosuch", "--data": None, "--schema": None}, "--dataset must be one of"),
    ({"--workload": "nosuch.json"}, "workload"),
    ({"--mechanism": "aim", "--workload": "nosuch.json"}, "no such file"),
    ({"--rows": "0"}, "--rows must be >= 1"),
])
def test_bad_arguments_exit_2(work, capsys, overrides, expected):
    code, err = run(synth_args(work, **overrides), capsys)
    assert code == 2 and expected in err and len(err.splitlines()) == 1
    assert not (work / "out.csv").exists() and not (work / "ledger.json").exists()


def test_existing_ledger_is_never_overwritten(work, capsys):
    (work / "ledger.json").write_text("precious")
    code, err = run(synth_args(work), capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert (work / "ledger.json").read_text() == "precious"


def test_unknown_mechanism_is_usage_error(work, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(synth_args(work, **{"--mechanism": "magic"}))
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.fixture
def ledger(tmp_path):
    path = tmp_path / "ledger.json"
    f = PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=path)
    f.open_run(f.budget, {"mechanism": "test", "domain": {"a": 2, "b": 3}})
    f.charge(GaussianEvent(10.0), what={"release": "marginal", "attrs": ["a"]})
    f.charge(GaussianEvent(16.0), what={"release": "marginal", "attrs": ["b"]})
    f.close_run()
    f.close()
    return path


def test_verify_ok(ledger, capsys):
    assert main(["verify", str(ledger)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["verify", "--json", str(ledger)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


@pytest.mark.parametrize("damage, expected", [
    (lambda t: t[:50], "not valid JSON"),
    (lambda t: t.replace('"b"', '"c"'), "hash"),
    (lambda t: t.replace('"rho":"1/512"', '"rho":"1/5120"'), "entry 2"),
    (lambda t: "[]", "ledger"),
])
def test_verify_rejects_truncated_or_tampered(ledger, capsys, damage, expected):
    text = ledger.read_text()
    assert '"rho":"1/512"' in text  # sigma = 16 costs 1 / (2 * 256), on the grid already
    ledger.write_text(damage(text))
    code, err = run(["verify", str(ledger)], capsys)
    assert code == 3 and expected in err and "does NOT verify" in err


def test_verify_reports_a_cut_off_ledger_as_incomplete(ledger, capsys):
    text = ledger.read_text()
    ledger.write_text(text[: len(text) - 300])   # a crash in the middle of the last append
    code, err = run(["verify", str(ledger)], capsys)
    assert code == 4 and "INCOMPLETE" in err


def test_verify_missing_file_is_input_error(tmp_path, capsys):
    code, err = run(["verify", str(tmp_path / "none.json")], capsys)
    assert code == 2 and "no such file" in err


def test_schema_infer_warns_not_private(work, capsys):
    code = main(["schema", "infer", str(work / "data.csv"), "--bounds", "size=0:10",
                 "--out", str(work / "drafted.json")])
    err = capsys.readouterr().err
    assert code == 0 and "NOT PRIVATE" in err
    drafted = json.loads((work / "drafted.json").read_text())
    assert "NOT PRIVATE" in drafted["warning"] and "['color', 'flag']" in drafted["warning"]
    assert drafted["columns"]["size"]["bins"][0] == 0
    assert drafted["columns"]["color"]["categories"] == ["blue", "green", "red"]


@pytest.mark.parametrize("flag, value", [("--bounds", "size=3"), ("--bounds", "size=5:1"),
                                         ("--categories", "color=a,a")])
def test_schema_infer_bad_flags(work, capsys, flag, value):
    code, err = run(["schema", "infer", str(work / "data.csv"), flag, value], capsys)
    assert code == 2 and flag in err


def test_evaluate_json_and_report(work, capsys):
    out = work / "report"
    code = main(["evaluate", "--real", str(work / "data.csv"), "--synth", str(work / "data.csv"),
                 "--schema", str(work / "schema.json"), "--workload", "all-2way", "--json",
                 "--report", str(out)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["workload_error"] == 0.0 and len(doc["marginals"]) == 3
    assert {p.name for p in out.iterdir()} == {"index.html", "oneway.png",
                                               "marginal_errors.png"}


def test_evaluate_bad_synthetic_names_the_file(work, capsys):
    bad = work / "bad.csv"
    bad.write_text("color,size,flag\nred,1,maybe\n")
    code, err = run(["evaluate", "--real", str(work / "data.csv"), "--synth", str(bad),
                     "--schema", str(work / "schema.json")], capsys)
    assert code == 2 and "bad.csv" in err and "'maybe'" in err


def test_report_with_bounds_including_zero_error(tmp_path):
    import numpy as np

    from dpcore.evaluation import evaluate
    from dpcore.report import bound_pairs, write_report
    from dpcore.schema import Schema
    schema = Schema.from_dict({"a": 2, "b": 3})
    real = np.array([[0, 0], [1, 2], [1, 1], [0, 2]])
    synth = np.array([[0, 0], [1, 2], [1, 1], [0, 1]])
    bounds = [{"attrs": ["a"], "bound": 0.5, "level": 0.95, "supported": True},
              {"attrs": ["a", "b"], "bound": 1.0, "level": 0.95, "supported": False},
              {"attrs": ["b"], "bound": None, "level": 0.95, "supported": False}]
    pairs = bound_pairs(real, synth, schema, bounds)
    assert pairs == [(("a",), 0.0, 0.5), (("a", "b"), 2.0, 1.0)]
    index = write_report(tmp_path / "r", real, synth, schema,
                         evaluate(real, synth, schema.domain_dict(), "all-2way"),
                         {"format": "dpcore-result", "confidence_bounds": bounds})
    assert "1 of 2 finite bounds hold" in index.read_text()
    assert (tmp_path / "r" / "confidence_bounds.png").stat().st_size > 0


def test_synth_progress_bar_and_summary_on_a_terminal(work, capsys, monkeypatch):
    import sys
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = [a for a in synth_args(work, **{"--seed": "1"}) if a != "--quiet"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "% of budget" in err and "MST finished" in err and "(1, 1e-06)-DP" in err
    assert (work / "out.csv").exists() and main(["verify", str(work / "ledger.json")]) == 0


def test_synth_quiet_off_a_terminal_prints_nothing(work, capsys):
    assert main(synth_args(work)) == 0
    assert capsys.readouterr().err == ""
