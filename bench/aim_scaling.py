"""AIM's cost against ε (issue 22): Adult, all 3-way marginals, δ = 1e-9.

One run a line, each in this process after the last (run it alone: CPU seconds are the
measure on a shared machine, but the caches of other jobs still slow it). Recorded: CPU
seconds (``time.process_time``, all threads), the workload error (AIM Definition 2, unit
weights), rounds, the final model's size, and the mechanism's own split of wall time
(estimate = the compiled fits; select = projecting the model onto the candidates and the
exponential mechanism). The attribute-count axis is ``bench/wide.py`` (national2019 widened).
Not private: it reads the real data to grade.

    python bench/aim_scaling.py run --label after [--eps 0.1 0.3 1 3 10] [--seeds 0]
    python bench/aim_scaling.py report     # bench/results/aim_scaling.md's table (notes kept)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

import numpy as np  # noqa: E402

import common  # noqa: E402

RESULTS_JSONL = os.path.join(HERE, "results", "aim_scaling.jsonl")
RESULTS_MD = os.path.join(HERE, "results", "aim_scaling.md")
DELTA = 1e-9


def run_one(epsilon: float, seed: int, options: dict | None = None) -> dict:
    from dpcore import Curator, Dataset, Domain
    from dpcore.accounting import PrivacyFilter
    from mechanisms.aim import aim

    files = common.dataset_files("adult")
    domain = Domain.from_json(files.domain)
    data = Dataset.from_csv(files.csv, domain)
    workload = common.workload_cliques("adult", "all3way")
    curator = Curator(data, PrivacyFilter.from_approx_dp(epsilon, DELTA), seed=seed)
    start = time.process_time()
    result = aim(curator, workload, seed=seed, **(options or {}))
    cpu = time.process_time() - start
    synthetic = result.synthetic
    error = 0.0
    for clique in workload:
        a = data.project(clique).datavector()
        b = synthetic.project(clique).datavector()
        error += np.abs(a / a.sum() - b / b.sum()).sum()
    return {"epsilon": epsilon, "seed": seed, "cpu_s": round(cpu, 1),
            "error": round(error / len(workload), 4), "rounds": result.extras["rounds_run"],
            "model_mb": round(result.model.size_mb, 1),
            "wall_split_s": {k: round(v, 1) for k, v in result.timings.items()}}


def report() -> None:
    rows = [json.loads(line) for line in open(RESULTS_JSONL)]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    lines = ["# AIM against ε (issue 22)", "",
             "Adult (48,842 records, 15 attributes), all 3-way marginals, δ = 1e-9. CPU seconds",
             "(`time.process_time`, all threads) on the shared 2-core machine; error = AIM",
             "Definition 2. Written by `bench/aim_scaling.py report`.", "",
             "| label | ε | seed | CPU s | error | rounds | model MB | estimate / select (wall s) |",
             "|---|---|---|---|---|---|---|---|"]
    for label in labels:
        for r in sorted((r for r in rows if r["label"] == label), key=lambda r: (r["epsilon"], r["seed"])):
            split = r["wall_split_s"]
            lines.append(f"| {label} | {r['epsilon']:g} | {r['seed']} | {r['cpu_s']} | {r['error']} | "
                         f"{r['rounds']} | {r['model_mb']} | {split.get('estimate', 0)} / {split.get('select', 0)} |")
    # the notes after the table (each session's measurements, by hand) are kept
    notes = []
    if os.path.exists(RESULTS_MD):
        old = open(RESULTS_MD).read().split("\n")
        at = next((i for i, line in enumerate(old) if line.startswith("|")), len(old))
        while at < len(old) and old[at].startswith("|"):
            at += 1
        notes = old[at:]
    tmp = RESULTS_MD + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines + notes).rstrip("\n") + "\n")
    os.replace(tmp, RESULTS_MD)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--label", required=True)
    run.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0, 10.0])
    run.add_argument("--seeds", type=int, nargs="+", default=[0])
    run.add_argument("--aim", default="{}", help="JSON of aim() keyword options, e.g. "
                     "'{\"round_iters\": 70}' (recorded in the row)")
    sub.add_parser("report")
    args = parser.parse_args()
    if args.command == "report":
        report()
        return 0
    for epsilon in args.eps:
        for seed in args.seeds:
            options = json.loads(args.aim)
            row = {"label": args.label, **run_one(epsilon, seed, options)}
            if options:
                row["aim_options"] = options
            print(json.dumps(row), flush=True)
            with open(RESULTS_JSONL, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
