"""Kernel benchmarks, one run on this machine, printed as a markdown table and saved to
bench/results/kernels.md:

1. all 455 3-way marginals of Adult: dpcore's batched kernel (1 and 2 threads) vs a numpy
   baseline (ravel_multi_index + bincount per marginal);
2. counting throughput on Adult replicated to ~10 M rows (all 15 1-way + 105 2-way
   marginals in one batch, and a single 3-way marginal);
3. message passing (JunctionTree.calibrate, and the compiled Calibrator estimation runs) on
   AIM-sized trees over Adult's domain.

Times are the best (minimum) and median wall-clock of several repeats; the machine may be
shared, so the load average is printed with the table.

  python bench/kernels.py [--data ../shared/data/adult] [--rows 10000000] [--repeats 7]
"""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.append(ROOT)  # an installed dpcore wins; else the source tree (with a built _core)

from dpcore import _core  # noqa: E402
from dpcore.dataset import Dataset  # noqa: E402
from dpcore.domain import Domain  # noqa: E402
from dpcore.factor import Factor  # noqa: E402


def timed(fn, repeats: int) -> tuple[str, str, str]:
    """Best and median wall-clock milliseconds of fn() over `repeats` runs after a warm-up,
    and the best process CPU milliseconds (all threads): on a shared machine the CPU time is
    the steadier measure of work done."""
    fn()
    times, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return f"{min(times):.1f}", f"{statistics.median(times):.1f}", f"{min(cpu):.1f}"


def ratio(base, t) -> str:
    """Speed-up over the baseline: wall-clock / CPU time."""
    return (f"{float(base[0]) / float(t[0]):.1f}x / "
            f"{float(base[2]) / float(t[2]):.1f}x")


def rate(rows: float, t) -> str:
    """Rows per second of wall-clock and per CPU-second (all threads)."""
    return (f"{rows / (float(t[0]) / 1e3) / 1e6:.0f} M rows/s / "
            f"{rows / (float(t[2]) / 1e3) / 1e6:.0f} M rows/CPU-s")


def numpy_marginals(records: np.ndarray, sizes, subsets) -> list:
    out = []
    for subset in subsets:
        shape = [sizes[a] for a in subset]
        flat = np.ravel_multi_index(tuple(records[:, a] for a in subset), shape)
        out.append(np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape))
    return out


def bench_three_way(ds: Dataset, repeats: int) -> list[tuple]:
    sizes = list(ds.domain.shape)
    subsets = [list(s) for s in itertools.combinations(range(len(sizes)), 3)]
    records = ds.records
    ours = _core.count_marginals(records, sizes, subsets)
    for mine, ref in zip(ours, numpy_marginals(records, sizes, subsets)):
        assert np.array_equal(mine, ref), "kernel disagrees with numpy"
    base = timed(lambda: numpy_marginals(records, sizes, subsets), max(3, repeats // 2))
    label = "Adult, 455 3-way marginals"
    rows = [(label, "numpy ravel_multi_index + bincount", *base, "1.0x / 1.0x")]
    for threads in (1, 2):
        t = timed(lambda: _core.count_marginals(records, sizes, subsets, threads=threads), repeats)
        rows.append((label, f"dpcore count_marginals, {threads} thread(s)", *t, ratio(base, t)))
    attr_sets = [tuple(ds.domain.attrs[a] for a in s) for s in subsets]
    t = timed(lambda: ds.marginals(attr_sets), repeats)
    rows.append((label, "dpcore Dataset.marginals (-> Factors)", *t, ratio(base, t)))
    return rows


def bench_throughput(ds: Dataset, target_rows: int, repeats: int) -> list[tuple]:
    copies = max(1, round(target_rows / len(ds)))
    big = np.tile(ds.records.astype(np.uint8), (copies, 1))  # C order, 1 byte a code
    n = big.shape[0]
    sizes = list(ds.domain.shape)
    d = len(sizes)
    batch = [[a] for a in range(d)] + [list(p) for p in itertools.combinations(range(d), 2)]
    rows = []
    for label, subsets in ((f"{len(batch)} marginals (all 1- and 2-way)", batch),
                           ("1 marginal (age, education, income)", [[0, 3, 14]])):
        t = timed(lambda: _core.count_marginals(big, sizes, subsets), max(3, repeats // 2))
        rows.append((f"{n / 1e6:.1f} M rows, {label}", "dpcore count_marginals, 2 threads", *t,
                     rate(n, t) + f" ({len(subsets)} table{'s' if len(subsets) > 1 else ''})"))
    flat = big.astype(np.int64)
    shape = [sizes[a] for a in (0, 3, 14)]
    t = timed(lambda: np.bincount(np.ravel_multi_index(
        (flat[:, 0], flat[:, 3], flat[:, 14]), shape), minlength=int(np.prod(shape))), 3)
    rows.append((f"{n / 1e6:.1f} M rows, 1 marginal (age, education, income)",
                 "numpy ravel_multi_index + bincount", *t, rate(n, t)))
    return rows


def aim_like_tree(domain: Domain, target_mb: float, rng) -> list:
    """Random 3-way cliques added (AIM-style) while the junction tree stays <= target_mb."""
    from dpcore.junction_tree import JunctionTree

    candidates = list(itertools.combinations(domain.attrs, 3))
    rng.shuffle(candidates)
    cliques: list = []
    tree = JunctionTree(domain, cliques)
    for c in candidates:
        if tree.hypothetical_size_mb([c]) <= target_mb:
            cliques.append(c)
            tree = JunctionTree(domain, cliques)
        if len(cliques) >= 40:
            break
    return cliques


def bench_message_passing(domain: Domain, repeats: int) -> list[tuple]:
    from dpcore.junction_tree import JunctionTree

    rng = np.random.default_rng(0)
    rows = []
    for target in (1.0, 10.0, 80.0):
        cliques = aim_like_tree(domain, target, rng)
        tree = JunctionTree(domain, cliques)
        potentials = [Factor(domain.project(c), rng.normal(size=domain.project(c).shape))
                      for c in cliques]
        # One-off (index maps built per call) and compiled once, as estimation runs it.
        calibrator = tree.calibrator([f.attributes for f in potentials], [])
        flat = np.concatenate([f.values.ravel() for f in potentials])
        calls = (("dpcore JunctionTree.calibrate", lambda: tree.calibrate(potentials)),
                 ("dpcore Calibrator.run (compiled once)", lambda: calibrator.run(flat)))
        for label, call in calls:
            t = timed(call, max(3, repeats // 2))
            rows.append((f"calibrate, {len(cliques)} 3-way cliques -> {len(tree.cliques)} "
                         f"maximal, {tree.size_mb:.1f} MB", label, *t,
                         f"{tree.size / (float(t[0]) / 1e3) / 1e6:.0f} M cells/s / "
                         f"{tree.size / (float(t[2]) / 1e3) / 1e6:.0f} M cells/CPU-s"))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "adult"))
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "kernels.md"))
    args = parser.parse_args(argv)

    domain = Domain.from_json(os.path.join(args.data, "adult-domain.json"))
    ds = Dataset.from_csv(os.path.join(args.data, "adult.csv"), domain)
    load_before = os.getloadavg()[0]
    rows = bench_three_way(ds, args.repeats)
    rows += bench_throughput(ds, args.rows, args.repeats)
    rows += bench_message_passing(domain, args.repeats)
    load_after = os.getloadavg()[0]

    lines = [
        "| benchmark | implementation | best ms | median ms | best CPU ms | speed (wall / CPU) |",
        "|---|---|---:|---:|---:|---|",
    ] + [f"| {' | '.join(r)} |" for r in rows]
    header = (f"Kernel benchmarks ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"load average {load_before:.1f} before / {load_after:.1f} after).")
    text = header + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.out)), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
