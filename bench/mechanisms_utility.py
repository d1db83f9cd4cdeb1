"""Workload error and run time of AIM, MST, MWEM+PGM and Independent on Adult (issue 5).

The AIM paper's setting (Sec. 6.1): ALL-3WAY workload, delta = 1e-9, error = Definition 2 with
normalised marginals (``dpcore.evaluation.evaluate``), averaged over seeds.

    python bench/mechanisms_utility.py --epsilons 0.1 1 10 --seeds 3 --out bench/results/mechanisms.json

Use ``--attrs 8`` (first k attributes) and ``--max-model-size`` for a quick reduced run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcore import Curator, Dataset, Domain  # noqa: E402
from dpcore.accounting import PrivacyFilter  # noqa: E402
from dpcore.evaluation import all_k_way, evaluate  # noqa: E402
from mechanisms.aim import aim  # noqa: E402
from mechanisms.independent import independent  # noqa: E402
from mechanisms.mst import mst  # noqa: E402
from mechanisms.mwem import mwem  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"


def load_adult(attrs: int | None = None):
    domain = Domain.from_json(DATA / "adult-domain.json")
    data = Dataset.from_csv(DATA / "adult.csv", domain)
    if attrs is not None and attrs < len(domain):
        keep = domain.attrs[:attrs]
        sub = domain.project(keep)
        idx = [domain.attrs.index(a) for a in keep]
        data = Dataset(np.asarray(data.records)[:, idx], sub)
    return data


def run_one(name, data, workload, epsilon, delta, seed, args):
    curator = Curator(data, PrivacyFilter.from_approx_dp(epsilon, delta), seed=seed)
    start = time.perf_counter()
    options = {"max_iters": args.estimate_iters}
    if name == "aim":
        result = aim(curator, workload, max_model_size=args.max_model_size, seed=seed, estimate_options=options)
    elif name == "mst":
        result = mst(curator, seed=seed, estimate_options=options)
    elif name == "mwem":
        result = mwem(curator, workload, rounds=args.mwem_rounds, max_model_size=args.max_model_size, seed=seed,
                      estimate_options=options)
    else:
        result = independent(curator, seed=seed)
    seconds = time.perf_counter() - start
    err = evaluate(np.asarray(data.records), np.asarray(result.synthetic.records), data.domain.to_dict(),
                   [list(c) for c, _ in workload]).workload_error
    return {"mechanism": name, "epsilon": epsilon, "seed": seed, "error": err, "seconds": seconds,
            "rounds": len(result.rounds), "spent": float(result.ledger.spent),
            "budget": float(curator.privacy_filter.budget)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--attrs", type=int, default=None, help="use only the first k attributes")
    parser.add_argument("--mechanisms", nargs="+", default=["aim", "mst", "mwem", "independent"])
    parser.add_argument("--max-model-size", type=float, default=80.0)
    parser.add_argument("--mwem-rounds", type=int, default=15)
    parser.add_argument("--estimate-iters", type=int, default=1000, help="Private-PGM iterations per estimate")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    data = load_adult(args.attrs)
    workload = all_k_way(list(data.domain.attrs), min(3, len(data.domain)))
    rows = []
    for epsilon in args.epsilons:
        for name in args.mechanisms:
            for seed in range(args.seed_offset, args.seed_offset + args.seeds):
                row = run_one(name, data, workload, epsilon, args.delta, seed, args)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\nmechanism  epsilon  mean_error  mean_seconds")
    for epsilon in args.epsilons:
        for name in args.mechanisms:
            sel = [r for r in rows if r["mechanism"] == name and r["epsilon"] == epsilon]
            print(f"{name:10s} {epsilon:7g}  {np.mean([r['error'] for r in sel]):.4f}      "
                  f"{np.mean([r['seconds'] for r in sel]):.1f}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=args.out.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(rows, fh, indent=1)
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
