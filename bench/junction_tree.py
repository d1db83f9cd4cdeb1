"""Junction-tree kernel timings on an AIM-sized model of Adult.

  python bench/junction_tree.py [--cliques 30] [--limit-mb 80] [--seed 0] [--repeat 20]

Builds a model the way AIM grows one: random 2- and 3-way cliques over Adult's 15 attributes,
each kept only while the junction tree stays under --limit-mb (AIM's JT-SIZE filter), until
--cliques are kept. Reports the tree, then median times of: calibrate (the work of one
mirror-descent iteration), project of every measured clique, project of every 2- and 3-way
marginal (AIM's candidate set; in-clique and variable-elimination queries counted apart),
sampling 48842 records both ways, and hypothetical_size_mb calls per second.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1]))  # the source tree, if not installed

from dpcore.domain import Domain  # noqa: E402
from dpcore.factor import Factor  # noqa: E402
from dpcore.junction_tree import JunctionTree  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult-domain.json"


def median_time(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def grow_model(domain, n_cliques, limit_mb, rng):
    cliques = []
    tree = JunctionTree(domain, cliques)
    candidates = [c for k in (2, 3) for c in itertools.combinations(domain.attrs, k)]
    order = rng.permutation(len(candidates))
    for i in order:
        if len(cliques) == n_cliques:
            break
        c = candidates[i]
        if tree.hypothetical_size_mb([c]) <= limit_mb:
            cliques.append(c)
            tree = JunctionTree(domain, cliques)
    return cliques, tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default=str(DATA))
    parser.add_argument("--cliques", type=int, default=30)
    parser.add_argument("--limit-mb", type=float, default=80.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    domain = Domain.from_json(args.domain)
    cliques, tree = grow_model(domain, args.cliques, args.limit_mb, rng)
    pots = [Factor(domain.project(c), rng.standard_normal(domain.project(c).shape))
            for c in cliques]
    print(f"model: {len(cliques)} cliques -> {len(tree.cliques)} maximal cliques, "
          f"largest {max(domain.size(c) for c in tree.cliques)} cells, "
          f"size {tree.size_mb:.2f} MB")
    cal = tree.calibrate(pots)
    t_cal = median_time(lambda: tree.calibrate(pots), args.repeat)
    t_beliefs = median_time(lambda: tree.calibrate(pots).beliefs, args.repeat)
    t_measured = median_time(lambda: cal.project_many(cliques), args.repeat)
    pairs = list(itertools.combinations(domain.attrs, 2))
    triples = list(itertools.combinations(domain.attrs, 3))
    workload = pairs + triples
    inside = [c for c in workload if tree.containing_clique(c) is not None]
    outside = [c for c in workload if tree.containing_clique(c) is None]
    # Out-of-clique queries are slow on large trees: time an evenly spread sample of 20.
    outside = outside[:: max(1, len(outside) // 20)]
    t_in = median_time(lambda: cal.project_many(inside), 1)
    t_out = median_time(lambda: cal.project_many(outside), 1)
    t_round = median_time(lambda: cal.sample(48842, "round", seed=1), 3)
    t_sample = median_time(lambda: cal.sample(48842, "sample", seed=1), 3)
    one = [(c,) for c in workload]
    t0 = time.perf_counter()
    for c in one:
        tree.hypothetical_size_mb(c)
    per_call = (time.perf_counter() - t0) / len(one)
    t0 = time.perf_counter()
    tree.hypothetical_sizes_mb(workload)
    batched = (time.perf_counter() - t0) / len(workload)
    rows = [
        ("calibrate (one mirror-descent iteration)", t_cal * 1e3, "ms"),
        ("calibrate + beliefs as Factors", t_beliefs * 1e3, "ms"),
        (f"project {len(cliques)} measured cliques", t_measured * 1e3, "ms"),
        (f"project {len(inside)} in-clique 2/3-way marginals", t_in * 1e3, "ms"),
        (f"project {len(outside)} sampled out-of-clique 2/3-way marginals", t_out * 1e3, "ms"),
        ("  per out-of-clique marginal", t_out / max(len(outside), 1) * 1e6, "us"),
        ("sample 48842 records, round", t_round * 1e3, "ms"),
        ("sample 48842 records, sample", t_sample * 1e3, "ms"),
        ("hypothetical_size_mb calls per second", 1.0 / per_call, "/s"),
        ("  batched hypothetical_sizes_mb", 1.0 / batched, "/s"),
    ]
    for name, value, unit in rows:
        print(f"{name:<52} {value:>12.3f} {unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
