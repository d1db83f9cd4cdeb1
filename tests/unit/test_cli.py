"""CLI input handling: every bad input exits 2 (or 3 for privacy) with one line naming the
problem, and leaves no output file behind. These run in-process; all but the small runs of
the product-mixture mechanisms stop before any mechanism runs."""
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
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's own usage errors (one line, exit 2)
        code = exit_info.code
    err = capsys.readouterr().err.strip()
    return code, err


def edit_data(work, old, new):
    path = work / "data.csv"
    path.write_text(path.read_text().replace(old, new, 1))


@pytest.mark.parametrize("mutate, expected", [
    (lambda w: edit_data(w, "green,7,n", "green,7,n,extra"), "row 2 has 4 fields but the header has 3"),
    (lambda w: (w / "data.csv").write_text((w / "data.csv").read_text().replace(",", ";")),
     "wrong delimiter"),
    (lambda w: (w / "data.csv").write_text("\n".join(
        ",".join(line.split(",")[:2]) for line in (w / "data.csv").read_text().splitlines())),
     "lacks schema column(s) ['flag']"),
    (lambda w: (w / "data.csv").write_text("\n".join(
        line + (",z" if i == 0 else ",1")
        for i, line in enumerate((w / "data.csv").read_text().splitlines()))),
     "not in the schema"),
    (lambda w: edit_data(w, "green,7,n", "purple,7,n"), "column 'color', row 2: the value is not one of"),
    (lambda w: edit_data(w, "green,7,n", "green,NaN,n"), "column 'size', row 2: the value is not a finite plain decimal"),
    (lambda w: edit_data(w, "green,7,n", "green,11,n"), "above the upper bound 10"),
    (lambda w: (w / "schema.json").write_text(json.dumps({"columns": dict(
        SCHEMA["columns"], size={"type": "numeric", "bins": [0, 5, 3, 10]})})),
     "bin edges must not decrease"),
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
    ({"--epsilon": "nan"}, "--epsilon must be a plain decimal number"),
    ({"--epsilon": "abc"}, "--epsilon must be a plain decimal number"),
    ({"--epsilon": "1_0"}, "--epsilon must be a plain decimal number"),
    ({"--delimiter": "ab"}, "the delimiter must be one printable ASCII character"),
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


def test_evaluate_says_no_correlation_gap_without_two_numeric_columns(work, capsys):
    code = main(["evaluate", "--real", str(work / "data.csv"), "--synth", str(work / "data.csv"),
                 "--schema", str(work / "schema.json")])
    out = capsys.readouterr().out
    assert code == 0 and "largest correlation gap: n/a" in out, out    # one numeric column


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
    assert code == 2 and "bad.csv" in err and "'maybe'" not in err and "value withheld" in err


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
    assert (work / "out.csv").exists()
    assert main(["verify", "--allow-fixed-seed", str(work / "ledger.json")]) == 0


def test_synth_quiet_off_a_terminal_prints_nothing(work, capsys):
    assert main(synth_args(work)) == 0
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ issue 16: plan before spending
def assert_nothing_spent(work, code, err, expected, status=2):
    assert code == status and expected in err, err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert not (work / "ledger.json").exists()
    assert sorted(p.name for p in work.iterdir()) == sorted(
        p for p in ("data.csv", "schema.json", "w.json", "out.csv", "result.json")
        if (work / p).exists())


@pytest.mark.parametrize("overrides, expected", [
    ({"--rows": "100000000000"}, "rows must be <= 357913941"),
    ({"--rows": "1e11"}, "invalid int value: '1e11'"),
    ({"--rows": "1e23"}, "invalid int value: '1e23'"),
    ({"--seed": str(2**128 + 1)}, "seed must be in [0, 2**64)"),
    ({"--seed": "-1"}, "seed must be in [0, 2**64)"),
    ({"--mechanism": "aim", "--rounds": "100000000"}, "rounds must be an int in [3, 10000]"),
    ({"--mechanism": "aim", "--rounds": "1e8"}, "invalid int value: '1e8'"),
    ({"--mechanism": "mwem", "--rounds": "0"}, "rounds must be an int in [1, 10000]"),
    ({"--mechanism": "aim", "--max-model-size": "1e-300"}, "first round would have no candidate"),
    ({"--mechanism": "aim", "--max-model-size": "inf"}, "max_model_size must be > 0 and <="),
    ({"--mechanism": "mwem", "--max-model-size": "nan"}, "max_model_size must be > 0 and <="),
    ({"--mechanism": "mwem", "--max-model-size": "1e-300"}, "no candidate"),
])
def test_infeasible_runs_exit_2_before_any_charge(work, capsys, overrides, expected):
    code, err = run(synth_args(work, **overrides), capsys)
    assert_nothing_spent(work, code, err, expected)


@pytest.mark.parametrize("weights, expected", [
    ([0, 0], "weights must not all be 0"),
    ([-1, 1], "weight"),
    ([1, "Infinity"], "weight"),
])
def test_bad_workload_weights_exit_2_before_any_charge(work, capsys, weights, expected):
    (work / "w.json").write_text(json.dumps(
        [{"attrs": ["color", "size"], "weight": weights[0]},
         {"attrs": ["flag"], "weight": weights[1]}]).replace('"Infinity"', "Infinity"))
    code, err = run(synth_args(work, **{"--mechanism": "aim", "--workload": str(work / "w.json")}),
                    capsys)
    assert_nothing_spent(work, code, err, expected)


def test_huge_workload_weights_run_and_spend_exactly_the_budget(work, capsys):
    (work / "w.json").write_text(json.dumps([{"attrs": ["color", "size"], "weight": 1e308},
                                             {"attrs": ["flag"], "weight": 1e308}]))
    argv = synth_args(work, **{"--mechanism": "aim", "--workload": str(work / "w.json"),
                               "--rounds": "3", "--seed": "1"})
    assert main(argv) == 0
    assert main(["verify", "--allow-fixed-seed", "--json", str(work / "ledger.json")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["rho_spent"] == report["rho_budget"]


@pytest.mark.parametrize("mechanism", ["mst", "aim", "mwem", "independent"])
def test_marginals_beyond_the_cell_cap_exit_2_before_any_charge(work, capsys, mechanism):
    from dpcore import _core
    old = _core.set_max_table_cells(2)  # smaller than every column (3, 5, 2 cells) but flag
    try:
        code, err = run(synth_args(work, **{"--mechanism": mechanism}), capsys)
    finally:
        _core.set_max_table_cells(old)
    assert_nothing_spent(work, code, err, "above the cell cap 2" if mechanism != "aim"
                         and mechanism != "mwem" else "max_model_size")


def test_pair_beyond_the_cell_cap_stops_mst_before_its_first_third(work, capsys):
    from dpcore import _core
    old = _core.set_max_table_cells(20)  # every column fits; the pairs (15 + 6 + 10) do not
    try:
        code, err = run(synth_args(work), capsys)
    finally:
        _core.set_max_table_cells(old)
    assert_nothing_spent(work, code, err, "MST's spanning-tree selection needs up to 31 cells")


def test_parquet_output_without_a_parquet_engine(work, capsys, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("pyarrow", "fastparquet")
                        else real(name, *a))
    code, err = run(synth_args(work, **{"--out": str(work / "out.parquet")}), capsys)
    assert_nothing_spent(work, code, err, "writing Parquet needs pyarrow")


def test_output_that_cannot_fit_on_the_disk(work, capsys, monkeypatch):
    import shutil
    from collections import namedtuple
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 100, 100))
    code, err = run(synth_args(work, **{"--rows": "17"}), capsys)  # 17 x 3 x 2 = 102 > 100
    assert_nothing_spent(work, code, err, "need at least 102 bytes, but the disk has 100 free")


# ------------------------------------------------------------------ never overwrite what you read
@pytest.mark.parametrize("overrides, expected", [
    ({"--out": "{data.csv}"}, "--out '{data.csv}' is the same file as --data"),
    ({"--result": "{schema.json}"}, "--result '{schema.json}' is the same file as --schema"),
    ({"--ledger": "{data.csv}"}, "--ledger '{data.csv}' is the same file as --data"),
    ({"--result": "{out.csv}"}, "--result '{out.csv}' is the same file as --out"),
    ({"--ledger": "{out.csv}"}, "--ledger '{out.csv}' is the same file as --out"),
    ({"--out": "{link.csv}"}, "is the same file as --data"),
    ({"--out": "{hard.csv}"}, "is the same file as --data"),
    ({"--mechanism": "aim", "--workload": "{w.json}", "--result": "{w.json}"},
     "is the same file as --workload"),
    ({"--mechanism": "nist-mst", "--public": "{p.csv}", "--out": "{p.csv}"},
     "--out '{p.csv}' is the same file as --public"),
    # public data is read uncharged: the sensitive table passed as "public" is refused
    ({"--mechanism": "nist-mst", "--public": "{hard.csv}"}, "is the same file as --data"),
])
def test_an_output_never_replaces_an_input_or_another_output(work, capsys, overrides, expected):
    import os
    (work / "w.json").write_text(json.dumps([["color", "flag"]]))
    (work / "p.csv").write_bytes((work / "data.csv").read_bytes())
    os.symlink(work / "data.csv", work / "link.csv")
    os.link(work / "data.csv", work / "hard.csv")
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    def fill(text):
        for name in list(before) + ["out.csv"]:
            text = text.replace("{" + name + "}", str(work / name))
        return text

    code, err = run(synth_args(work, **{k: fill(v) for k, v in overrides.items()}), capsys)
    assert code == 2 and fill(expected) in err, err
    assert {p.name: p.read_bytes() for p in work.iterdir()} == before


@pytest.mark.parametrize("flag, name", [("--out", "out.csv"), ("--result", "result.json")])
def test_existing_output_needs_force(work, capsys, flag, name):
    (work / name).write_text("keep me")
    code, err = run(synth_args(work, **{flag: str(work / name)}), capsys)
    assert code == 2 and "already exists" in err and "--force" in err
    assert (work / name).read_text() == "keep me" and not (work / "ledger.json").exists()
    assert main(synth_args(work, **{flag: str(work / name)}) + ["--force"]) == 0
    assert (work / name).read_text() != "keep me"


def test_force_never_overwrites_a_ledger(work, capsys):
    (work / "ledger.json").write_text("precious")
    code, err = run(synth_args(work) + ["--force"], capsys)
    assert code == 2 and "refusing to overwrite a record of spent budget" in err
    assert (work / "ledger.json").read_text() == "precious"


def test_schema_infer_never_replaces_its_data_or_an_existing_file(work, capsys):
    data = work / "data.csv"
    before = data.read_text()
    code, err = run(["schema", "infer", str(data), "--out", str(data)], capsys)
    assert code == 2 and "is the same file as DATA" in err and data.read_text() == before
    (work / "s2.json").write_text("mine")
    code, err = run(["schema", "infer", str(data), "--out", str(work / "s2.json")], capsys)
    assert code == 2 and "--force" in err and (work / "s2.json").read_text() == "mine"


# ------------------------------------------------------------------ no debris
@pytest.mark.parametrize("writer", ["pandas", "compiled"])
@pytest.mark.parametrize("interrupt, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_interrupted_write_leaves_no_temporaries(work, capsys, monkeypatch, interrupt, status,
                                                 writer):
    import os
    import signal
    import time

    import pandas as pd

    import dpcore.codecsv
    import dpcore.encoding

    real = pd.DataFrame.to_csv

    def kill():
        # the handler runs at the interpreter's next check, which the caller's next step (an
        # error on the None returned) could come before (a flake under load): wait for it here
        os.kill(os.getpid(), getattr(signal, interrupt))
        for _ in range(1000):
            time.sleep(0.01)
        raise AssertionError(f"{interrupt} was not delivered in 10 s")

    def to_csv(self, path, *args, **kwargs):
        real(self.head(3), path, *args, **kwargs)  # a partial temporary file exists now
        assert any(p.name.endswith(".tmp") for p in work.iterdir())
        kill()

    def compiled(plan, chunks, fh, **kwargs):
        fh.write(plan.header)                       # a partial temporary file exists now
        fh.flush()
        assert any(p.name.endswith(".tmp") for p in work.iterdir())
        kill()

    if writer == "pandas":
        monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
        monkeypatch.setattr(dpcore.codecsv, "csv_plan", lambda *a, **k: None)
        monkeypatch.setattr(dpcore.encoding, "_plain_csv", lambda *a, **k: None)  # pandas writes
    else:
        monkeypatch.setattr(dpcore.codecsv, "write_codes_csv", compiled)
    code, err = run(synth_args(work), capsys)
    assert code == status and err.splitlines()[-1] in ("dpcore: interrupted", "dpcore: terminated")
    assert sorted(p.name for p in work.iterdir()) == ["data.csv", "ledger.json", "schema.json"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # main() restored it


def test_clean_lists_and_removes_only_dpcore_temporaries(tmp_path, capsys):
    ours = [".out.csv.ab_cd123.tmp", ".ledger-x1y2z3w4.tmp", ".r.json.abcdefgh.tmp",
            ".out.csv.12345678.probe"]
    others = [".hidden.tmp", "notes.tmp", ".out.csv.short.tmp", "out.csv", ".ledger-abc.tmp"]
    for name in ours + others:
        (tmp_path / name).write_text("x")
    assert main(["clean", str(tmp_path)]) == 0  # no TTY, no --yes: list only
    out = capsys.readouterr().out.split()
    assert sorted(out) == sorted(str(tmp_path / n) for n in ours)
    assert all((tmp_path / n).exists() for n in ours)
    assert main(["clean", str(tmp_path), "--yes"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)
    code, err = run(["clean", str(tmp_path / "nosuch")], capsys)
    assert code == 2 and "is not a directory" in err


def test_help_shows_every_default_and_bare_groups_name_their_subcommands(capsys):
    import re
    from dpcore.cli import build_parser
    parser = build_parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subs.choices.items():
        text = sub.format_help()
        for action in sub._actions:
            if action.default not in (None, False, [], "==SUPPRESS==") and action.option_strings:
                assert re.search(r"default", text), (name, action.dest)
            if action.option_strings and action.dest != "help":
                assert action.help, (name, action.dest)   # every option is documented
    for group, expected in (("schema", "infer"), ("ledger", "create")):
        with pytest.raises(SystemExit) as stop:
            main([group])
        assert stop.value.code == 2
        assert f"needs a subcommand: {expected}" in capsys.readouterr().err


def test_debug_shows_the_offending_value_and_infer_sniffs_the_delimiter(work, capsys):
    data = (work / "data.csv").read_text().replace("green,7,n", "purple,7,n")
    (work / "data.csv").write_text(data)
    base = ["synth", "--data", str(work / "data.csv"), "--schema", str(work / "schema.json"),
            "--epsilon", "1", "--delta", "1e-9", "--mechanism", "mst", "--quiet",
            "--out", str(work / "o.csv"), "--ledger", str(work / "l.json")]
    assert main(base) == 2
    assert "purple" not in capsys.readouterr().err          # redacted by default
    assert main(base + ["--debug"]) == 2
    assert "purple" in capsys.readouterr().err
    (work / "semi.csv").write_text(data.replace(",", ";"))
    assert main(["schema", "infer", str(work / "semi.csv")]) == 0
    drafted = json.loads(capsys.readouterr().out)
    assert set(drafted["columns"]) == {"color", "size", "flag"}


@pytest.mark.parametrize("mechanism, public", [("rap-softmax", False), ("gem-pub", True)])
def test_product_mixture_mechanisms_run_and_verify(work, capsys, mechanism, public):
    (work / "public.csv").write_text((work / "data.csv").read_text())
    argv = synth_args(work, **{"--mechanism": mechanism, "--workload": "all-2way",
                               "--rounds": "2", "--seed": "1",
                               "--public": str(work / "public.csv") if public else None})
    code, err = run(argv, capsys)
    assert code == 0, err
    assert main(["verify", "--allow-fixed-seed", "--epsilon", "1", "--delta", "1e-6",
                 str(work / "ledger.json")]) == 0
    assert (work / "out.csv").read_text().splitlines()[0] == "color,size,flag"


@pytest.mark.parametrize("mechanism, public, expected", [
    ("gem-pub", False, "--public PUBLIC.csv is required"),
    ("rap-softmax", True, "applies to no other mechanism"),
    ("gem", False, "--max-model-size applies to aim and mwem"),
])
def test_public_and_model_size_rules_of_the_adaptive_mechanisms(work, capsys, mechanism, public,
                                                               expected):
    (work / "public.csv").write_text((work / "data.csv").read_text())
    argv = synth_args(work, **{"--mechanism": mechanism,
                               "--public": str(work / "public.csv") if public else None,
                               "--max-model-size": "5" if mechanism == "gem" else None})
    code, err = run(argv, capsys)
    assert code == 2 and expected in err and "\n" not in err
    assert not (work / "ledger.json").exists() and not (work / "out.csv").exists()


@pytest.mark.parametrize("mechanism", ["fem", "sepfem", "dqrs"])
def test_oracle_mechanisms_run_from_the_cli_and_verify(work, capsys, mechanism):
    from dpcore.accounting import verify_ledger
    from dpcore.accounting.ledger import Ledger
    code, err = run(synth_args(work, **{"--mechanism": mechanism, "--workload": "all-2way",
                                        "--rounds": "3", "--seed": "1"}), capsys)
    assert code == 0, err
    assert (work / "out.csv").exists()
    assert verify_ledger(Ledger.load(work / "ledger.json"), allow_fixed_seed=True).ok


def test_privpgd_runs_verifies_and_refuses_what_it_cannot_afford(work, capsys):
    argv = synth_args(work, **{"--mechanism": "privpgd", "--particles": "300", "--epochs": "3",
                               "--lr": "0.05", "--seed": "1"})
    code, err = run(argv, capsys)
    assert code == 0, err
    assert main(["verify", "--allow-fixed-seed", "--epsilon", "1", "--delta", "1e-6",
                 str(work / "ledger.json")]) == 0
    assert (work / "out.csv").read_text().splitlines()[0] == "color,size,flag"
    (work / "ledger.json").unlink()
    (work / "ledger.json.private").unlink()    # a new ledger never shares an old salt file
    (work / "out.csv").unlink()
    for extra, expected in [({"--mechanism": "privpgd", "--particles": str(10 ** 10)}, "particles"),
                            ({"--mechanism": "privpgd", "--epochs": "0"}, "epochs"),
                            ({"--mechanism": "mst", "--particles": "100"}, "apply to privpgd")]:
        code, err = run(synth_args(work, **extra), capsys)
        assert code == 2 and expected in err and "\n" not in err.strip(), err
        assert not (work / "ledger.json").exists() and not (work / "out.csv").exists()


def test_privpgd_protect_file_runs_verifies_and_bad_ones_are_refused_before_any_charge(work, capsys):
    import json
    spec = work / "protect.json"
    spec.write_text(json.dumps({"weights": {"color": 1.0, "size": 0.5}, "threshold": 0.5,
                                "strength": 2.0}))
    argv = synth_args(work, **{"--mechanism": "privpgd", "--particles": "300", "--epochs": "3",
                               "--protect": str(spec)})
    code, err = run(argv, capsys)
    assert code == 0, err
    from dpcore.accounting.ledger import Ledger
    ledger = Ledger.load(work / "ledger.json")
    assert [e.what["release"] for e in ledger.entries if e.kind == "charge"].count("soft_count") == 1
    assert main(["verify", "--epsilon", "1", "--delta", "1e-6", str(work / "ledger.json")]) == 0
    for path in ("ledger.json", "ledger.json.private", "out.csv"):
        (work / path).unlink()
    bad = work / "bad.json"
    for text, expected in [("{not json", "cannot read a JSON object"), ("[1, 2]", "JSON object"),
                           ('{"weights": {"nope": 1}, "threshold": 0}', "not in the schema"),
                           ('{"weights": {"color": 1}, "threshold": 0, "lambda": 1}', "keys")]:
        bad.write_text(text)
        code, err = run(synth_args(work, **{"--mechanism": "privpgd", "--protect": str(bad)}), capsys)
        assert code == 2 and expected in err, err
        assert not (work / "ledger.json").exists() and not (work / "out.csv").exists()
    code, err = run(synth_args(work, **{"--protect": str(spec)}), capsys)     # mst
    assert code == 2 and "apply to privpgd" in err


# ------------------------------------------------------------------ session 14 audit
def test_force_never_replaces_a_ledger_or_salt_file(work, capsys):
    other = work / "other.json"
    PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=other).close()
    before = other.read_bytes()
    for argv in (synth_args(work, **{"--out": str(other)}) + ["--force"],
                 ["schema", "infer", str(work / "data.csv"), "--out", str(other), "--force"]):
        code, err = run(argv, capsys)
        assert code == 2 and "is a dpcore ledger" in err, err
        assert other.read_bytes() == before and not (work / "ledger.json").exists()


def test_a_salt_file_that_cannot_be_created_is_found_before_any_charge(work, capsys, monkeypatch):
    import os as os_module
    real_open = os_module.open

    def no_salt(path, flags, *args):
        if str(path).endswith(".private") and flags & os_module.O_CREAT:
            raise PermissionError(1, "Operation not permitted")
        return real_open(path, flags, *args)
    monkeypatch.setattr(os_module, "open", no_salt)
    code, err = run(synth_args(work), capsys)
    assert code == 2 and "cannot create the ledger's salt file" in err, err
    assert not (work / "ledger.json").exists() and not (work / "out.csv").exists()


def test_a_salt_lost_after_a_completed_run_is_a_warning_not_a_failure(work, capsys, monkeypatch):
    import dpcore.cli.synth as synth_command

    def lost(ledger, synth):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(synth_command, "save_salt", lost)
    code, err = run(synth_args(work), capsys)
    # an error exit would invite a second run, and a second spend
    assert code == 0 and "salt was not saved" in err, err
    assert main(["verify", "--epsilon", "1", "--delta", "1e-6", str(work / "ledger.json")]) == 0


def test_a_partitioned_output_through_a_symbolic_link_is_refused_before_any_charge(work, capsys):
    target = work / "parts"
    target.mkdir()
    for link, points_to in ((work / "link", target), (work / "dangling", work / "nowhere")):
        link.symlink_to(points_to)
        argv = synth_args(work, **{"--mechanism": "independent", "--engine": "dask",
                                   "--out": str(link) + "/"})
        code, err = run(argv, capsys)
        assert code == 2 and "symbolic link" in err, err
        assert not (work / "ledger.json").exists()


def test_verify_names_what_is_wrong_with_a_path_that_exists(work, capsys):
    code, err = run(["verify", str(work)], capsys)
    assert code == 2 and "not a regular file" in err, err


# ------------------------------------------------------------------ session 13: what an output may be
@pytest.mark.parametrize("flag", ["--out", "--result"])
def test_no_output_replaces_the_ledgers_salt_file(work, capsys, flag):
    salt = work / "ledger.json.private"
    code, err = run(synth_args(work, **{flag: str(salt)}) + ["--force"], capsys)
    assert code == 2 and "is the same file as the ledger's salt file" in err, err
    assert not (work / "ledger.json").exists() and not salt.exists()


@pytest.mark.parametrize("flag", ["--out", "--result"])
def test_force_never_replaces_a_fifo_or_device(work, capsys, flag):
    import os
    import stat
    fifo = work / "pipe"
    os.mkfifo(fifo)
    code, err = run(synth_args(work, **{flag: str(fifo)}) + ["--force"], capsys)
    assert code == 2 and "is not a regular file" in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not (work / "ledger.json").exists()


def test_a_planted_salt_file_stops_the_run_before_any_charge(work, capsys):
    import os
    public = work / "public.txt"
    public.write_text("")
    os.symlink(public, work / "ledger.json.private")
    code, err = run(synth_args(work), capsys)
    assert code == 2 and "salt file" in err and "already exists" in err, err
    assert public.read_text() == "" and not (work / "ledger.json").exists()


@pytest.mark.parametrize("plant", ["link", "readable"])
def test_a_continued_ledgers_salt_file_must_be_private(work, capsys, plant):
    import os
    assert main(synth_args(work, **{"--epsilon": "0.5"})) == 0
    salt = work / "ledger.json.private"
    before = salt.read_bytes()
    spent = (work / "ledger.json").read_bytes()
    if plant == "link":
        salt.rename(work / "moved")
        os.symlink(work / "moved", salt)
    else:
        os.chmod(salt, 0o644)
    (work / "out.csv").unlink()
    code, err = run(synth_args(work, **{"--epsilon": "0.5"}) + ["--continue"], capsys)
    assert code == 2 and "salt file" in err and ("link" in err or "0644" in err), err
    assert (work / "ledger.json").read_bytes() == spent          # nothing charged
    assert (work / ("moved" if plant == "link" else "ledger.json.private")).read_bytes() == before


def test_continuing_a_cut_ledger_needs_repair_and_verify_says_so(work, capsys):
    # audit 15 F1: a ledger cut inside its entries was silently repaired by --continue and the
    # rewritten file verified PASS with committed releases gone
    ledger = work / "ledger.json"
    assert main(["ledger", "create", str(ledger), "--epsilon", "2", "--delta", "1e-6"]) == 0
    assert main(synth_args(work, **{"--epsilon": "0.5"}) + ["--continue"]) == 0
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join(lines[:-6]) + lines[-6][:40])
    cut = ledger.read_bytes()
    (work / "out.csv").unlink()
    code, err = run(synth_args(work, **{"--epsilon": "0.5"}) + ["--continue"], capsys)
    assert code == 2 and "ends without its trailer" in err and "--repair" in err, err
    assert ledger.read_bytes() == cut and not (work / "out.csv").exists()
    code, err = run(synth_args(work, **{"--epsilon": "0.5"}) + ["--repair"], capsys)
    assert code == 2 and "--repair applies to --continue" in err, err
    code, err = run(synth_args(work, **{"--epsilon": "0.5"}) + ["--continue", "--repair"], capsys)
    assert code == 0, err
    code = main(["verify", str(ledger)])
    out = capsys.readouterr().out
    assert code == 0 and "--repair" in out and "partial line discarded" in out, out
