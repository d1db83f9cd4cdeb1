"""An evaluation report: PNG plots and a small HTML page (``dpcore evaluate --report DIR``).

Plots: real vs synthetic 1-way histograms (labelled by category or bin range), the per-marginal
workload error, the numeric columns' raw statistics and correlations (:mod:`dpcore.fidelity`),
train-on-synthetic/test-on-real scores when a target is given, and, when the result file of an
AIM run is given, AIM's confidence bounds (AIM paper Sec. 5, one-sided, L1 error in counts)
against the true errors. The report reads the real data: it is for the
data steward and is not itself differentially private.
"""
from __future__ import annotations

import html
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from dpcore.datetimes import DatetimeColumn
from dpcore.evaluation import EvaluationResult
from dpcore.files import replace_into
from dpcore.schema import (CategoricalColumn, NumericColumn, Schema, atomic_write_text,
                           integer_bin_range)

_MAX_TICKS = 24


def _pyplot():
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig: Any, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        fig.savefig(tmp, dpi=90, bbox_inches="tight")
        replace_into(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _labels(col: Any) -> list[str]:
    if isinstance(col, CategoricalColumn):
        out = list(col.categories) + ([col.other] if col.other is not None else [])
    elif isinstance(col, NumericColumn):
        e, last = col.edges, col.bins - 1
        out = []
        for k in range(col.bins):
            if isinstance(col, DatetimeColumn):
                a, b = integer_bin_range(e, k)
                out.append(col.text(a) if a == b else f"{col.text(a)}..{col.text(b)}")
            elif col.integer:   # the integers a..b the bin holds
                a, b = integer_bin_range(e, k)
                out.append(f"{a}" if a == b else f"{a}-{b}")
            else:
                out.append(f"{e[k]:g}" if e[k] == e[k + 1] else
                           f"[{e[k]:g}, {e[k + 1]:g}{']' if k == last else ')'}")
    else:
        out = [str(k) for k in range(col.size)]
    return out + (["<missing>"] if getattr(col, "missing_code", None) is not None else [])


def oneway_plot(real: np.ndarray, synth: np.ndarray, schema: Schema, path: Path) -> None:
    plt = _pyplot()
    d = len(schema)
    ncols = min(3, d)
    nrows = math.ceil(d / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 2.8 * nrows), squeeze=False)
    for j, col in enumerate(schema.columns):
        ax = axes[j // ncols][j % ncols]
        size = col.size
        p = np.bincount(real[:, j].astype(np.intp), minlength=size) / max(len(real), 1)
        q = np.bincount(synth[:, j].astype(np.intp), minlength=size) / max(len(synth), 1)
        x = np.arange(size)
        ax.bar(x - 0.2, p, width=0.4, label="real")
        ax.bar(x + 0.2, q, width=0.4, label="synthetic")
        ax.set_title(col.name, fontsize=9)
        if size <= _MAX_TICKS:
            ax.set_xticks(x)
            ax.set_xticklabels(_labels(col), rotation=70, fontsize=6)
        ax.tick_params(axis="y", labelsize=6)
        if j == 0:
            ax.legend(fontsize=7)
    for j in range(d, nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def error_plot(evaluation: EvaluationResult, path: Path) -> None:
    plt = _pyplot()
    errors = sorted((m.error for m in evaluation.marginals), reverse=True)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.plot(np.arange(1, len(errors) + 1), errors, marker=".", linewidth=0.8)
    ax.axhline(evaluation.workload_error, color="gray", linestyle="--",
               label=f"workload error {evaluation.workload_error:.4f}")
    ax.set_xlabel("marginal (sorted by error)")
    ax.set_ylabel("L1 error (normalised)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def bound_pairs(real: np.ndarray, synth: np.ndarray, schema: Schema,
                bounds: list[dict[str, Any]]) -> list[tuple[tuple[str, ...], float, float]]:
    """(attrs, true L1 error in counts, bound) for every finite bound."""
    names = list(schema.names)
    shape = [c.size for c in schema.columns]
    out = []
    for b in bounds:
        if b.get("bound") is None or not all(a in names for a in b["attrs"]):
            continue
        axes = [names.index(a) for a in b["attrs"]]
        sizes = [shape[a] for a in axes]
        def counts(codes: np.ndarray) -> np.ndarray:
            flat = np.ravel_multi_index(tuple(codes[:, a].astype(np.intp) for a in axes), sizes)
            return np.bincount(flat, minlength=math.prod(sizes)).astype(np.float64)
        true = float(np.abs(counts(real) - counts(synth)).sum())
        out.append((tuple(b["attrs"]), true, float(b["bound"])))
    return out


def bounds_plot(pairs: list[tuple[tuple[str, ...], float, float]], level: float,
                path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    true = np.array([t for _, t, _ in pairs])
    bound = np.array([b for _, _, b in pairs])
    colors = ["tab:blue" if t <= b else "tab:red" for t, b in zip(true, bound)]
    top = max(float(bound.max()), float(true.max()), 1.0) * 1.5
    low = max(min(float(bound.min()), float(true[true > 0].min(initial=top))) / 1.5, 1e-3)
    ax.scatter(np.maximum(bound, low), np.maximum(true, low), s=8, c=colors)
    ax.plot([low, top], [low, top], color="gray", linewidth=0.8)
    # Errors and bounds span orders of magnitude (1-way vs 3-way marginals).
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"AIM confidence bound ({level:.0%}), L1 in counts")
    ax.set_ylabel("true error, L1 in counts")
    ax.set_title("bounds hold below the diagonal", fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def correlation_plot(fidelity: Any, path: Path) -> None:
    """Pearson correlations of the numeric columns: real, synthetic and their difference."""
    plt = _pyplot()
    names = list(fidelity.correlation_names)
    k = len(names)
    fig, axes = plt.subplots(1, 3, figsize=(4 + 1.2 * k, 1.6 + 0.4 * k), squeeze=False)
    panels = (("real", fidelity.correlation_real, "coolwarm", -1),
              ("synthetic", fidelity.correlation_synthetic, "coolwarm", -1),
              ("|real - synthetic|", np.abs(fidelity.correlation_real
                                            - fidelity.correlation_synthetic), "Reds", 0))
    for ax, (title, m, cmap, low) in zip(axes[0], panels):
        image = ax.imshow(m, vmin=low, vmax=1, cmap=cmap)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(k))
        ax.set_xticklabels(names, rotation=70, fontsize=6)
        ax.set_yticks(range(k))
        ax.set_yticklabels(names, fontsize=6)
        fig.colorbar(image, ax=ax, shrink=0.7)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _raw_section(fidelity: Any, out: Path) -> list[str]:
    esc = html.escape
    parts = ["<h2>Raw values: numeric columns</h2>",
             "<table><tr><th>column</th><th>mean real</th><th>mean synthetic</th>"
             "<th>median real</th><th>median synthetic</th><th>point masses (real &rarr; "
             "synthetic share)</th></tr>"]
    for c in fidelity.columns:
        masses = ", ".join(f"{v:g}: {r:.1%} &rarr; {q:.1%}" for v, r, q in c.point_masses)
        parts.append(f"<tr><td>{esc(c.name)}</td><td>{c.mean[0]:.4g}</td><td>{c.mean[1]:.4g}</td>"
                     f"<td>{c.quantiles[2][0]:.4g}</td><td>{c.quantiles[2][1]:.4g}</td>"
                     f"<td>{masses}</td></tr>")
    parts.append("</table>")
    if len(fidelity.correlation_names) > 1:
        correlation_plot(fidelity, out / "correlations.png")
        parts += [f"<h2>Correlations</h2><p>Largest absolute difference: "
                  f"{fidelity.max_correlation_gap:.3f}.</p>",
                  "<img src='correlations.png' alt='correlations'>"]
    return parts


def _tstr_section(tstr: dict[str, Any]) -> list[str]:
    def cell(x: Any) -> str:
        return "&ndash;" if x is None else f"{x:.3f}"
    a, b = tstr["train_synthetic"], tstr["train_real"]
    return [f"<h2>Train on synthetic, test on real: {html.escape(tstr['target'])}</h2>",
            "<table><tr><th>trained on</th><th>accuracy</th><th>ROC AUC</th></tr>",
            f"<tr><td>synthetic</td><td>{cell(a['accuracy'])}</td><td>{cell(a['roc_auc'])}</td></tr>",
            f"<tr><td>real (70 %)</td><td>{cell(b['accuracy'])}</td><td>{cell(b['roc_auc'])}</td></tr>",
            f"</table><p>Both scored on the same {tstr['test_rows']} held-out real rows.</p>"]


def _violations_section(violations: list[dict[str, Any]]) -> list[str]:
    esc = html.escape
    rows = [f"<tr><td>{esc(v['rule'])}</td><td>{esc(v['type'])}</td><td>{v['rows']}</td>"
            f"<td>{v['share']:.2%}</td></tr>" for v in violations]
    return ["<h2>Schema constraints</h2>",
            "<p>Synthetic rows breaking each public rule of the schema.</p>",
            "<table><tr><th>rule</th><th>type</th><th>rows</th><th>share</th></tr>", *rows,
            "</table>"]


def write_report(directory: str | os.PathLike, real: np.ndarray, synth: np.ndarray,
                 schema: Schema, evaluation: EvaluationResult,
                 result: dict[str, Any] | None = None, *, fidelity: Any = None,
                 tstr: dict[str, Any] | None = None,
                 violations: list[dict[str, Any]] | None = None) -> Path:
    """Write ``index.html`` and its PNGs into ``directory`` (created if needed); return the
    page's path. ``violations``: synthetic rows breaking each schema constraint
    (:func:`dpcore.constraints.violations`)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    oneway_plot(real, synth, schema, out / "oneway.png")
    error_plot(evaluation, out / "marginal_errors.png")
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>dpcore evaluation</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "td,th{padding:2px 8px;text-align:left}</style></head><body>",
        "<h1>dpcore evaluation report</h1>",
        "<p><b>Not private:</b> this report reads the real data. Share the synthetic data and "
        "the ledger, not this page.</p>",
        f"<p>Workload error (AIM Definition 2, mean L1 distance of normalised marginals, "
        f"0 = perfect, 2 = disjoint): <b>{evaluation.workload_error:.4f}</b> over "
        f"{len(evaluation.marginals)} marginals. Real rows: {evaluation.rows_real}; "
        f"synthetic rows: {evaluation.rows_synthetic}.</p>",
    ]
    if result is not None:
        parts.append(f"<p>Run: {esc(str(result.get('mechanism')))} at epsilon = "
                     f"{esc(str(result.get('epsilon')))}, delta = {esc(str(result.get('delta')))}"
                     f", {esc(str(result.get('rounds')))} rounds.</p>")
    parts += ["<h2>1-way marginals: real vs synthetic</h2>", "<img src='oneway.png' alt='1-way'>",
              "<h2>Per-marginal error</h2>", "<img src='marginal_errors.png' alt='errors'>",
              "<table><tr><th>error</th><th>marginal</th></tr>"]
    for m in sorted(evaluation.marginals, key=lambda m: -m.error)[:25]:
        parts.append(f"<tr><td>{m.error:.4f}</td><td>{esc(' x '.join(m.attrs))}</td></tr>")
    parts.append("</table>")
    if fidelity is not None and fidelity.columns:
        parts += _raw_section(fidelity, out)
    if tstr is not None:
        parts += _tstr_section(tstr)
    if violations is not None:
        parts += _violations_section(violations)
    bounds = (result or {}).get("confidence_bounds")
    if bounds:
        pairs = bound_pairs(real, synth, schema, bounds)
        if pairs:
            level = float(bounds[0].get("level", 0.95))
            bounds_plot(pairs, level, out / "confidence_bounds.png")
            held = sum(t <= b for _, t, b in pairs)
            parts += ["<h2>AIM confidence bounds vs true error</h2>",
                      f"<p>{held} of {len(pairs)} finite bounds hold (each is a one-sided "
                      f"{level:.0%} bound; AIM paper Sec. 5).</p>",
                      "<img src='confidence_bounds.png' alt='bounds'>"]
    parts.append("</body></html>\n")
    index = out / "index.html"
    atomic_write_text(index, "\n".join(parts))
    return index
