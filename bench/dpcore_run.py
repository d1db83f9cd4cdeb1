"""Run one dpcore mechanism on an encoded CSV; the dpcore twin of reference/run_mbi.py.

  dpcore_run.py --mechanism aim|mst|mwem --data X.csv --domain X-domain.json
                --workload W.json --epsilon E --delta D --rho RHO --seed S --out DIR [--rounds T]

The privacy filter is built from (epsilon, delta) with the CKS conversion; the runner passes
the rho it gave the reference and this script refuses to run if the two differ, so both sides
spend the same budget. Writes DIR/synthetic.csv, DIR/ledger.json and DIR/result.json (rounds,
model size, timings per phase, and whether the saved ledger verifies).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import time

T_START = time.perf_counter()


def _revision() -> str:
    """Which dpcore ran: the git commit of this tree (+dirty), or a REV file in a snapshot."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        out = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open(os.path.join(root, "REV")) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mechanism", required=True, choices=["aim", "mst", "mwem"])
    parser.add_argument("--data", required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--epsilon", required=True, type=float)
    parser.add_argument("--delta", required=True, type=float)
    parser.add_argument("--rho", required=True, type=float)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=None, help="MWEM rounds")
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 pid` shows where a slow run is
    # An installed dpcore wins; otherwise use the source tree this script lives in.
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    import dpcore
    from dpcore.accounting import PrivacyFilter, verify_ledger
    from mechanisms.aim import aim
    from mechanisms.mst import mst
    from mechanisms.mwem import mwem

    t_import = time.perf_counter() - T_START
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    domain = dpcore.Domain.from_json(args.domain)
    data = dpcore.Dataset.from_csv(args.data, domain)
    with open(args.workload) as f:
        workload = [tuple(c) for c in json.load(f)]
    ledger_path = os.path.join(args.out, "ledger.json")
    if os.path.exists(ledger_path):
        os.remove(ledger_path)
    pfilter = PrivacyFilter.from_approx_dp(args.epsilon, args.delta, ledger_path=ledger_path)
    budget = float(pfilter.budget)
    if abs(budget - args.rho) > 1e-12 * max(1.0, args.rho):
        parser.error(f"--rho {args.rho!r} differs from dpcore's budget {budget!r} for "
                     f"epsilon={args.epsilon}, delta={args.delta}")
    curator = dpcore.Curator(data, pfilter, seed=args.seed)
    t_load = time.perf_counter() - t0

    t0 = time.perf_counter()

    def progress(record) -> None:
        # One line a step in the log: a run killed at its cap still says how far it got.
        print(f"{record.index} {record.kind} {record.clique} sigma={record.sigma} "
              f"{record.seconds:.2f}s at {time.perf_counter() - t0:.1f} s", flush=True)

    if args.mechanism == "aim":
        result = aim(curator, workload, seed=args.seed, callback=progress)
    elif args.mechanism == "mst":
        # The published MST (3-sigma compression on), the call the CLI's Synthesizer makes.
        result = mst(curator, seed=args.seed, callback=progress)
    else:
        rounds = args.rounds or len(domain)
        result = mwem(curator, workload, rounds=rounds, max_model_size=25.0, seed=args.seed,
                      callback=progress)
    fit = time.perf_counter() - t0

    result.synthetic.to_csv(os.path.join(args.out, "synthetic.csv"))
    report = verify_ledger(ledger_path, allow_fixed_seed=args.seed is not None)
    model = result.model
    payload = {
        "implementation": "dpcore",
        "version": f"{getattr(dpcore, '__version__', '')}+{_revision()}",
        "mechanism": args.mechanism,
        "seed": args.seed,
        "rho": budget,
        "rho_spent": float(pfilter.spent),
        "rounds": sum(1 for r in result.rounds if "select" in r.kind),
        "measurements": sum(1 for r in result.rounds if "measure" in r.kind),
        "model_size_mb": float(getattr(model, "size_mb", 0.0) or 0.0),
        "ledger_ok": bool(report.ok),
        "note": "" if report.ok else "ledger: " + "; ".join(map(str, report.reasons))[:300],
        "timings": {"import": t_import, "load": t_load, "mechanism": fit,
                    **{k: float(v) for k, v in result.timings.items()}},
    }
    tmp = os.path.join(args.out, f"result.json.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(args.out, "result.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
