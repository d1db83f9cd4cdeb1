"""Run one reference mechanism (mbi) on an encoded CSV; runs inside bench/.venv-mbi.

  run_mbi.py --mechanism aim|mst|mwem --data X.csv --domain X-domain.json
             --workload W.json --rho RHO --seed S --out DIR [--rounds T] [--x64]

Writes DIR/synthetic.csv and DIR/result.json (timings per phase, rounds, model size). The
runner (bench/run.py) computes the workload error itself, the same way for both sides.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
import time
import warnings

T_START = time.perf_counter()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mechanism", required=True, choices=["aim", "mst", "mwem"])
    parser.add_argument("--data", required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--rho", required=True, type=float)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=None, help="MWEM rounds")
    parser.add_argument("--marginals", choices=["bulk", "project"], default="bulk",
                        help="how model marginals are computed for selection: one "
                             "bulk_variable_elimination call, or model.project per clique")
    parser.add_argument("--x64", action="store_true", help="run JAX in float64")
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 pid` shows where a slow run is
    if not args.rho > 0:
        parser.error(f"--rho must be > 0, got {args.rho}")

    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        # mbi warns at import about float32 mode and the compilation cache; both are its
        # defaults, which is what we benchmark (unless --x64).
        warnings.simplefilter("ignore")
        import mbi  # noqa: F401
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ref_aim
    import ref_mst
    import ref_mwem
    import refcommon

    refcommon.MARGINALS_ROUTE = args.marginals
    t_import = time.perf_counter() - T_START
    np.random.seed(args.seed)  # mbi's synthetic_data and decompress draw from np.random.
    rng = np.random.default_rng(args.seed)
    watch = refcommon.Stopwatch()
    with watch.phase("load"):
        data = refcommon.load_dataset(args.data, args.domain)
        workload = refcommon.load_workload(args.workload)
    t0 = time.perf_counter()
    if args.mechanism == "aim":
        out = ref_aim.run(data, workload, args.rho, rng, watch=watch)
    elif args.mechanism == "mst":
        out = ref_mst.run(data, workload, args.rho, rng, watch=watch)
    else:
        out = ref_mwem.run(data, workload, args.rho, rng, rounds=args.rounds, watch=watch)
    fit = time.perf_counter() - t0
    os.makedirs(args.out, exist_ok=True)
    refcommon.write_csv_atomic(os.path.join(args.out, "synthetic.csv"), out.pop("synthetic"),
                               data.domain.attributes)
    import importlib.metadata

    out.update({
        "implementation": "mbi",
        "version": importlib.metadata.version("mbi"),
        "jax_x64": bool(args.x64),
        "marginals_route": args.marginals,
        "mechanism": args.mechanism,
        "seed": args.seed,
        "rho": args.rho,
        "timings": {"import": t_import, "mechanism": fit, **watch.totals},
    })
    refcommon.write_json_atomic(os.path.join(args.out, "result.json"), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
