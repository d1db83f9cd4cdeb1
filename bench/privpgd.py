"""PrivPGD against dpcore's AIM on adult-pgm (issue 19): the paper's metric table.

Each configuration runs in its own child process, so its CPU seconds (user + system, every
thread) and its peak memory come from getrusage(RUSAGE_CHILDREN), never from wall clock. A run
appends one JSON line to bench/results/privpgd.jsonl; ``--report`` turns the lines into
bench/results/privpgd.md with the issue's anchors of the authors' code quoted beside them.

    python bench/privpgd.py                 # the default grid (several CPU-minutes)
    python bench/privpgd.py --only privpgd-10k-250 --eps 2.5
    python bench/privpgd.py --report
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

DELTA = 1e-5
# PrivPGD post-processing of the rows: 1 = session 10 (tables projected each alone, lr step 50
# epochs whatever the run length; rows without the field); 2 = consistent tables (shared
# 1-way marginals agree), lr step epochs // 20 (the paper's 50 at 1000 epochs).
VERSION = 2
RESULTS = os.path.join(HERE, "results", "privpgd.jsonl")
REPORT = os.path.join(HERE, "results", "privpgd.md")

# name -> (mechanism, options). The paper's defaults are 100k particles x 1000 epochs.
CONFIGS = {
    "privpgd-10k-250": ("privpgd", {"particles": 10_000, "epochs": 250}),
    "privpgd-100k-100": ("privpgd", {"particles": 100_000, "epochs": 100}),
    "privpgd-100k-1000": ("privpgd", {"particles": 100_000, "epochs": 1000}),
    "aim-2way": ("aim", {"workload": "all-2way"}),
}
DEFAULT = ("privpgd-10k-250", "privpgd-100k-100", "aim-2way")

# The issue's anchors: the authors' private-pgd on this machine (CPU, one thread, seed 0,
# delta 1e-5, all 91 2-way marginals, 10k particles, 250 epochs, 20 projection iterations).
ANCHORS = {2.5: {"2way": 0.306, "3way": 0.484, "cpu": 250}, 1.0: {"2way": 0.485, "3way": 0.719, "cpu": 250}}


def l1_error(real, synth, domain, k):
    """Mean L1 distance of the normalised k-way marginals (AIM Definition 2, unit weights)."""
    from common import marginal
    attrs = list(domain)
    total, cliques = 0.0, list(itertools.combinations(range(len(attrs)), k))
    for c in cliques:
        shape = tuple(domain[attrs[a]] for a in c)
        p, q = marginal(real, c, shape), marginal(synth, c, shape)
        total += float(abs(p / p.sum() - q / q.sum()).sum())
    return total / len(cliques)


def run_one(name: str, epsilon: float, seed: int) -> dict:
    """One configuration in this process; the parent measures its CPU and memory."""
    from common import dataset_files, read_codes
    from dpcore.evaluation import transport_metrics
    from mechanisms import Synthesizer
    from mechanisms.synthesizer import as_schema
    files = dataset_files("adult-pgm")
    domain = files.domain_dict()
    codes = read_codes(files.csv, list(domain))
    mechanism, options = CONFIGS[name]
    synth = Synthesizer.create(mechanism, epsilon=epsilon, delta=DELTA, seed=seed,
                               progress=False, **options)
    synth.fit_codes(codes, as_schema(domain))
    result = synth.result
    # PrivPGD's output is its m snapped particles (the paper's D_DP); AIM's its sampled table
    records = result.model.records if mechanism == "privpgd" else result.synthetic.records
    assert synth.verify().ok
    metrics = transport_metrics(codes, records, domain, seed=0)
    return {"config": name, "mechanism": mechanism, "options": options, "epsilon": epsilon,
            "version": VERSION,
            "delta": DELTA, "seed": seed, "rows": int(len(records)),
            "err_2way": l1_error(codes, records, domain, 2),
            "err_3way": l1_error(codes, records, domain, 3), **metrics.to_dict(),
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child(name: str, epsilon: float, seed: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", name, "--eps", str(epsilon),
                          "--seed", str(seed)], check=True, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    row["wall_s"] = time.perf_counter() - start
    return row


def report() -> None:
    rows = [json.loads(line) for line in open(RESULTS)] if os.path.exists(RESULTS) else []
    lines = [
        "# PrivPGD on adult-pgm (issue 19)",
        "",
        "`python bench/privpgd.py` (one child process per run; CPU = user + system seconds of all",
        "threads, from getrusage; 2 cores shared with other jobs, so CPU seconds are inflated by",
        "contention). delta = 1e-5, seed 0, all 91 2-way marginals. PrivPGD is evaluated on its m",
        "snapped particles (the paper's D_DP), AIM (dpcore, all-2way workload, 80 MB cap) on its",
        "sampled table. Errors: mean L1 of normalised marginals (AIM Def. 2; TV is half of it);",
        "the other columns are the PrivPGD paper's metrics (`dpcore.evaluation.transport_metrics`,",
        "Sec. 4.1; lower is better).",
        "",
        "| config | eps | 2-way L1 | 3-way L1 | TV 2-way | cov. | counting | threshold | SW1 | CPU-s | wall-s | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (-r["epsilon"], r["config"])):
        lines.append(f"| {r['config']} | {r['epsilon']:g} | {r['err_2way']:.3f} | {r['err_3way']:.3f} | "
                     f"{r['tv_2way']:.4f} | {r['covariance']:.4f} | {r['counting']:.4f} | "
                     f"{r['threshold']:.4f} | {r['sw1']:.5f} | {r['cpu_s']:.0f} | {r['wall_s']:.0f} | "
                     f"{r['max_rss_mb']:.0f} |")
    for eps, a in ANCHORS.items():
        lines.append(f"| authors' private-pgd, 10k x 250 (issue anchor, measured there) | {eps:g} | "
                     f"{a['2way']:.3f} | {a['3way']:.3f} | | | | | | {a['cpu']} | | 560-590 |")
    lines.append("")
    with open(REPORT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {REPORT} ({len(rows)} runs)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", choices=sorted(CONFIGS), help="configs (default: %s)"
                   % ", ".join(DEFAULT))
    p.add_argument("--eps", type=float, nargs="*", default=[2.5, 1.0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--report", action="store_true", help="only rewrite privpgd.md")
    args = p.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.eps[0], args.seed)))
        return
    if not args.report:
        for name in args.only or DEFAULT:
            for eps in args.eps:
                row = child(name, eps, args.seed)
                print(json.dumps(row), flush=True)
                with open(RESULTS, "a") as f:
                    f.write(json.dumps(row) + "\n")
    report()


if __name__ == "__main__":
    main()
