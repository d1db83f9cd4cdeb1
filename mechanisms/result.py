"""What every mechanism returns: the synthetic data, the model, the ledger and a round log."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpcore.errors import InvalidArgumentError


@dataclass(frozen=True)
class RoundRecord:
    """One step of a mechanism: what was selected and/or measured, at which noise level.

    ``kind`` is "measure" (a marginal measured without a private selection, e.g. AIM's
    initialisation), "select" (a selection only, e.g. one MST Kruskal step) or
    "select+measure" (an AIM/MWEM round). ``epsilon`` is the exponential mechanism's ε in the
    convention Pr ∝ exp(ε q / (2Δ)); ``rho`` is the exact zCDP charged in this step.
    """

    index: int
    kind: str
    clique: tuple[str, ...]
    sigma: float | None
    epsilon: float | None
    sensitivity: float | None
    candidates: int
    rho: Fraction
    seconds: float


@dataclass
class MechanismResult:
    """Output of ``aim``/``mst``/``mwem``/``independent``. Everything here is public except
    the wall-clock ``timings`` and each round's ``seconds``, which time reads of the data
    (they stay with the data owner: :meth:`without_timings` drops them, as
    ``Synthesizer.save`` and the CLI's ``--result`` do)."""

    synthetic: Any
    model: Any
    ledger: Any
    rounds: tuple[RoundRecord, ...]
    timings: dict[str, float]
    extras: dict[str, Any] = field(default_factory=dict)

    def without_timings(self) -> MechanismResult:
        """This result with the timings zeroed (what may be published)."""
        from dataclasses import replace
        return replace(self, timings={}, rounds=tuple(replace(r, seconds=0.0)
                                                      for r in self.rounds))

    @property
    def confidence_bounds(self):
        """AIM's per-marginal confidence bounds (Sec. 5), or None for other mechanisms."""
        return self.extras.get("confidence_bounds")


class Timer:
    """Accumulates wall-clock seconds per phase ("select", "measure", "estimate", ...)."""

    def __init__(self):
        self.totals: dict[str, float] = {}
        self._start = time.perf_counter()

    def add(self, phase: str, seconds: float) -> None:
        self.totals[phase] = self.totals.get(phase, 0.0) + seconds

    def done(self) -> dict[str, float]:
        out = dict(self.totals)
        out["total"] = time.perf_counter() - self._start
        return out


ProgressCallback = Callable[[RoundRecord], None]

# The default synthetic row count is the model's noisy total, at most this many rows.
DEFAULT_MAX_ROWS = 10 ** 7


SAMPLE_METHODS = ("round", "sample")


def check_output(domain, rows, method: str = "round", seed=None) -> None:
    """Before a mechanism's first charge: the ``synthetic_rows``, ``sample_method`` and
    ``seed`` that :func:`synthesize` will get, checked as the plan checks them (audit 15: a
    bad value given to the low-level functions failed after the whole budget was spent)."""
    from .plan import check_rows, check_seed
    check_rows(rows, len(domain), "synthetic_rows")
    check_seed(seed)
    if method not in SAMPLE_METHODS:
        raise InvalidArgumentError(f"sample_method must be one of {SAMPLE_METHODS}, got {method!r}")


def synthesize(model, rows: int | None, method: str, seed) -> Any:
    """Sample the synthetic dataset: ``rows`` records, or the model's noisy total when None.

    Post-processing of the fitted model: it reads no data and costs no budget.
    """
    if rows is None:
        # The noisy total can be absurd at a tiny epsilon (1e24 was seen): clamp it
        # (post-processing of a private value). Ask for more rows explicitly with `rows`.
        from .plan import cell_cap
        cap = min(DEFAULT_MAX_ROWS, max(1, cell_cap() // len(model.domain)))
        rows = min(max(1, int(round(model.total))), cap)
    return model.synthetic_data(rows, method=method, seed=seed)


def round_options(options: dict, round_iters) -> dict:
    """estimate() options for an intermediate refit (AIM, MWEM): at most ``round_iters``
    iterations. Selection needs only the model's shape, the refit is warm-started, and the
    final model is refit to convergence; mbi's AIM uses a fixed 1000 per round."""
    if isinstance(round_iters, bool) or not isinstance(round_iters, int) or round_iters < 1:
        raise InvalidArgumentError(f"round_iters must be an int >= 1, got {round_iters!r}")
    return {**options, "max_iters": min(options.get("max_iters", round_iters), round_iters)}
