"""The cost of exact noise: AIM and MST on Adult, exact samplers vs the float path.

  python bench/noise_cost.py [--epsilon 1] [--seed 0] [--mechanisms aim mst] [--out bench/results/noise.md]

"exact" is the default path: the curator's exact discrete Gaussian (compiled, ChaCha20) for
every measurement and the exact exponential mechanism for every selection. "float" is the old
path, run for comparison only: ``discrete=False`` (NumPy Gaussian) and the float Gumbel-max
sampler swapped into the curator's selection in this benchmark's child process. Each
(mechanism, path) is one run in its own child process (same data, seed, budget and workload
as bench/dpcore_run.py: all 3-way marginals for AIM, MST with compression); we report the
child's CPU seconds for the mechanism call and the CPU seconds spent inside the samplers.
The data come from bench/common.py's DATA_ROOT (``DPCORE_BENCH_DATA`` overrides it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def _child(mechanism: str, path: str, epsilon: float, seed: int) -> dict:
    import dpcore
    import dpcore.curator as curator_module
    from common import dataset_files, workload_cliques
    from dpcore.accounting import PrivacyFilter
    from dpcore.accounting.noise import exponential_mechanism
    from mechanisms.aim import aim
    from mechanisms.mst import mst

    files = dataset_files("adult")
    domain = dpcore.Domain.from_json(files.domain)
    data = dpcore.Dataset.from_csv(files.csv, domain)
    pfilter = PrivacyFilter.from_approx_dp(epsilon, 1e-9)
    curator = dpcore.Curator(data, pfilter, seed=seed)

    spent = {"noise": 0.0, "select": 0.0}

    def timed(fn, key):
        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.process_time() - t0
        return wrapper

    if path == "float":
        def gumbel(scores, eps, sensitivity, rng):  # rng: the curator's seeded generator
            return exponential_mechanism([float(s) for s in scores], eps, float(sensitivity), rng)
        curator_module.exact_exponential_mechanism = gumbel
    curator_module.exact_exponential_mechanism = timed(curator_module.exact_exponential_mechanism, "select")
    curator_module.discrete_gaussian_noise = timed(curator_module.discrete_gaussian_noise, "noise")
    curator_module.gaussian_noise = timed(curator_module.gaussian_noise, "noise")
    discrete = None if path == "exact" else False

    t0, c0 = time.perf_counter(), time.process_time()
    if mechanism == "aim":
        result = aim(curator, workload_cliques("adult", "all3way"), seed=seed, discrete=discrete)
    else:
        result = mst(curator, compress=True, seed=seed, discrete=discrete)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    noises = sorted({e.what.get("noise") for e in pfilter.ledger.entries if e.what.get("noise")})
    return {"mechanism": mechanism, "path": path, "cpu": cpu, "wall": wall,
            "noise_cpu": spent["noise"], "select_cpu": spent["select"], "noise": noises,
            "selections": sum(1 for r in result.rounds if "select" in r.kind),
            "measurements": sum(1 for r in result.rounds if "measure" in r.kind)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mechanisms", nargs="+", default=["aim", "mst"], choices=["aim", "mst"])
    parser.add_argument("--out", default=os.path.join(HERE, "results", "noise.md"))
    parser.add_argument("--child", nargs=2, metavar=("MECHANISM", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child[0], args.child[1], args.epsilon, args.seed)))
        return 0
    rows = []
    for mechanism in args.mechanisms:
        for path in ("float", "exact"):
            out = subprocess.run([sys.executable, __file__, "--child", mechanism, path,
                                  "--epsilon", str(args.epsilon), "--seed", str(args.seed)],
                                 capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    lines = [
        "# Cost of exact noise (bench/noise_cost.py)",
        "",
        f"Adult, epsilon = {args.epsilon}, delta = 1e-9, seed {args.seed}; one run each, in its own "
        "process. CPU seconds of the mechanism call (all threads); `noise`/`select` = CPU seconds "
        "inside the curator's samplers. float = NumPy Gaussian + Gumbel-max (the old path); "
        "exact = the default (compiled exact discrete Gaussian, exact exponential mechanism).",
        "",
        "| mechanism | path | CPU s | wall s | noise CPU s | select CPU s | selections | measurements | ratio exact/float (CPU) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = {r["mechanism"]: r["cpu"] for r in rows if r["path"] == "float"}
    for r in rows:
        ratio = f"{r['cpu'] / base[r['mechanism']]:.2f}" if r["path"] == "exact" else ""
        lines.append(f"| {r['mechanism']} | {r['path']} | {r['cpu']:.1f} | {r['wall']:.1f} | "
                     f"{r['noise_cpu']:.3f} | {r['select_cpu']:.3f} | {r['selections']} | "
                     f"{r['measurements']} | {ratio} |")
    lines += ["", "The two paths draw different noise, so the runs take different adaptive paths "
              "(different selections and model sizes); the sampler columns isolate the cost of the "
              "samplers themselves:", ""]
    for mechanism in args.mechanisms:
        f, e = ({r["path"]: r for r in rows if r["mechanism"] == mechanism}[p] for p in ("float", "exact"))
        fs, es = f["noise_cpu"] + f["select_cpu"], e["noise_cpu"] + e["select_cpu"]
        lines.append(f"- {mechanism}: samplers {es:.3f} CPU s exact vs {fs:.3f} float, "
                     f"{100 * es / e['cpu']:.1f} % of the exact run.")
    lines.append("")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
