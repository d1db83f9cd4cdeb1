"""`dpcore synth` over generated (mostly broken) input files — the CSV, the schema and an
existing ledger — on a tiny table: every run either succeeds with a verifying ledger, or exits
2/3 with exactly one line on stderr and no traceback; it never spends budget on a bad input,
never leaves debris and never changes an input file (issue 16). Argument values are generated
in test_cli_bad_args.py."""
import contextlib
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore.cli import main

SCHEMA = {"columns": {"color": {"type": "categorical", "categories": ["red", "green", "blue"]},
                      "flag": {"type": "categorical", "categories": ["y", "n"]},
                      "age": {"type": "numeric", "lower": 0, "upper": 100, "bins": 5}}}
ROWS = [["red", "y", "31"], ["green", "n", "7"], ["blue", "y", "64"], ["red", "n", "45"]] * 5

# Cell values a careless or hostile file holds, by column.
BAD_CELLS = {
    "color": ["purple", "", " red", "RED", "re\nd", "red\x00", "null", "1", "r\u00e9d"],
    "flag": ["", "yes", "Y", "0", "\ufeffy"],
    "age": ["1e400", "nan", "-5", "101", "1_000", "\u0663", "\uff13", "0x10", "", "inf",
            "12.5.1", "1e-400", "31 ", "-0"],
}


# Half of the files are left valid, so that whole runs succeed often enough to check that path.
MUTATIONS = st.sampled_from([0, 0, 0, 1, 1, 2, 3])


@st.composite
def csv_files(draw):
    """A valid file with up to three mutations: bad cells, ragged or trailing-delimiter rows,
    headers, encodings, delimiters and line endings."""
    header, rows = ["color", "flag", "age"], [list(r) for r in ROWS]
    sep, newline, prefix, suffix = ",", "\n", b"", b""
    for _ in range(draw(MUTATIONS)):
        kind = draw(st.sampled_from(["cell", "trailing", "short", "long", "dup-header",
                                     "missing-header", "extra-header", "bom", "latin1", "crlf",
                                     "semicolon", "empty", "header-only", "quoted", "long-field",
                                     "blank-lines", "nul"]))
        i = draw(st.integers(0, len(rows) - 1)) if rows else 0
        if kind == "cell" and rows:
            column = draw(st.sampled_from(header[:3]))
            if column in header and header.index(column) < len(rows[i]):   # a short row
                rows[i][header.index(column)] = draw(st.sampled_from(BAD_CELLS[column]))
        elif kind == "trailing":
            for row in rows:
                row.append("")
        elif kind == "short" and rows:
            rows[i] = rows[i][:-1]
        elif kind == "long" and rows:
            rows[i] = rows[i] + ["x"]
        elif kind == "dup-header" and header:
            header = header[:2] + [header[0]]
        elif kind == "missing-header":
            header, rows = header[:2], [r[:2] for r in rows]
        elif kind == "extra-header":
            header, rows = header + ["extra"], [r + ["1"] for r in rows]
        elif kind == "bom":
            prefix = b"\xef\xbb\xbf"
        elif kind == "latin1":
            suffix = b"red,y,3\xff\n"
        elif kind == "crlf":
            newline = "\r\n"
        elif kind == "semicolon":
            sep = ";"
        elif kind == "empty":
            header, rows = [], []
        elif kind == "header-only":
            rows = []
        elif kind == "quoted" and rows:
            rows[i][0] = '"' + rows[i][0] + '"'
        elif kind == "long-field" and rows:
            rows[i][0] = "r" * 100_000
        elif kind == "blank-lines":
            rows.insert(i, [])
        elif kind == "nul":
            suffix = b"\x00\x00\n"
    lines = [sep.join(header)] + [sep.join(r) for r in rows] if header else []
    return prefix + (newline.join(lines) + newline if lines else "").encode() + suffix


@st.composite
def schema_files(draw):
    """The schema's JSON text with up to two mutations of its keys, values and encoding."""
    schema = json.loads(json.dumps(SCHEMA))
    text = None
    for _ in range(draw(MUTATIONS)):
        kind = draw(st.sampled_from(["drop-column", "dup-category", "no-categories",
                                     "null-category", "bounds-swapped", "huge-bins", "zero-bins",
                                     "float-bins", "huge-bounds", "int-overflow", "version",
                                     "unknown-key", "wrong-type", "deep", "duplicate-keys",
                                     "latin1", "truncated", "constraint-unknown",
                                     "constraint-all", "constraint-ok", "not-object"]))
        cols = schema["columns"]
        if text is not None:
            break
        if kind == "drop-column" and cols:
            cols.pop(draw(st.sampled_from(sorted(cols))))
        elif kind == "dup-category" and "color" in cols:
            cols["color"]["categories"] = ["red", "red", "green", "blue"]
        elif kind == "no-categories" and "flag" in cols:
            cols["flag"]["categories"] = []
        elif kind == "null-category" and "flag" in cols:
            cols["flag"]["categories"] = ["y", "n", None]
        elif kind == "bounds-swapped" and "age" in cols:
            cols["age"].update(lower=100, upper=0)
        elif kind == "huge-bins" and "age" in cols:
            cols["age"]["bins"] = 10**12
        elif kind == "zero-bins" and "age" in cols:
            cols["age"]["bins"] = 0
        elif kind == "float-bins" and "age" in cols:
            cols["age"]["bins"] = 2.5
        elif kind == "huge-bounds" and "age" in cols:
            cols["age"].update(lower=-1e308, upper=1e308)
        elif kind == "int-overflow" and "age" in cols:
            cols["age"]["upper"] = 2**64
        elif kind == "version":
            schema["version"] = 99
        elif kind == "unknown-key":
            schema["colums"] = {}
        elif kind == "wrong-type":
            text = json.dumps({"columns": ["color", "flag"]})
        elif kind == "deep":
            text = "[" * 100_000 + "]" * 100_000
        elif kind == "duplicate-keys":
            text = '{"columns": {}, "columns": ' + json.dumps(schema["columns"]) + "}"
        elif kind == "latin1":
            text = json.dumps(schema).replace("red", "r\u00e9d").encode("latin-1")
        elif kind == "truncated":
            text = json.dumps(schema)[:-3]
        elif kind == "constraint-unknown":
            schema["constraints"] = [{"type": "forbidden", "name": "r",
                                      "when": {"shade": {"in": ["dark"]}}}]
        elif kind == "constraint-all":
            schema["constraints"] = [{"type": "forbidden", "name": "all",
                                      "when": {"flag": {"in": ["y", "n"]}}}]
        elif kind == "constraint-ok":
            schema["constraints"] = [{"type": "forbidden", "name": "no blue n",
                                      "when": {"color": {"in": ["blue"]}, "flag": {"in": ["n"]}}}]
        elif kind == "not-object":
            text = "42"
    text = json.dumps(schema) if text is None else text
    return text if isinstance(text, bytes) else text.encode()


def ledger_files():
    """What may already sit at the ledger path: nothing, a lifetime ledger (valid, spent,
    truncated, edited), or bytes that are no ledger at all."""
    return st.sampled_from([None, None, None, "fresh", "fresh", "small", "truncated", "edited", "garbage", "empty",
                            "json-list"])


def run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit_info:  # argparse's usage errors
            code = exit_info.code
    return code, err.getvalue()


def prepare_ledger(work: Path, kind):
    ledger = work / "ledger.json"
    if kind in ("fresh", "small", "truncated", "edited"):
        epsilon = "0.05" if kind == "small" else "5"
        code, err = run(["ledger", "create", str(ledger), "--epsilon", epsilon, "--delta", "1e-6"])
        assert code == 0, err
        text = ledger.read_bytes()
        if kind == "truncated":
            ledger.write_bytes(text[: len(text) // 2])
        elif kind == "edited":
            ledger.write_bytes(text.replace(b'"epsilon"', b'"epsilonx"', 1))
    elif kind == "garbage":
        ledger.write_bytes(b"\x00\xffnot a ledger")
    elif kind == "empty":
        ledger.write_bytes(b"")
    elif kind == "json-list":
        ledger.write_text("[]")


FUZZ = settings(max_examples=int(__import__("os").environ.get("DPCORE_FUZZ_EXAMPLES", 40)), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(csv=csv_files(), schema=schema_files(), ledger=ledger_files(),
       mechanism=st.sampled_from(["mst", "independent"]))
def test_synth_bad_inputs_fail_cleanly_or_succeed(csv, schema, ledger, mechanism):
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "data.csv").write_bytes(csv)
        (work / "schema.json").write_bytes(schema)
        prepare_ledger(work, ledger)
        before = {p.name: p.read_bytes() for p in work.iterdir()}
        argv = ["synth", "--quiet", "--mechanism", mechanism, "--epsilon", "1",
                "--delta", "1e-6", "--data", str(work / "data.csv"),
                "--schema", str(work / "schema.json"), "--ledger", str(work / "ledger.json"),
                "--out", str(work / "out.csv"), "--seed", "0"]
        if ledger is not None:
            argv.append("--continue")
        code, err = run(argv)
        lines = err.strip().splitlines()
        left = {p.name for p in work.iterdir()} - set(before)
        inputs = {n: b for n, b in before.items() if n != "ledger.json"}
        assert {n: (work / n).read_bytes() for n in inputs} == inputs
        if code == 0:
            assert run(["verify", "--allow-fixed-seed", str(work / "ledger.json")])[0] == 0
            assert left <= {"ledger.json", "ledger.json.private", "out.csv"}, left
        else:
            assert code in (2, 3), (code, lines)
            assert len(lines) == 1 and "Traceback" not in err, lines
            assert left <= {"ledger.json"}, (left, lines)
            ledger_path = work / "ledger.json"
            if "ledger.json" in before:
                assert ledger_path.read_bytes() == before["ledger.json"], lines
            elif ledger_path.exists():
                assert json.loads(ledger_path.read_text()).get("rho_spent") in ("0", None)
