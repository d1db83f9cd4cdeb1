"""Scale: CPU, wall and peak RSS per phase of `dpcore synth` at 10^5 ... 10^8 rows (issue 21).

The input is Adult-like: the bundled raw Adult table (48,842 rows, 15 columns) resampled with
replacement to N rows and written to a CSV on disk (``make``; keep it outside the repository).
Each run is one child process running the command line in-process (``dpcore.cli.main``), with
timers around the phases it goes through:

* ``read``      reading and encoding the CSV and the input's SHA-256
                (``dpcore.counted.read_and_hash`` around ``dpcore.encoding.read_codes``; with
                ``--engine stream`` or ``dask``, the one pass that counts the batch; before
                session 15 the memory engine's hash was outside the phases),
* ``mechanism`` the fit (``Synthesizer.fit_codes``): counting, noise,
                estimation, and the mechanism's own synthetic sample,
* ``output``    sampling, decoding and writing the CSV (``Synthesizer.write``; a writer
                around ``Synthesizer.sample`` then ``write_table`` is timed as well). With
                ``dpcore synth``, MST's and AIM's own synthetic table is drawn inside the fit
                (``mechanism``); ``write`` then decodes and writes that table.

Per phase: CPU seconds (``time.process_time``; the machine is shared, so wall time is not the
fair measure), of which system seconds, minor page faults, wall seconds, and the process's
peak RSS so far (``ru_maxrss``) at the phase's end; for the whole child, CPU and peak RSS from ``os.wait4`` (what the OS saw; with the Dask
engine's LocalCluster, CPU includes the worker processes and the peak is the largest single
process). Not private:
it is a benchmark on public data. Run it alone (it is the heavy process).

    python bench/scale.py make --rows 100000 1000000 10000000 --dir /tmp/scale
    python bench/scale.py run --label before --rows 100000 --mechanism mst aim --dir /tmp/scale
    python bench/scale.py report                                 # bench/results/scale.md
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "scale.jsonl")
REPORT = os.path.join(HERE, "results", "scale.md")
ADULT = os.path.join(ROOT, "dpcore", "data", "adult", "adult-raw.csv")
SCHEMA = os.path.join(ROOT, "dpcore", "data", "adult", "schema.json")


def data_path(directory: str, rows: int) -> str:
    return os.path.join(directory, f"adult-{rows}.csv")


_BLOCK = 1_000_000


def _blocks(rows: int, seed: int = 0):
    """The header, then the resampled rows in blocks of _BLOCK lines (one text each)."""
    import numpy as np
    with open(ADULT, encoding="utf-8") as fh:
        header, *lines = fh.read().splitlines()
    yield header + "\n"
    lines = np.array(lines, dtype=object)
    rng = np.random.default_rng(seed)
    left = rows
    while left:
        k = min(left, _BLOCK)
        yield "\n".join(lines[rng.integers(len(lines), size=k)]) + "\n"
        left -= k


def make(rows: int, directory: str, seed: int = 0) -> str:
    """Adult resampled with replacement to ``rows`` rows (the header once), written in blocks
    of lines so memory stays small whatever ``rows`` is."""
    path = data_path(directory, rows)
    if os.path.exists(path):
        return path
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.writelines(_blocks(rows, seed))
    os.replace(tmp, path)
    return path


def parts_glob(directory: str, rows: int, parts: int) -> str:
    return os.path.join(directory, f"adult-{rows}-in-{parts}", "part-*.csv")


def make_parts(rows: int, directory: str, parts: int) -> str:
    """The same N rows cut into ``parts`` files (the Dask engine's tasks), from the one file."""
    pattern = parts_glob(directory, rows, parts)
    folder = os.path.dirname(pattern)
    if os.path.isdir(folder):
        return pattern
    tmp = folder + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    per = -(-rows // parts)
    if not os.path.exists(data_path(directory, rows)) and per % _BLOCK == 0:
        # straight from the generator (10^8 rows: no 10 GB single file first); the parts
        # hold the rows the single file would, in order
        blocks = _blocks(rows)
        header = next(blocks)
        for k in range(parts):
            with open(os.path.join(tmp, f"part-{k:04d}.csv"), "w", encoding="utf-8") as out:
                out.write(header)
                for _ in range(per // _BLOCK):
                    out.write(next(blocks, ""))
        os.replace(tmp, folder)
        return pattern
    source = make(rows, directory)
    with open(source, encoding="utf-8") as fh:
        header = fh.readline()
        for k in range(parts):
            with open(os.path.join(tmp, f"part-{k:04d}.csv"), "w", encoding="utf-8") as out:
                out.write(header)
                for _, line in zip(range(per), fh):
                    out.write(line)
    os.replace(tmp, folder)
    return pattern


# ------------------------------------------------------------------------ child side
_PHASES: list[dict] = []


_OPEN: list[list[float]] = []     # per running phase: CPU and wall of the phases inside it


def _timed(phase: str, fn):
    """``fn`` timed as ``phase``; a phase inside another (the stream engine's one counting
    pass, "read", inside its fit, "mechanism") is taken out of the outer one's time."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        cpu, wall = time.process_time(), time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_SELF)
        _OPEN.append([0.0, 0.0, 0.0, 0])
        try:
            return fn(*args, **kwargs)
        finally:
            inner_cpu, inner_wall, inner_sys, inner_faults = _OPEN.pop()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            usage = resource.getrusage(resource.RUSAGE_SELF)
            # system time (kernel copies, zeroing of fresh pages) and minor page faults
            # (fresh memory touched): what buffer reuse saves shows here
            sys_s, faults = usage.ru_stime - before.ru_stime, usage.ru_minflt - before.ru_minflt
            if _OPEN:
                _OPEN[-1][0] += cpu
                _OPEN[-1][1] += wall
                _OPEN[-1][2] += sys_s
                _OPEN[-1][3] += faults
            _PHASES.append({"phase": phase, "cpu_s": cpu - inner_cpu,
                            "wall_s": wall - inner_wall, "peak_rss_mb": usage.ru_maxrss / 1024,
                            "sys_s": sys_s - inner_sys, "minflt": faults - inner_faults})
    return wrapper


def child(argv: list[str], phases_out: str) -> int:
    """Run ``dpcore`` with timers around its phases; the phases go to ``phases_out``."""
    sys.path.insert(0, ROOT)
    import dpcore.counted as counted
    import dpcore.encoding as encoding
    from mechanisms.synthesizer import Synthesizer
    # the streaming writer samples and decodes inside write_table: one "output" phase then;
    # the stream and Dask engines read in their prefetch (a pass counting the batch), which
    # is "read" (a marginal outside the batch is counted inside "mechanism")
    targets = [(encoding, "read_codes", "read"), (encoding, "write_table", "output"),
               (Synthesizer, "write", "output"),
               (Synthesizer, "fit_codes", "mechanism"), (Synthesizer, "sample", "output"),
               (Synthesizer, "fit_distributed", "mechanism"),
               (Synthesizer, "fit_file", "mechanism"), (counted.CountedTable, "prefetch", "read"),
               (counted, "read_and_hash", "read")]
    for owner, name, phase in targets:
        if hasattr(owner, name):
            setattr(owner, name, _timed(phase, getattr(owner, name)))
    from dpcore.cli import main
    code = main(argv)
    with open(phases_out, "w") as fh:
        json.dump(_PHASES, fh)
    return code


# ------------------------------------------------------------------------ parent side
def run_one(rows: int, mechanism: str, directory: str, label: str, extra: list[str],
            parts: int = 10) -> dict:
    with tempfile.TemporaryDirectory(dir=directory) as work:
        out, ledger, phases = (os.path.join(work, n) for n in ("synth.csv", "ledger.json",
                                                               "phases.json"))
        data = data_path(directory, rows)
        if "dask" in extra:       # the Dask engine reads the same rows from `parts` files
            data = make_parts(rows, directory, parts)
        argv = ["synth", "--data", data, "--schema", SCHEMA,
                "--mechanism", mechanism, "--epsilon", "1", "--delta", "1e-9", "--seed", "0",
                "--out", out, "--ledger", ledger, "--quiet", *extra]
        cmd = [sys.executable, os.path.abspath(__file__), "child", phases, "--", *argv]
        env = dict(os.environ, PYTHONPATH=ROOT)
        wall = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - wall
        err = proc.stderr.read()
        proc.stderr.close()
        code = os.waitstatus_to_exitcode(status)
        record = {"label": label, "rows": rows, "mechanism": mechanism, "extra": extra,
                  "exit": code, "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                  "wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                  "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if code == 0:
            with open(phases) as fh:
                record["phases"] = [{k: (round(v, 2) if isinstance(v, float) else v)
                                     for k, v in p.items()} for p in json.load(fh)]
            record["out_mb"] = round(os.path.getsize(out) / 2 ** 20, 1)
        else:
            record["error"] = err.strip().splitlines()[-3:]
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "a") as fh:
        fh.write(json.dumps(record) + "\n")
    return record


def report() -> str:
    with open(RESULTS) as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    lines = ["# Scale: `dpcore synth` on Adult-like rows (issue 21)", "",
             "Generated by `python bench/scale.py report` from `bench/results/scale.jsonl`. "
             "Adult (raw, 15 columns) resampled to N rows, read from a CSV on disk; "
             "ε = 1, δ = 1e-9, seed 0; one child process per run (CPU and peak RSS from "
             "`wait4`; with `--engine dask`, CPU includes the LocalCluster's workers and the "
             "peak is the largest single process). Phases: CPU-s / peak RSS so far (MB) at the "
             "phase's end; `output` is sampling, decoding and writing; with `--engine stream` "
             "(session 12 on), `read` is the one pass that reads the file and counts the "
             "mechanism's whole batch of marginals, taken out of `mechanism`. Labels name the "
             "commit measured; `before` is the in-memory path of the commit before issue 21's work "
             "(its AIM 10^7 run was stopped for time: issue 21 recorded 4.2 GB).", "",
             "| label | N | mechanism | options | exit | CPU s | wall s | peak RSS MB | "
             "read | mechanism | output |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        cells = {}
        for p in r.get("phases", []):
            key = {"sample": "output", "write": "output"}.get(p["phase"], p["phase"])
            cpu, rss = cells.get(key, (0.0, 0.0))
            cells[key] = (cpu + p["cpu_s"], max(rss, p["peak_rss_mb"]))
        show = [f"{cells[k][0]:.1f} / {cells[k][1]:.0f}" if k in cells else "" for k in
                ("read", "mechanism", "output")]
        lines.append(f"| {r['label']} | {r['rows']:.0e} | {r['mechanism']} | "
                     f"{' '.join(r.get('extra', [])) or '-'} | {r['exit']} | {r['cpu_s']} | "
                     f"{r['wall_s']} | {r['peak_rss_mb']} | " + " | ".join(show) + " |")
    text = "\n".join(lines) + "\n"
    with open(REPORT, "w") as fh:
        fh.write(text)
    return text


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "child":
        rest = sys.argv[2:]
        return child(rest[2:], rest[0])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--rows", type=int, nargs="+", required=True)
    m.add_argument("--dir", required=True)
    r = sub.add_parser("run")
    r.add_argument("--label", required=True)
    r.add_argument("--rows", type=int, nargs="+", required=True)
    r.add_argument("--mechanism", nargs="+", default=["mst", "aim"])
    r.add_argument("--dir", required=True)
    r.add_argument("--extra", default="", help="more synth options, one string "
                   "(\"--engine dask\": the data is cut into --parts files)")
    r.add_argument("--parts", type=int, default=10)
    sub.add_parser("report")
    args = p.parse_args(argv)
    if args.cmd == "make":
        for n in args.rows:
            print(make(n, args.dir))
    elif args.cmd == "run":
        for n in args.rows:
            if "dask" not in args.extra:     # the Dask runs read parts (make_parts)
                make(n, args.dir)
            for mech in args.mechanism:
                rec = run_one(n, mech, args.dir, args.label, args.extra.split(), args.parts)
                print(json.dumps(rec), flush=True)
    else:
        print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
