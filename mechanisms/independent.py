"""The Independent baseline (AIM paper Sec. 6.1): every 1-way marginal measured with the
Gaussian mechanism, synthetic data generated under an independence assumption.

The budget is split equally over the d marginals, each at ρ/d (ρ/(2σ²) per Prop. 1), each
calibrated to an exact share of what is left, so the shares add up to the remaining budget.
"""
from __future__ import annotations

import time
from fractions import Fraction

from dpcore.accounting.calibration import gaussian_sigma
from dpcore.errors import InvalidArgumentError
from dpcore.inference import Measurement, independent_model

from .result import MechanismResult, RoundRecord, Timer, check_output, synthesize


def independent(curator, *, synthetic_rows: int | None = None, sample_method: str = "round", seed=None,
                callback=None, discrete: bool | None = None) -> MechanismResult:
    """Measure all 1-way marginals, fit the independent model, sample synthetic records.

    ``discrete`` goes to :meth:`Curator.measure` (None: exact discrete Gaussian for counts)."""
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, sample_method, seed)
    if Fraction(curator.privacy_filter.remaining) <= 0:
        raise InvalidArgumentError("the privacy filter has no budget left, remaining = 0")
    measurements, records = [], []
    attrs = list(domain.attrs)
    for i, attr in enumerate(attrs):
        start = time.perf_counter()
        before = curator.privacy_filter.spent
        sigma = gaussian_sigma(Fraction(curator.privacy_filter.remaining) / (len(attrs) - i))
        y = curator.measure((attr,), sigma, discrete=discrete)
        measurements.append(Measurement((attr,), y, sigma))
        timer.add("measure", time.perf_counter() - start)
        record = RoundRecord(i, "measure", (attr,), sigma, None, None, 0,
                             Fraction(curator.privacy_filter.spent - before), time.perf_counter() - start)
        records.append(record)
        if callback is not None:
            callback(record)
    retired = curator.retire("Independent calibration residue")
    start = time.perf_counter()
    model = independent_model(domain, measurements)
    timer.add("estimate", time.perf_counter() - start)
    start = time.perf_counter()
    synthetic = synthesize(model, synthetic_rows, sample_method, seed)
    timer.add("generate", time.perf_counter() - start)
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records), timer.done(),
                           {"retired_rho": retired})
