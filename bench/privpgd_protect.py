"""PrivPGD's protected statistic (issue 19; paper Sec. 4.4, Fig. 3): the error of the protected
query on the synthetic data (larger is better: it is hidden) and the utility left (2-way error,
random counting and threshold queries), against the regulariser strength lambda.

adult-pgm, eps 2.5, delta 1e-5 (App. B's total), seed 0, 10k particles x 250 epochs. The
protected query is a non-sparse linear threshold in the embedding space, as in the paper:
theta ~ N(0, I) over all columns (seed 1), b the real data's median of <theta, Emb(x)> (so
thrs(D) = mean 1[<theta, Emb(x)> > b] is about 1/2; a bench choice: a data owner states b). Each lambda runs in its own
child process (CPU from getrusage). Not private: it grades against the real data.

    python bench/privpgd_protect.py              # appends bench/results/privpgd_protect.jsonl
    python bench/privpgd_protect.py --report     # bench/results/privpgd_protect.md
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

RESULTS = os.path.join(HERE, "results", "privpgd_protect.jsonl")
REPORT = os.path.join(HERE, "results", "privpgd_protect.md")
EPSILON, DELTA, SEED = 2.5, 1e-5, 0
OPTIONS = {"particles": 10_000, "epochs": 250}
STRENGTHS = (0.0, 0.1, 1.0, 10.0, 100.0)


def query(codes, domain):
    import numpy as np
    from dpcore.evaluation import embed
    theta = np.random.default_rng(1).normal(size=len(domain))
    return theta, float(np.median(embed(codes, [domain[a] for a in domain]) @ theta))


def thrs(codes, domain, theta, b):
    import numpy as np
    from dpcore.evaluation import embed
    return float(np.mean(embed(codes, [domain[a] for a in domain]) @ theta > b))


def run_one(strength: float) -> dict:
    from common import dataset_files, read_codes
    from privpgd import l1_error
    from dpcore.evaluation import transport_metrics
    from mechanisms import Synthesizer
    from mechanisms.synthesizer import as_schema
    files = dataset_files("adult-pgm")
    domain = files.domain_dict()
    codes = read_codes(files.csv, list(domain))
    theta, b = query(codes, domain)
    protect = {"weights": dict(zip(domain, theta.tolist())), "threshold": b,
               "strength": strength}
    synth = Synthesizer.create("privpgd", epsilon=EPSILON, delta=DELTA, seed=SEED,
                               progress=False, protect=protect, **OPTIONS)
    synth.fit_codes(codes, as_schema(domain))
    assert synth.verify(allow_fixed_seed=True).ok
    records = synth.result.model.records
    metrics = transport_metrics(codes, records, domain, seed=0)
    real_q, synth_q = thrs(codes, domain, theta, b), thrs(records, domain, theta, b)
    return {"strength": strength, "epsilon": EPSILON, "delta": DELTA, "seed": SEED,
            **OPTIONS, "protected_real": real_q, "protected_synthetic": synth_q,
            "protected_error": abs(synth_q - real_q),
            "soft_estimate": synth.result.extras["protected"]["estimate"],
            "err_2way": l1_error(codes, records, domain, 2),
            "counting": metrics.counting, "threshold": metrics.threshold,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def child(strength: float) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, __file__, "--child", str(strength)], check=True,
                         capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["cpu_s"] = round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1)
    return row


def report() -> None:
    rows = [json.loads(line) for line in open(RESULTS)]
    lines = ["# PrivPGD: a protected statistic (issue 19; paper Sec. 4.4, Fig. 3)", "",
             __doc__.split("\n\n")[1].replace("\n", " "), "",
             "| lambda | protected query: real | synthetic | error (larger hides more) | "
             "2-way error | counting | threshold | CPU s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['strength']:g} | {r['protected_real']:.3f} | "
                     f"{r['protected_synthetic']:.3f} | {r['protected_error']:.3f} | "
                     f"{r['err_2way']:.3f} | {r['counting']:.4f} | {r['threshold']:.4f} | "
                     f"{r['cpu_s']:.0f} |")
    with open(REPORT, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", type=float)
    p.add_argument("--report", action="store_true")
    p.add_argument("--strengths", type=float, nargs="+", default=list(STRENGTHS))
    args = p.parse_args()
    if args.child is not None:
        print(json.dumps(run_one(args.child)))
        return
    if args.report:
        report()
        return
    for strength in args.strengths:
        row = child(strength)
        with open(RESULTS, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
