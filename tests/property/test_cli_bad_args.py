"""`dpcore synth` over generated (mostly bad) argument values on a tiny CSV and schema: every
run either succeeds with a verifying ledger, or exits 2/3 with exactly one line on stderr, no
traceback, no leftover files, its inputs untouched and no budget spent (issue 16)."""
import contextlib
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore.cli import main

SCHEMA = {"columns": {"color": {"type": "categorical", "categories": ["red", "green", "blue"]},
                      "flag": {"type": "categorical", "categories": ["y", "n"]}}}
DATA = "color,flag\n" + "red,y\ngreen,n\nblue,y\nred,n\n" * 5

numbers = st.one_of(
    st.integers(-3, 40).map(str),
    st.sampled_from(["0", "1e-300", "1e308", "nan", "inf", "-inf", "1e8", "1e11", "1e23",
                     "100000000", "100000000000", str(2**64), str(2**128 + 1), "abc", "",
                     "0.5", "-0"]),
    st.floats(-1e6, 1e6).map(repr))
# --epsilon: invalid values, and valid ones from absurdly small (noise ~1e300, a noisy total
# of 1e24 rows) to absurdly large (a budget past the filter's cap).
epsilons = st.one_of(st.sampled_from(["0", "-1", "nan", "inf", "-inf", "abc", "", "-0", "1e-300",
                                      "4e16", "1e-12"]),
                     st.floats(1e-6, 1e6).map(repr))
weights = st.one_of(st.sampled_from([0, 1, -1, 1e308, 5e-324, "Infinity", "NaN"]),
                    st.floats(0, 10))


@st.composite
def arguments(draw):
    def pick(good, bad=numbers):
        """Mostly a good value, one time in four a bad one: runs succeed often enough to
        check the success path too."""
        return draw(bad) if draw(st.integers(0, 3)) == 0 else draw(good)

    args = {"--mechanism": draw(st.sampled_from(["mst", "independent", "aim", "mwem"])),
            "--epsilon": pick(st.sampled_from(["1", "0.3", "5"]), epsilons),
            "--delta": pick(st.sampled_from(["1e-6", "0.01"]))}
    if draw(st.booleans()):
        args["--rows"] = pick(st.sampled_from(["1", "7", "50"]))
    if draw(st.booleans()):
        args["--seed"] = pick(st.sampled_from(["0", "1", str(2**64 - 1)]))
    if args["--mechanism"] in ("aim", "mwem"):
        args["--rounds"] = pick(st.sampled_from(["2", "3"]))
        if draw(st.booleans()):
            args["--max-model-size"] = pick(st.sampled_from(["1", "80"]))
        args["--workload"] = draw(st.sampled_from(["all-2way", "all-1way", "w.json"]))
    args["--out"] = pick(st.just("out.csv"), st.sampled_from(
        ["data.csv", "schema.json", "ledger.json", "sub/out.csv", "out.parquet", "w.json"]))
    if draw(st.booleans()):
        args["--result"] = pick(st.just("result.json"),
                                st.sampled_from(["schema.json", "out.csv", "data.csv"]))
    return args, (pick(st.floats(0.1, 10), weights), pick(st.floats(0, 10), weights))


def ledger_spent(path: Path):
    return json.loads(path.read_text()).get("rho_spent")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments())
def test_synth_bad_arguments_fail_cleanly_or_succeed(drawn):
    args, (w1, w2) = drawn
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "data.csv").write_text(DATA)
        (work / "schema.json").write_text(json.dumps(SCHEMA))
        (work / "w.json").write_text(json.dumps(
            [{"attrs": ["color", "flag"], "weight": w1}, {"attrs": ["flag"], "weight": w2}])
            .replace('"Infinity"', "Infinity").replace('"NaN"', "NaN"))
        inputs = {p.name: p.read_bytes() for p in work.iterdir()}
        argv = ["synth", "--quiet", "--data", str(work / "data.csv"),
                "--schema", str(work / "schema.json"), "--ledger", str(work / "ledger.json")]
        for flag, value in args.items():
            if flag in ("--out", "--result", "--workload") and value != "all-2way" \
                    and value != "all-1way":
                value = str(work / value)
            argv += [f"{flag}={value}"]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as exit_info:  # argparse's usage errors
                code = exit_info.code
        lines = err.getvalue().strip().splitlines()
        ledger = work / "ledger.json"
        left = {p.name for p in work.iterdir()} - set(inputs)
        if code == 0:
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["verify", "--allow-fixed-seed", str(ledger)]) == 0
            outputs = {Path(args[k]).name for k in ("--out", "--result") if args.get(k)}
            assert left <= {"ledger.json", "ledger.json.private"} | outputs
        else:
            assert code in (2, 3), (code, lines)
            assert len(lines) == 1 and "Traceback" not in err.getvalue(), lines
            assert not ledger.exists() or ledger_spent(ledger) in ("0", None), lines
            assert left <= {"ledger.json"}, (left, lines)
            assert {p.name: p.read_bytes() for p in work.iterdir() if p.name in inputs} == inputs
