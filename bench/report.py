"""Turn bench/results/results.csv into plots and a markdown summary.

  python bench/report.py [--results bench/results/results.csv] [--out bench/results]

Writes error_vs_eps.png (workload error against epsilon, one panel per dataset and workload,
like the AIM paper's Figure 1), time.png (wall time per mechanism and implementation, log
scale) and summary.md (the side-by-side table, every timeout and crash listed).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
STYLE = {"dpcore": "-", "mbi": "--"}
COLORS = {"aim": "tab:blue", "mst": "tab:orange", "mwem": "tab:green"}


def load(path: str) -> list[dict]:
    """The rows of results.csv; a configuration run again (--rerun) keeps only its last row."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    latest = {}
    for r in rows:  # appended in run order
        latest[tuple(r[k] for k in ("dataset", "workload", "mechanism", "impl", "epsilon",
                                    "seed", "delta"))] = r
    return list(latest.values())


def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def grouped(rows):
    """(dataset, workload, mechanism, impl, eps) -> list of rows over seeds."""
    out = defaultdict(list)
    for r in rows:
        out[r["dataset"], r["workload"], r["mechanism"], r["impl"], float(r["epsilon"])].append(r)
    return out


def summarise(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["status"] == "ok"]
    bad = [r["status"] for r in runs if r["status"] != "ok"]

    def mean(col):
        vals = [_f(r[col]) for r in ok if _f(r[col]) is not None]
        return statistics.fmean(vals) if vals else None

    return {"n": len(runs), "ok": len(ok), "bad": bad, "error": mean("error"),
            "wall": mean("wall_s"), "cpu": mean("cpu_s"), "rss": mean("peak_rss_mb"),
            "rounds": mean("rounds"), "size": mean("model_size_mb"),
            "ledger": all(r.get("ledger_ok") == "True" for r in ok) if ok else None}


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def cell(s: dict, key: str, spec: str) -> str:
    if s is None:
        return "not run"
    if not s["ok"]:
        return "/".join(sorted(set(s["bad"])))
    text = fmt(s[key], spec)
    return text + (f" ({len(s['bad'])} failed)" if s["bad"] else "")


def table(rows) -> str:
    groups = grouped(rows)
    keys = sorted({k[:3] + (k[4],) for k in groups})
    head = ("| dataset | workload | mech | ε | error dpcore | error mbi | wall s dpcore | wall s mbi "
            "| wall speed-up | CPU s dpcore | CPU s mbi | CPU speed-up | peak MB dpcore | peak MB mbi | rounds d/m "
            "| model MB d/m | ledger |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for ds, wl, mech, eps in keys:
        d = groups.get((ds, wl, mech, "dpcore", eps))
        m = groups.get((ds, wl, mech, "mbi", eps))
        sd = summarise(d) if d else None
        sm = summarise(m) if m else None
        speed = cpu_speed = "—"
        if sd and sm and sd["ok"] and sd["wall"]:
            if sm["ok"]:
                speed = f"{sm['wall'] / sd['wall']:.1f}×"
                cpu_speed = f"{sm['cpu'] / sd['cpu']:.1f}×"
            elif sm["bad"]:
                # A reference run killed at its cap still bounds the speed-up from below.
                walls = [_f(r["wall_s"]) for r in m if _f(r["wall_s"])]
                cpus = [_f(r["cpu_s"]) for r in m if _f(r["cpu_s"])]
                if walls:
                    speed = f"> {min(walls) / sd['wall']:.1f}×"
                if cpus:
                    cpu_speed = f"> {min(cpus) / sd['cpu']:.1f}×"
        rounds = f"{cell(sd, 'rounds', '.0f')} / {cell(sm, 'rounds', '.0f')}"
        size = f"{cell(sd, 'size', '.2f')} / {cell(sm, 'size', '.2f')}"
        ledger = "—" if not sd or sd["ledger"] is None else ("verified" if sd["ledger"] else "FAILED")
        lines.append(f"| {ds} | {wl} | {mech} | {eps:g} | {cell(sd, 'error', '.4f')} | "
                     f"{cell(sm, 'error', '.4f')} | {cell(sd, 'wall', '.1f')} | {cell(sm, 'wall', '.1f')} | "
                     f"{speed} | {cell(sd, 'cpu', '.1f')} | {cell(sm, 'cpu', '.1f')} | {cpu_speed} | "
                     f"{cell(sd, 'rss', '.0f')} | {cell(sm, 'rss', '.0f')} | {rounds} | {size} | {ledger} |")
    return "\n".join(lines)


def failures(rows) -> str:
    bad = [r for r in rows if r["status"] != "ok"]
    if not bad:
        return "None."
    return "\n".join(f"- {r['dataset']}/{r['workload']}/{r['mechanism']}/{r['impl']} ε={r['epsilon']} "
                     f"seed {r['seed']}: **{r['status']}** after {r['wall_s']} s wall, "
                     f"{r['cpu_s']} CPU s, {r['peak_rss_mb']} MB — {r['note'][:300]}" for r in bad)


def plot_error(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = grouped(rows)
    panels = sorted({k[:2] for k in groups})
    if not panels:
        return
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
    for ax, (ds, wl) in zip(axes.flat, panels):
        for mech in sorted(COLORS):
            for impl in ("dpcore", "mbi"):
                pts = sorted((k[4], summarise(v)) for k, v in groups.items()
                             if k[:4] == (ds, wl, mech, impl))
                pts = [(e, s) for e, s in pts if s["ok"]]
                if not pts:
                    continue
                ax.plot([e for e, _ in pts], [s["error"] for _, s in pts], STYLE[impl],
                        color=COLORS[mech], marker="o" if impl == "dpcore" else "s",
                        mfc=None if impl == "dpcore" else "none", label=f"{mech} ({impl})")
        ax.set_xscale("log")
        ax.set_title(f"{ds} — {wl}")
        ax.set_xlabel("ε (δ = 1e-9)")
        ax.set_ylabel("workload error (L1)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=110)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)


def plot_time(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = grouped(rows)
    labels, dp, mb = [], [], []
    for key in sorted({k[:3] + (k[4],) for k in groups}):
        ds, wl, mech, eps = key
        sd = summarise(groups.get((ds, wl, mech, "dpcore", eps), []))
        sm = summarise(groups.get((ds, wl, mech, "mbi", eps), []))
        labels.append(f"{ds}/{wl}\n{mech} ε={eps:g}")
        dp.append(sd["wall"] or 0)
        mb.append(sm["wall"] or 0)
    if not labels:
        return
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(labels)), 4.5))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], dp, width=0.4, label="dpcore")
    ax.bar([x + 0.2 for x in xs], mb, width=0.4, label="mbi (0 = not run / failed)")
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("wall seconds (log)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=110)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default=os.path.join(HERE, "results", "results.csv"))
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args(argv)
    rows = load(args.results)
    os.makedirs(args.out, exist_ok=True)
    plot_error(rows, os.path.join(args.out, "error_vs_eps.png"))
    plot_time(rows, os.path.join(args.out, "time.png"))
    machines = sorted({r["machine"] for r in rows})
    text = "\n".join([
        "# Benchmark results (generated by bench/report.py from results.csv)", "",
        "Machine(s): " + "; ".join(machines), "",
        "Error = AIM Definition 2, unit weights, L1 between normalised marginals (TVD = half). "
        "Wall/CPU/peak memory measured from outside each child (os.wait4). Means over seeds.", "",
        table(rows), "", "## Timeouts and crashes", "", failures(rows), ""])
    with open(os.path.join(args.out, "summary.md.tmp"), "w") as f:
        f.write(text)
    os.replace(os.path.join(args.out, "summary.md.tmp"), os.path.join(args.out, "summary.md"))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
