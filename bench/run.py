"""Benchmark runner: dpcore vs the reference Private-PGM (`mbi`), side by side.

For every (dataset, workload, mechanism, epsilon, seed) and each implementation, one child
process runs the mechanism on the same encoded CSV, the same workload file and the same zCDP
budget rho (computed once here from (epsilon, delta)), under a time cap. The runner
measures, from outside the child:
  wall_s       wall-clock seconds from spawn to exit (includes interpreter start and imports),
  load_avg     1-minute load average before/after the run (the machine may be shared),
  cpu_s        user + system CPU seconds of the child (os.wait4 rusage),
  peak_rss_mb  peak resident set size of the child, ru_maxrss from os.wait4 (KiB -> MiB),
and computes the workload error from the child's synthetic CSV (bench/common.py). A child that
exceeds its cap (CPU seconds; 3x that in wall seconds) is killed (whole process group) and
recorded as "timeout" (or "memcap" above --mem-cap MB resident); a non-zero exit or unreadable output is recorded as "crash" with the tail of its stderr. Nothing is dropped.

Rows accumulate in bench/results/results.csv (rewritten atomically after every run); rows
already present with the same key are skipped unless --rerun, so a long grid can be resumed.

  python bench/run.py --quick                 # CI smoke test (exit 1 if a dpcore run fails)
  python bench/run.py --datasets adult-pgm --mechanisms mst aim --eps 0.1 1 10 --seeds 0
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.append(ROOT)  # an installed dpcore wins; else the source tree (with a built _core)
import common  # noqa: E402

VENV_PYTHON = os.path.join(HERE, ".venv-mbi", "bin", "python")
WORK = os.path.join(HERE, "work")
RESULTS = os.path.join(HERE, "results", "results.csv")
MECHANISMS = ("aim", "mst", "mwem")
IMPLS = ("dpcore", "mbi")
DEFAULT_CAPS = {"aim": 1200.0, "mst": 600.0, "mwem": 900.0}
KEY = ("dataset", "workload", "mechanism", "impl", "epsilon", "seed")
COLUMNS = KEY + (
    "delta", "rho", "status", "error", "wall_s", "mechanism_s", "cpu_s", "peak_rss_mb",
    "rounds", "measurements", "model_size_mb", "synthetic_rows", "ledger_ok", "cap_s", "load_avg",
    "timings", "version", "machine", "started_utc", "note")


def machine() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         platform.processor())
    except OSError:
        model = platform.processor()
    return f"{os.cpu_count()} cpu {model}; {platform.system()} {platform.release()}"


def rho_for(epsilon: float, delta: float) -> float:
    """zCDP budget for (epsilon, delta)-DP by the CKS conversion, used by BOTH sides."""
    from dpcore.accounting.conversions import approx_dp_to_zcdp

    return float(approx_dp_to_zcdp(epsilon, delta))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return 0.0


def run_child(cmd: list[str], cap: float, log_path: str, mem_cap_mb: float) -> dict:
    """Run cmd in its own session and wait; kill its process group when it has used `cap` CPU
    seconds, 3 x `cap` wall seconds, or more than `mem_cap_mb` resident memory. The CPU cap
    keeps the limit meaningful on a machine shared with other work, where a niced child may
    get a small share of the cores; the memory cap protects that other work."""
    start = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True)
        timed_out = threading.Event()
        over_memory = threading.Event()
        finished = threading.Event()

        def watchdog() -> None:
            while not finished.wait(0.5):
                if _rss_mb(proc.pid) > mem_cap_mb:
                    over_memory.set()
                if (over_memory.is_set() or _cpu_seconds(proc.pid) > cap
                        or time.perf_counter() - start > 3 * cap):
                    timed_out.set()
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    return

        guard = threading.Thread(target=watchdog, daemon=True)
        guard.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            finished.set()
            guard.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": time.perf_counter() - start,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024.0,
        "returncode": proc.returncode,
        "timed_out": timed_out.is_set() and not over_memory.is_set(),
        "over_memory": over_memory.is_set(),
    }


def tail(path: str, lines: int = 3) -> str:
    """The last non-empty lines of a child's log (where the exception is), on one line."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4000))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)[-400:]


def one_run(cfg: dict, args) -> dict:
    files = common.dataset_files(cfg["dataset"])
    cliques = common.workload_cliques(cfg["dataset"], cfg["workload"])
    tag = "{dataset}_{workload}_{mechanism}_{impl}_eps{epsilon:g}_s{seed}".format(**cfg)
    out_dir = os.path.join(args.work, tag)
    os.makedirs(out_dir, exist_ok=True)
    for stale in ("result.json", "synthetic.csv"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.remove(os.path.join(out_dir, stale))
    wl_path = os.path.join(args.work, f"workload_{cfg['dataset']}_{cfg['workload']}.json")
    with open(wl_path + ".tmp", "w") as f:
        json.dump([list(c) for c in cliques], f)
    os.replace(wl_path + ".tmp", wl_path)

    worker = (["nice", "-n", str(args.nice)] if args.nice else [])
    if cfg["impl"] == "mbi":
        worker += [VENV_PYTHON, os.path.join(HERE, "reference", "run_mbi.py")]
    else:
        worker += [sys.executable, os.path.join(HERE, "dpcore_run.py"),
                   "--epsilon", repr(cfg["epsilon"]), "--delta", repr(cfg["delta"])]
    worker += ["--mechanism", cfg["mechanism"], "--data", files.csv, "--domain", files.domain,
               "--workload", wl_path, "--rho", repr(cfg["rho"]), "--seed", str(cfg["seed"]),
               "--out", out_dir]
    if cfg["mechanism"] == "mwem":
        worker += ["--rounds", str(cfg["mwem_rounds"])]
    row = dict(cfg, cap_s=cfg["cap_s"], machine=machine(),
               started_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    log_path = os.path.join(out_dir, "log.txt")
    load_before = os.getloadavg()[0]
    facts = run_child(worker, cfg["cap_s"], log_path, args.mem_cap)
    row.update(load_avg=f"{load_before:.1f}/{os.getloadavg()[0]:.1f}", wall_s=round(facts["wall_s"], 3), cpu_s=round(facts["cpu_s"], 3),
               peak_rss_mb=round(facts["peak_rss_mb"], 1))
    if facts["over_memory"]:
        row.update(status="memcap", note=f"killed above {args.mem_cap:g} MB RSS; {tail(log_path, 1)}")
        return row
    if facts["timed_out"]:
        row.update(status="timeout", note=f"killed at cap {cfg['cap_s']:g} CPU-s (or 3x wall); {tail(log_path, 1)}")
        return row
    if facts["returncode"] != 0:
        row.update(status="crash", note=f"exit {facts['returncode']}: {tail(log_path)}")
        return row
    try:
        with open(os.path.join(out_dir, "result.json")) as f:
            result = json.load(f)
        synth = os.path.join(out_dir, "synthetic.csv")
        row["error"] = round(common.workload_error(files.csv, synth, files.domain_dict(), cliques), 6)
        with open(synth) as f:
            row["synthetic_rows"] = sum(1 for _ in f) - 1
    except (OSError, ValueError, KeyError) as exc:
        row.update(status="crash", note=f"bad output: {exc}")
        return row
    timings = result.get("timings", {})
    row.update(status="ok", rounds=result.get("rounds"), measurements=result.get("measurements"),
               model_size_mb=_round(result.get("model_size_mb"), 4),
               mechanism_s=_round(timings.get("mechanism"), 3),
               ledger_ok=result.get("ledger_ok", ""), version=result.get("version", ""),
               timings=json.dumps({k: round(v, 3) for k, v in timings.items()}, sort_keys=True),
               note="; ".join(x for x in (result.get("note", ""), _route(result)) if x))
    return row


def _route(result: dict) -> str:
    route = result.get("marginals_route")
    return f"selection marginals via {route}" if route else ""


def _round(x, nd):
    return "" if x is None else round(float(x), nd)


def load_rows(path: str) -> list[dict]:
    """Rows of results.csv, plus any row in the append-only journal (runs.jsonl beside it)
    that the CSV lacks, so a row lost by a concurrent writer is recovered."""
    rows: dict[tuple, dict] = {}
    if os.path.exists(path):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                rows[key_of(r)] = r
    journal = os.path.join(os.path.dirname(path), "runs.jsonl")
    if os.path.exists(journal):
        with open(journal) as f:
            for line in f:
                if line.strip():
                    r = {k: ("" if v is None else str(v)) for k, v in json.loads(line).items()}
                    k = key_of(r)
                    if k not in rows or rows[k].get("started_utc", "") < r.get("started_utc", ""):
                        rows[k] = r
    return list(rows.values())


def record_row(path: str, row: dict) -> None:
    """Append the row to the journal, then merge it into results.csv under a file lock (several
    runners may share one results directory)."""
    import fcntl

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.join(os.path.dirname(path), "runs.jsonl"), "a") as journal:
        fcntl.flock(journal, fcntl.LOCK_EX)  # the journal doubles as the lock
        journal.write(json.dumps({c: row.get(c, "") for c in COLUMNS}) + "\n")
        journal.flush()
        rows = [r for r in load_rows(path) if key_of(r) != key_of(row)] + [row]
        save_rows(path, rows)


def save_rows(path: str, rows: list[dict]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    order = {m: i for i, m in enumerate(common.DATASETS)}
    rows = sorted(rows, key=lambda r: (order.get(r["dataset"], 99), r["workload"], r["mechanism"],
                                       float(r["epsilon"]), int(r["seed"]), r["impl"]))
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({c: r.get(c, "") for c in COLUMNS})
    os.replace(tmp, path)


def key_of(row: dict) -> tuple:
    return tuple(str(row[k]) if k != "epsilon" else f"{float(row[k]):g}" for k in KEY)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["adult-pgm"], choices=common.DATASETS)
    p.add_argument("--workloads", nargs="+", default=["all3way"], choices=common.WORKLOADS)
    p.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    p.add_argument("--impls", nargs="+", default=list(IMPLS), choices=IMPLS)
    p.add_argument("--eps", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--cap", type=float, default=None, help="seconds per run (default per mechanism)")
    p.add_argument("--mem-cap", type=float, default=10000.0,
                   help="MB of resident memory above which a run is killed (status memcap)")
    p.add_argument("--mwem-rounds", type=int, default=None,
                   help="MWEM+PGM rounds T, same for both sides (default: number of attributes)")
    p.add_argument("--nice", type=int, default=19, help="niceness of children (0: none)")
    p.add_argument("--out", default=os.path.dirname(RESULTS),
                   help="directory for results.csv (default bench/results); children's files go "
                        "to bench/work, or OUT/work when --out is given")
    p.add_argument("--work", default=None, help="directory for the children's files "
                   "(default bench/work, or OUT/work when --out is given)")
    p.add_argument("--rerun", action="store_true", help="rerun configurations already recorded")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke test: nursery, all3way, eps 1, seed 0, short caps, own results file")
    args = p.parse_args(argv)
    explicit_out = args.out != os.path.dirname(RESULTS)
    if args.quick:
        args.datasets, args.workloads, args.eps, args.seeds = ["nursery"], ["all3way"], [1.0], [0]
        args.cap = args.cap or 240.0
        if args.out == os.path.dirname(RESULTS):
            args.out = os.path.join(WORK, "quick")
        args.rerun = True
        if not os.path.exists(VENV_PYTHON):
            print("reference venv absent (bench/setup_reference.sh): running dpcore only")
            args.impls = ["dpcore"]
    if "mbi" in args.impls and not os.path.exists(VENV_PYTHON):
        # The reference lives in its own venv, made here on first use (never a dpcore dependency).
        print(f"creating the reference venv {os.path.dirname(os.path.dirname(VENV_PYTHON))} (mbi from PyPI) ...",
              flush=True)
        setup = subprocess.run(["bash", os.path.join(HERE, "setup_reference.sh")])
        if setup.returncode != 0 or not os.path.exists(VENV_PYTHON):
            p.error("--impls mbi needs the reference venv and bench/setup_reference.sh failed")
    args.results = os.path.join(args.out, "results.csv")
    if args.work is None:
        args.work = os.path.join(args.out, "work") if explicit_out or args.quick else WORK
    if not (0 < args.delta < 1):
        p.error(f"--delta must be in (0, 1), got {args.delta}")
    if any(not e > 0 for e in args.eps):
        p.error(f"--eps values must be > 0, got {args.eps}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    done = {key_of(r) for r in load_rows(args.results)}
    failures = 0
    for dataset in args.datasets:
        n_attrs = len(common.dataset_files(dataset).domain_dict())
        for workload in args.workloads:
            if common.workload_cliques(dataset, workload) is None:
                print(f"skip {dataset}/{workload}: no label defined")
                continue
            for mechanism in args.mechanisms:
                for eps in args.eps:
                    for seed in args.seeds:
                        for impl in args.impls:
                            cfg = dict(dataset=dataset, workload=workload, mechanism=mechanism,
                                       impl=impl, epsilon=eps, seed=seed, delta=args.delta,
                                       rho=rho_for(eps, args.delta),
                                       cap_s=args.cap or DEFAULT_CAPS[mechanism],
                                       mwem_rounds=args.mwem_rounds or n_attrs)
                            if key_of(cfg) in done and not args.rerun:
                                continue
                            print(f"run {key_of(cfg)} cap {cfg['cap_s']:g}s ...", flush=True)
                            row = one_run(cfg, args)
                            print(f"    {row['status']} wall {row['wall_s']}s rss {row['peak_rss_mb']}MB "
                                  f"error {row.get('error', '')} {row.get('note', '')[:300]}", flush=True)
                            if impl == "dpcore" and row["status"] != "ok":
                                failures += 1
                            record_row(args.results, row)
    if args.quick and failures:
        print(f"quick benchmark: {failures} dpcore run(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
