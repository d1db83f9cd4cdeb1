"""FEM, sepFEM and DQRS on Adult with 64 random 3-way marginals (the FEM paper's Fig. 1
setting; issue 20).

    python bench/fem.py [--mechanism fem|sepfem|dqrs] [--epsilons 0.1 1] [--rounds T]
                        [--samples s] [--eta η] [--seed k]

Prints, per ε: rounds, max error over the workload's queries (``dpcore.evaluation.max_error``),
workload error and CPU seconds (process time); appends a JSON line per run to
bench/results/fem.jsonl. δ = 1e-9 (dpcore's default; the paper's 1/n² = 4.2e-10 is data-
dependent). The workload is drawn with a fixed seed, as the authors' code does.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dpcore.datasets import adult  # noqa: E402
from dpcore.encoding import encode_frame  # noqa: E402
from dpcore.evaluation import evaluate  # noqa: E402
from mechanisms.synthesizer import Synthesizer  # noqa: E402


def workload(names, k=3, count=64, seed=0):
    rng = np.random.default_rng(seed)
    chosen = set()
    while len(chosen) < count:
        chosen.add(tuple(sorted(rng.choice(len(names), size=k, replace=False).tolist())))
    return [[names[i] for i in c] for c in sorted(chosen)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechanism", choices=["fem", "sepfem", "dqrs"], default="fem")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--eta", type=float, default=None)
    parser.add_argument("--keep", default="all")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    frame, schema = adult()
    codes = encode_frame(frame, schema)
    names = list(schema.names)
    work = workload(names)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "fem.jsonl")
    import scipy.optimize  # noqa: F401  (a one-off ~1 CPU-s import, kept out of every row)
    for eps in args.epsilons:
        cpu = time.process_time()
        options = {k: v for k, v in (("samples", args.samples), ("eta", args.eta)) if v is not None}
        if args.mechanism != "dqrs":
            options["keep"] = args.keep
        synth = Synthesizer.create(args.mechanism, epsilon=eps, seed=args.seed, progress=False,
                                   workload=work, rounds=args.rounds, **options)
        synth.fit_codes(codes, schema)
        cpu = time.process_time() - cpu
        result = evaluate(codes, synth.sample_codes(), schema.domain_dict(), work)
        rounds = sum(r.kind == "select" for r in synth.result.rounds)
        row = {"mechanism": args.mechanism, "epsilon": eps, "rounds": rounds,
               "samples": synth.samples, "eta": synth.eta, "keep": getattr(synth, "keep", None),
               "seed": args.seed, "max_error": result.max_error,
               "workload_error": result.workload_error, "cpu_s": cpu,
               "timings": synth.result.timings, "verified": synth.verify(allow_fixed_seed=True).ok}
        print(json.dumps(row))
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
