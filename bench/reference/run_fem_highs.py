"""Run the authors' FEM (github.com/giusevtr/fem, fem.py ``generate``) with its Gurobi oracle
swapped for scipy.optimize.milp (HiGHS), side by side with bench/fem.py (issue 20).

Two halves in one file:

* ``python bench/reference/run_fem_highs.py [--epsilons 0.1] ...`` in dpcore's venv (the
  driver): loads Adult exactly as bench/fem.py does (dpcore.datasets.adult + encode_frame), draws
  the same 64 random 3-way marginals (bench.fem.workload, seed 0), starts the child below with
  bench/work/venv-fem/bin/python (bench/reference/setup_fem.sh), measures the child's CPU
  seconds with os.wait4 (user + system of the child and every process it forked and reaped: their
  8 oracle workers and the multiprocessing Manager of each round), scores the output with
  dpcore.evaluation.max_error and appends a row to bench/results/fem.jsonl.
* ``--child`` in the authors' venv: imports their modules and calls their ``generate`` as their
  ``__main__`` does. Nothing of theirs is edited or copied; what differs from their script:
  - Oracle: ``Util.oracle_weighted.solve`` is replaced (monkeypatched before their worker
    processes fork) by ``solve_highs`` below: the same program (binary c per selected query and
    negation, binary x per one-hot feature; max Σ w_i c_i − ⟨σ, x⟩; one-hot rows = 1; the same
    two linking constraints) given to scipy.optimize.milp with time_limit 60 s as their Gurobi
    TimeLimit, and mip_rel_gap 0 (they set MIPGapAbs = alpha = 0; scipy exposes only the
    relative gap). ``gurobipy`` is stubbed by an empty module so their Util imports load.
  - Data and workload: dpcore's encoded Adult and bench/fem.py's workload (their randomKway
    draws its own 64 triples from their CSV), so both sides answer the same queries.
  - Parameters: their run_fem.sh values for Adult 64×3 (epsilon_split 0.008, noise_multiple
    0.16, samples 50) and their δ = 1/N²; T and ε₀ are computed by their get_iters. Seeded
    with np.random.seed(seed) (their script does not seed).
  - Worker processes are forked (explicit start method 'fork', the Linux default in 3.11), so
    they inherit the patched oracle.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
THEIR_PYTHON = os.path.join(BENCH, "work", "venv-fem", "bin", "python")
THEIR_REPO = os.path.join(BENCH, "work", "fem")


def solve_highs(queries, queries_weights, neg_queries, neg_queries_weights, sigma, domain,
                alpha):
    """Their oracle_weighted.solve's integer program, solved by HiGHS (same signature/return)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    dim = int(sum(domain.shape))
    nr = queries.shape[0] if queries is not None and queries.size else 0
    nn = neg_queries.shape[0] if neg_queries is not None and neg_queries.size else 0
    nc = nr + nn
    # variables: c_0..c_{nc-1}, then x_0..x_{dim-1}; milp minimises, so negate their objective
    cost = np.concatenate([-np.asarray(queries_weights[:nr], float),
                           -np.asarray(neg_queries_weights[:nn], float),
                           np.asarray(sigma, float)])
    rows, lo, hi = [], [], []
    cur = 0
    for sz in domain.shape:                       # each feature has exactly one value
        r = np.zeros(nc + dim)
        r[nc + cur:nc + cur + sz] = 1
        rows.append(r); lo.append(1); hi.append(1)
        cur += sz
    for i in range(nr):                           # Σ_j q_ij x_j ≥ K c_i − 1e-6
        r = np.zeros(nc + dim)
        r[nc:] = queries[i]
        r[i] = -queries[i].sum()
        rows.append(r); lo.append(-1e-6); hi.append(np.inf)
    for i in range(nn):                           # Σ_j n_ij (1 − x_j) ≥ c − 1e-6
        r = np.zeros(nc + dim)
        r[nc:] = -neg_queries[i]
        r[nr + i] = -1
        rows.append(r); lo.append(-1e-6 - neg_queries[i].sum()); hi.append(np.inf)
    res = milp(cost, constraints=LinearConstraint(np.array(rows), lo, hi),
               integrality=np.ones(nc + dim), bounds=Bounds(0, 1),
               options={"time_limit": 60, "mip_rel_gap": 0, "disp": False})
    if res.x is None:
        raise RuntimeError(f"HiGHS found no feasible point: {res.message}")
    x_sync = [int(v + 0.5) for v in res.x[nc:]]
    assert sum(x_sync) == len(domain.shape)
    return x_sync


def child(spec_path: str) -> None:
    import multiprocessing as mp

    import numpy as np
    import pandas as pd
    import scipy.optimize  # noqa: F401  (imported once here, before their workers fork: a
    # lazy import inside solve_highs would cost ~1 CPU-s in each of the 8 workers x T rounds)

    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    sys.path.insert(0, spec["repo"])
    sys.modules.setdefault("gurobipy", types.ModuleType("gurobipy"))  # their Util imports it
    mp.set_start_method("fork", force=True)
    import fem as their_fem  # noqa: E402  (their fem.py)
    from datasets.dataset import Dataset
    from datasets.domain import Domain
    from Util import oracle_weighted
    from Util.qm import QueryManager

    oracle_weighted.solve = solve_highs
    names, sizes = spec["names"], spec["sizes"]
    codes = np.load(spec["real"])
    domain = Domain(names, sizes)
    data = Dataset(pd.DataFrame(codes, columns=names), domain)
    workload = [tuple(w) for w in spec["workload"]]
    n = codes.shape[0]
    delta = 1.0 / n ** 2
    qm = QueryManager(domain, workload)
    real = qm.get_answer(data)
    T, eps0 = their_fem.get_iters(spec["epsilon"], delta, spec["epsilon_split"])
    np.random.seed(spec["seed"])
    cpu0 = time.process_time()
    synth = their_fem.generate(real_answers=real, N=n, domain=domain, query_manager=qm,
                               epsilon=spec["epsilon"], delta=delta,
                               epsilon_split=spec["epsilon_split"],
                               noise_multiple=spec["noise_multiple"],
                               samples=spec["samples"], show_prgress=False)
    their_max = float(np.abs(real - qm.get_answer(synth)).max())
    np.save(spec["out"], synth.df[names].to_numpy())
    with open(spec["meta"], "w", encoding="utf-8") as fh:
        json.dump({"T": T, "epsilon_0": eps0, "delta": delta, "their_max_error": their_max,
                   "parent_cpu_s": time.process_time() - cpu0, "rows": len(synth.df)}, fh)


def driver(args) -> None:
    import numpy as np

    sys.path.insert(0, os.path.dirname(BENCH))
    sys.path.insert(0, BENCH)
    from dpcore.datasets import adult
    from dpcore.encoding import encode_frame
    from dpcore.evaluation import evaluate
    from fem import workload  # bench/fem.py

    frame, schema = adult()
    codes = encode_frame(frame, schema)
    names = list(schema.names)
    sizes = [int(schema.domain_dict()[n]) for n in names]
    work = workload(names)
    out_rows = os.path.join(BENCH, "results", "fem.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "real.npy"), np.asarray(codes, dtype=np.int64))
        for eps in args.epsilons:
            spec = {"repo": args.repo, "names": names, "sizes": sizes, "workload": work,
                    "real": os.path.join(tmp, "real.npy"), "out": os.path.join(tmp, "synth.npy"),
                    "meta": os.path.join(tmp, "meta.json"), "epsilon": eps,
                    "epsilon_split": args.epsilon_split, "noise_multiple": args.noise_multiple,
                    "samples": args.samples, "seed": args.seed}
            spec_path = os.path.join(tmp, "spec.json")
            with open(spec_path, "w", encoding="utf-8") as fh:
                json.dump(spec, fh)
            proc = subprocess.Popen([args.python, os.path.abspath(__file__), "--child", spec_path])
            _, status, usage = os.wait4(proc.pid, 0)
            if status != 0:
                raise SystemExit(f"their FEM failed (status {status})")
            with open(spec["meta"], encoding="utf-8") as fh:
                meta = json.load(fh)
            synth = np.load(spec["out"])
            result = evaluate(codes, synth, schema.domain_dict(), work)
            row = {"mechanism": "authors-fem-highs", "epsilon": eps, "rounds": meta["T"],
                   "samples": args.samples, "epsilon_split": args.epsilon_split,
                   "noise_multiple": args.noise_multiple, "epsilon_0": meta["epsilon_0"],
                   "delta": meta["delta"], "seed": args.seed, "max_error": result.max_error,
                   "their_max_error": meta["their_max_error"],
                   "workload_error": result.workload_error,
                   "cpu_s": usage.ru_utime + usage.ru_stime,
                   "cpu_s_parent_generate": meta["parent_cpu_s"], "synthetic_rows": meta["rows"]}
            print(json.dumps(row))
            with open(out_rows, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1])
    parser.add_argument("--epsilon-split", type=float, default=0.008)   # their run_fem.sh
    parser.add_argument("--noise-multiple", type=float, default=0.16)   # their run_fem.sh
    parser.add_argument("--samples", type=int, default=50)              # their run_fem.sh
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--python", default=THEIR_PYTHON)
    parser.add_argument("--repo", default=THEIR_REPO)
    args = parser.parse_args()
    if args.child:
        child(args.child)
    else:
        driver(args)


if __name__ == "__main__":
    main()
