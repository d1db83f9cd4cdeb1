"""The mbi (reference Private-PGM) side of bench/inference.py; runs inside bench/.venv-mbi.

  inference_mbi.py PROBLEM.npz OUT.json --iters K [--x64]

Reads the measurement set bench/inference.py wrote, fits it with mbi's MirrorDescent (its
recommended estimator, Armijo line search) and writes per-iteration time, the loss trajectory
(our loss, sum ||mu - y||^2 / sigma^2, from mbi's marginals at every callback) and peak RSS.
mbi compiles with JAX on the first call: a warm-up fit of one scan block is run and timed
separately so the steady-state per-iteration time excludes compilation.
"""
from __future__ import annotations

import argparse
import json
import resource
import time
import warnings


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("out")
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--x64", action="store_true")
    args = parser.parse_args()

    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
        from mbi import estimation
    import numpy as np

    with np.load(args.problem, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        ys = [np.array(z[f"y_{i}"]) for i in range(len(meta["cliques"]))]
    domain = mbi.Domain(list(meta["domain"]), list(meta["domain"].values()))
    total = float(meta["total"])
    cliques = [tuple(c) for c in meta["cliques"]]
    sigmas = meta["sigmas"]
    measurements = [mbi.LinearMeasurement(y, c, stddev=s) for y, c, s in zip(ys, cliques, sigmas)]
    base_rss = rss_mb()

    def our_loss(marginals) -> float:
        loss = 0.0
        for y, c, s in zip(ys, cliques, sigmas):
            mu = np.asarray(marginals.project(c).datavector(), dtype=np.float64)
            loss += float(((mu - y) ** 2).sum()) / s**2
        return loss

    estimator = estimation.MirrorDescent()
    t0 = time.perf_counter()
    estimator.estimate(domain, measurements, known_total=total, iters=estimation.CALLBACK_EVERY)
    compile_s = time.perf_counter() - t0

    trace = []  # (seconds since start, iterations done, loss)
    paused = [0.0, 0.0]
    start = time.perf_counter()
    cpu_start = time.process_time()

    def callback(mu):
        # JAX dispatches the scan block asynchronously: wait for it first, so its compute
        # counts as mbi's time and only our loss evaluation is excluded.
        jax.block_until_ready(mu)
        t, c = time.perf_counter(), time.process_time()
        value = our_loss(mu)  # mu: the marginals at the current iterate (CliqueVector)
        trace.append((t - start - paused[0], (len(trace) + 1) * estimation.CALLBACK_EVERY, value,
                      c - cpu_start - paused[1]))
        paused[0] += time.perf_counter() - t
        paused[1] += time.process_time() - c

    model = estimator.estimate(domain, measurements, known_total=total, iters=args.iters,
                               callback_fn=callback)
    jax.block_until_ready(model.potentials)
    elapsed = time.perf_counter() - start - paused[0]
    cpu = time.process_time() - cpu_start - paused[1]
    result = {
        "impl": "mbi", "version": mbi.__version__ if hasattr(mbi, "__version__") else "2.0.0",
        "x64": args.x64, "iters": args.iters, "compile_s": compile_s,
        "seconds": elapsed, "ms_per_iter": 1000 * elapsed / args.iters,
        "cpu_ms_per_iter": 1000 * cpu / args.iters,
        "calibrations_per_iter": 2.0, "final_loss": our_loss(model.marginals
                                                            if hasattr(model, "marginals")
                                                            else model),
        "trace": trace, "peak_rss_mb": rss_mb(), "base_rss_mb": base_rss,
    }
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
