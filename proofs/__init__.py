"""Machine-checked privacy claims: one module per claim.

Each module's docstring states the claim, its sources, its preconditions and the proof; its
``check()`` runs the sympy (and, where noted, high-precision numeric) checks the proof rests on
and cross-checks the dpcore code that relies on the claim. ``check()`` raises AssertionError on
failure.

    python -m proofs            # table of (claim, status); exit status 1 if any claim fails
    proofs.run_all()            # the same as a list of ProofResult (used by `dpcore proofs`)
"""
from __future__ import annotations

import importlib
import time
import traceback
from dataclasses import dataclass

MODULES = (
    "gaussian",
    "weighted_marginals",
    "discrete_gaussian",
    "zcdp_composition",
    "cks_conversion",
    "inverse_conversion",
    "pure_dp",
    "exponential_mechanism",
    "exact_sampling",
    "nist_mst_calibration",
    "mst_budget",
    "mwem_pgm_budget",
    "adaptive_budget",
    "aim_budget",
    "aim_l1_error",
    "quality_score_sensitivity",
    "merged_cells",
    "mst_calibration",
    "cost_rounding",
    "fem_selection",
    "level_sampling",
    "sepfem_separator",
    "dqrs_rejection",
    "structural_constraints",
    "privpgd_budget",
    "soft_count",
)


@dataclass(frozen=True)
class ProofResult:
    name: str          # module name, e.g. "gaussian"
    claim: str         # one-line statement
    ok: bool
    seconds: float
    error: str | None  # the failure (assertion message or traceback) when not ok


def load(name: str):
    if name not in MODULES:
        raise KeyError(f"unknown proof {name!r}; known: {', '.join(MODULES)}")
    return importlib.import_module(f"{__name__}.{name}")


def run(name: str) -> ProofResult:
    start = time.perf_counter()
    claim = name
    try:
        module = load(name)
        claim = module.CLAIM
        module.check()
    except Exception as exc:  # report every failure as a failed claim, never crash the table
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if isinstance(exc, AssertionError):
            detail += "\n" + traceback.format_exc(limit=-1)
        return ProofResult(name, claim, False, time.perf_counter() - start, detail)
    return ProofResult(name, claim, True, time.perf_counter() - start, None)


def run_all() -> list[ProofResult]:
    return [run(name) for name in MODULES]


def format_table(results) -> str:
    width = max(len(r.claim) for r in results)
    lines = [f"{'claim'.ljust(width)}  status  seconds", f"{'-' * width}  ------  -------"]
    for r in results:
        lines.append(f"{r.claim.ljust(width)}  {'PASS' if r.ok else 'FAIL':6}  {r.seconds:7.2f}")
    for r in results:
        if not r.ok:
            lines.append(f"\n[{r.name}] {r.error}")
    passed = sum(r.ok for r in results)
    lines.append(f"\n{passed}/{len(results)} claims verified")
    return "\n".join(lines)
