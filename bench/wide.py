"""AIM and MST on wide tables: national2019 widened to d attributes (issue 22).

The NIST CRC excerpt ``national2019`` (27,253 records, 24 integer-coded columns) is widened to
d columns by appending renamed copies of its columns (``PUMA_1``, ``AGEP_1``, ...), so the
candidate count grows like d² while the data stay real. Each run is AIM (all 2-way marginals,
unit weights) and MST at ε = 1, δ = 1e-9, curator seed 0 and sampling seed 0, with the ledger
written to a file as a real run writes it.

Recorded per run: CPU seconds (``time.process_time``: the machine is shared, so wall time is
not the fair measure), the all-2way workload error (AIM Definition 2, unit weights), and the
SHA-256 of the ledger file and of the synthetic records, so a pure speedup can be checked to
change nothing. Not private: it reads the real data to grade. Run it alone.

    python bench/wide.py run --label after [--d 15 25 50 100] [--mechanism aim mst]
    python bench/wide.py profile --d 100 --mechanism aim      # cProfile, top 25 by cumtime
    python bench/wide.py report [--labels A B]                 # bench/results/wide.md
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import itertools
import json
import os
import pstats
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from dpcore.accounting import PrivacyFilter  # noqa: E402
from dpcore.curator import Curator  # noqa: E402
from dpcore.dataset import Dataset  # noqa: E402
from dpcore.domain import Domain  # noqa: E402

DATA = os.environ.get("DPCORE_BENCH_DATA", os.path.join(HERE, "..", "..", "shared", "data"))
RESULTS_JSONL = os.path.join(HERE, "results", "wide.jsonl")
RESULTS_MD = os.path.join(HERE, "results", "wide.md")
WIDTHS = (15, 25, 50, 100)
EPSILON, DELTA, SEED = 1.0, 1e-9, 0


def widened(d: int) -> tuple[np.ndarray, Domain]:
    """national2019's codes and domain widened (or cut) to ``d`` columns by renamed copies."""
    base = os.path.join(DATA, "national2019")
    with open(os.path.join(base, "national2019-domain.json")) as fh:
        sizes = {a: int(n) for a, n in json.load(fh).items()}
    attrs = list(sizes)
    codes = np.loadtxt(os.path.join(base, "national2019.csv"), delimiter=",", skiprows=1,
                       dtype=np.int64, ndmin=2)
    names, shape, cols = [], [], []
    for k in range(d):
        copy, j = divmod(k, len(attrs))
        names.append(attrs[j] if copy == 0 else f"{attrs[j]}_{copy}")
        shape.append(sizes[attrs[j]])
        cols.append(j)
    return np.ascontiguousarray(codes[:, cols]), Domain(tuple(names), tuple(shape))


def workload_error(real: np.ndarray, synth: np.ndarray, shape, pairs) -> float:
    """AIM Definition 2 over ``pairs`` (column-index pairs), unit weights, each side normalised."""
    total = 0.0
    for i, j in pairs:
        size = shape[i] * shape[j]
        p = np.bincount(real[:, i] * shape[j] + real[:, j], minlength=size)
        q = np.bincount(synth[:, i] * shape[j] + synth[:, j], minlength=size)
        total += float(np.abs(p / p.sum() - q / max(q.sum(), 1)).sum())
    return total / len(pairs)


def run_one(mechanism: str, d: int) -> dict:
    from mechanisms.aim import aim
    from mechanisms.mst import mst

    codes, domain = widened(d)
    pairs = list(itertools.combinations(range(d), 2))
    with tempfile.TemporaryDirectory() as tmp:
        ledger_path = os.path.join(tmp, "ledger.json")
        curator = Curator(Dataset(codes, domain),
                          PrivacyFilter.from_approx_dp(EPSILON, DELTA, ledger_path=ledger_path),
                          seed=SEED)
        cpu = time.process_time()
        if mechanism == "aim":
            workload = [tuple(domain.attrs[i] for i in p) for p in pairs]
            result = aim(curator, workload, seed=SEED)
        else:
            result = mst(curator, seed=SEED)
        cpu = time.process_time() - cpu
        curator.privacy_filter.close()
        with open(ledger_path, "rb") as fh:
            ledger_sha = hashlib.sha256(fh.read()).hexdigest()
    records = np.ascontiguousarray(result.synthetic.records, dtype=np.int64)
    return {"mechanism": mechanism, "d": d, "cpu_s": round(cpu, 2),
            "error": round(workload_error(codes, records, domain.shape, pairs), 4),
            "charges": len(curator.privacy_filter.ledger.charges),
            "timings": {k: round(v, 2) for k, v in dict(result.timings).items()},
            "ledger_sha256": ledger_sha,
            "synthetic_sha256": hashlib.sha256(records.tobytes()).hexdigest()}


def report(labels=None) -> str:
    rows = [json.loads(line) for line in open(RESULTS_JSONL)] if os.path.exists(RESULTS_JSONL) else []
    latest = {}
    for r in rows:   # the last measurement of each (label, mechanism, d)
        latest[(r["label"], r["mechanism"], r["d"])] = r
    labels = list(labels or dict.fromkeys(r["label"] for r in rows))
    lines = ["# AIM and MST on widened national2019 (issue 22)", "",
             "national2019 (27,253 records) widened to d columns by renamed copies; AIM with the "
             "all-2way workload and MST, ε = 1, δ = 1e-9, seed 0, ledger written to a file. "
             "CPU seconds (`time.process_time`, one process at a time on a shared 2-core machine); "
             "error = AIM Definition 2 over all 2-way marginals. `same` = the ledger file and the "
             "synthetic records hash equal to the first label's. Written by `bench/wide.py report"
             + (" --labels " + " ".join(labels) if labels else "") + "`.",
             "", "| mechanism | d | " + " | ".join(f"CPU s {lb}" for lb in labels)
             + " | " + " | ".join(f"error {lb}" for lb in labels) + " | same |",
             "|---|---|" + "---|" * (2 * len(labels)) + "---|"]
    keys = sorted({(m, d) for lb, m, d in latest if lb in labels}, key=lambda k: (k[0], k[1]))
    for m, d in keys:
        runs = [latest.get((lb, m, d)) for lb in labels]
        first = next(r for r in runs if r is not None)
        same = all(r is None or (r["ledger_sha256"], r["synthetic_sha256"])
                   == (first["ledger_sha256"], first["synthetic_sha256"]) for r in runs)
        cells = ["—" if r is None else f"{r['cpu_s']:.1f}" for r in runs]
        errors = ["—" if r is None else f"{r['error']:.4f}" for r in runs]
        lines.append(f"| {m.upper()} | {d} | " + " | ".join(cells) + " | " + " | ".join(errors)
                     + f" | {'yes' if same else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "profile", "report"))
    parser.add_argument("--label", default="after")
    parser.add_argument("--d", type=int, nargs="+", default=list(WIDTHS))
    parser.add_argument("--mechanism", nargs="+", default=["aim", "mst"], choices=("aim", "mst"))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--labels", nargs="+", help="report: these labels, in this order")
    args = parser.parse_args(argv)
    if args.command == "report":
        text = report(args.labels)
        with open(RESULTS_MD, "w") as fh:
            fh.write(text)
        print(text)
        return 0
    for d in args.d:
        for m in args.mechanism:
            if args.command == "profile":
                prof = cProfile.Profile()
                row = prof.runcall(run_one, m, d)
                print(json.dumps({k: row[k] for k in ("mechanism", "d", "cpu_s", "error")}))
                pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
                pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
                continue
            row = dict(label=args.label, **run_one(m, d))
            print(json.dumps(row), flush=True)
            with open(RESULTS_JSONL, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
