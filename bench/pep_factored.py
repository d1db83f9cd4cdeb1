"""Issue 18's open question: PEP's projection over a factored (graphical-model) state.

PEP (mechanisms.adaptive.PEPUpdate) keeps an explicit histogram p = U exp(sum_i lambda_i q_i):
every projection step adds lambda to the log-mass of one cell of one measured marginal. That
family is exactly a graphical model whose cliques are the measured marginals, with the step
adding lambda to one entry of that clique's log-potential. So the same algorithm can keep only
the clique tables and read marginals from dpcore's calibrated junction tree, one calibration a
step. ``FactoredPEP`` below does that through the public API (an experiment, not a mechanism:
it has no model-size guard, see the findings).

    python bench/pep_factored.py        # writes bench/results/pep_factored.md

1. Adult reduced to 7 attributes, all 35 3-way marginals, epsilon = 1, T = 50 (bench/adaptive.py's
   setting): explicit and factored PEP on the same seed, scored by bench/adaptive.py's metric.
2. Full Adult (15 attributes), 64 random 3-way marginals (bench/gem.py's workload), T = 5 rounds
   of 10: the junction tree after each round, with a CPU cap per run.
"""
from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np
import pandas as pd

import adaptive as reduced   # bench/adaptive.py: the 7-attribute data and its scorer
from dpcore import Curator, Dataset, Domain
from dpcore.accounting import PrivacyFilter
from dpcore.factor import Factor
from dpcore.inference import GraphicalModel
from mechanisms.adaptive import PEP_CLIP, PEPUpdate, adaptive_measurements

HERE = Path(__file__).resolve().parent


class FactoredPEP:
    """PEPUpdate's steps (Alg. 4, clipping, warm start, max_steps) on clique log-potentials."""

    name = "pep-factored"

    def __init__(self, max_steps: int = 25, log=None):
        self.max_steps, self.log, self.calibrations = max_steps, log, 0

    def init(self, domain, cliques, rounds, rng):
        return {}

    def model(self, state, domain, total=1.0) -> GraphicalModel:
        cliques, tables = list(state), [Factor(domain.project(c), t) for c, t in state.items()]
        for a in domain.attrs:     # attributes no measurement covers stay uniform
            if not any(a in c for c in state):
                cliques.append((a,))
                tables.append(Factor(domain.project((a,)), np.zeros(domain.size((a,)))))
        self.calibrations += 1
        return GraphicalModel(domain, cliques, tables, total)

    def answers(self, state, domain, cliques):
        return [f.values.ravel() for f in self.model(state, domain).project_many(cliques)]

    def update(self, state, domain, answers, new, rng):
        state = {c: t.copy() for c, t in state.items()}
        for c in new:
            state.setdefault(c, np.zeros(domain.project(c).shape))
        cliques = list(answers)
        for _ in range(self.max_steps):
            model = self.model(state, domain)
            current = dict(zip(cliques, (f.values for f in model.project_many(cliques))))
            worst, clique, cell = -1.0, None, None
            for c in cliques:
                err = np.abs(answers[c] - current[c])
                i = int(np.argmax(err))
                if err.flat[i] > worst:
                    worst, clique, cell = float(err.flat[i]), c, np.unravel_index(i, err.shape)
            a = float(np.clip(answers[clique][cell], PEP_CLIP, 1 - PEP_CLIP))
            q = float(np.clip(current[clique][cell], PEP_CLIP, 1 - PEP_CLIP))
            state[clique][cell] += np.log(a * (1 - q) / ((1 - a) * q))
        if self.log is not None:
            self.log.put((len(state), self.model(state, domain).size_mb, time.process_time()))
        return state

    def output(self, state, domain, total):
        return self.model(state, domain, total)


def compare_reduced(seed: int) -> list[dict]:
    codes, shape = reduced.load()
    data = Dataset(codes, Domain(tuple(reduced.ATTRS), shape))
    rows = []
    for family in (PEPUpdate(), FactoredPEP()):
        filt = PrivacyFilter.from_approx_dp(1.0, 1.0 / len(codes) ** 2)
        start = time.process_time()
        result = adaptive_measurements(Curator(data, filt, seed=seed),
                                       list(itertools.combinations(reduced.ATTRS, 3)), family,
                                       rounds=50, seed=seed, synthetic_rows=1)
        cpu = time.process_time() - start
        if family.name == "pep":
            p, state_mb = result.extras["histogram"], int(np.prod(shape)) * 8 / 2 ** 20
        else:
            p, state_mb = result.model.project(reduced.ATTRS).values, result.model.size_mb
        error, top = reduced.scores(codes, shape, p)
        rows.append({"family": family.name, "seed": seed, "error": error, "max_error": top,
                     "cpu_s": cpu, "state_mb": state_mb})
    return rows


def _full_adult(seed: int, log) -> None:
    data_dir = reduced.DATA
    sizes = json.load(open(data_dir / "adult-domain.json"))
    attrs = list(sizes)
    codes = pd.read_csv(data_dir / "adult.csv")[attrs].to_numpy(np.int64)
    domain = Domain(tuple(attrs), tuple(sizes[a] for a in attrs))
    triples = list(itertools.combinations(attrs, 3))
    workload = [triples[i] for i in np.random.default_rng(0).choice(len(triples), 64,
                                                                     replace=False)]
    filt = PrivacyFilter.from_approx_dp(1.0, 1.0 / len(codes) ** 2)
    adaptive_measurements(Curator(Dataset(codes, domain), filt, seed=seed), workload,
                          FactoredPEP(log=log), rounds=5, per_round=10, seed=seed,
                          synthetic_rows=1)
    log.put("done")


def grow_full(seed: int, cap_s: float) -> tuple[list, bool]:
    """Full Adult in a child process: (cliques, JT MB, CPU s) after each round; killed at cap_s."""
    log = multiprocessing.Queue()
    child = multiprocessing.Process(target=_full_adult, args=(seed, log))
    child.start()
    rounds, done, deadline = [], False, time.monotonic() + cap_s
    while time.monotonic() < deadline and child.is_alive() or not log.empty():
        try:
            item = log.get(timeout=1.0)
        except Exception:
            continue
        if item == "done":
            done = True
            break
        rounds.append(item)
    child.kill()
    child.join()
    return rounds, done


def workload_tree_sizes(ks) -> list[tuple[int, float]]:
    from dpcore.junction_tree import JunctionTree
    sizes = json.load(open(reduced.DATA / "adult-domain.json"))
    attrs = list(sizes)
    domain = Domain(tuple(attrs), tuple(sizes[a] for a in attrs))
    triples = list(itertools.combinations(attrs, 3))
    workload = [triples[i] for i in np.random.default_rng(0).choice(len(triples), 64,
                                                                     replace=False)]
    return [(k, JunctionTree(domain, workload[:k]).size_mb) for k in ks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--cap", type=float, default=300.0, help="seconds for the full-Adult run")
    parser.add_argument("--out", default=str(HERE / "results" / "pep_factored.md"))
    args = parser.parse_args()
    rows = [r for seed in args.seeds for r in compare_reduced(seed)]
    growth, finished = grow_full(args.seeds[0], args.cap)
    lines = ["# PEP over a factored state (issue 18)", "",
             "Written by `python bench/pep_factored.py` (module docstring: the experiment). "
             "CPU seconds in-process (time.process_time), on the shared 2-core machine.", "",
             "## Adult, 7 attributes, all 35 3-way marginals, epsilon = 1, T = 50", "",
             "| PEP state | seed | workload error | max error | CPU s | state MB |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['family']} | {r['seed']} | {r['error']:.4f} | {r['max_error']:.4f} | "
              f"{r['cpu_s']:.1f} | {r['state_mb']:.3f} |" for r in rows]
    lines += ["", "## Full Adult, 64 random 3-way marginals, T = 5 rounds of 10", "",
              "| after round | measured cliques | junction tree MB | CPU s |", "|---|---|---|---|"]
    lines += [f"| {i + 1} | {n} | {mb:.2f} | {cpu:.1f} |" for i, (n, mb, cpu) in
              enumerate(growth)]
    if not finished:
        lines.append(f"| {len(growth) + 1} | - | not reached in {args.cap:.0f} s | - |")
    lines += ["", "Junction tree of the workload's first k triples (what any k measured triples "
              "cost the factored state):", "", "| k | junction tree MB |", "|---|---|"]
    lines += [f"| {k} | {mb:,.1f} |" for k, mb in workload_tree_sizes((10, 20, 30, 64))]
    lines += ["", "Findings: on the reduced domain the factored state gives the explicit "
              "histogram's result to float precision with a tenth of its memory, at 1.3-2.6x its "
              "CPU (one calibration a step). On full Adult it cannot run unguarded: the measured "
              "triples' junction tree passes 3 GB at 20 triples. A factored PEP needs AIM's "
              "JT-SIZE filter on the selection pool (before each charge) and a cheaper step than a "
              "full calibration (update only the cliques the step touches); neither is built.", ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
