"""AIM's uncertainty quantification (AIM paper Sec. 5 and Appendix B), computed without data.

Every quantity here is a function of AIM's private outputs (noisy marginals, selected cliques,
the iterates' marginals, σ_t, ε_t) and the synthetic data, so no budget is spent.

* Supported marginals (r ⊆ some measured r_i): Theorem 2's inverse-variance weighted estimator
  ȳ_r with per-cell variance σ̄_r² = [Σ_{i: r ⊆ r_i} n_r / (n_{r_i} σ_i²)]⁻¹, Theorem 3's tail
  bound and Corollary 1: ||M_r(D) − M_r(D̂)||₁ ≤ ||M_r(D̂) − ȳ_r||₁ + √(2 log 2) σ̄_r n_r +
  λ σ̄_r √(2 n_r) with probability ≥ 1 − exp(−λ²).
* Unsupported marginals: Theorem 4 and Corollary 2 at the last round t whose candidate set held
  r (Sec. 5, "Putting it together"), with probability ≥ 1 − exp(−λ₁²/2) − exp(−λ₂).

Erratum we follow: the proof of Theorem 4 multiplies Theorem 6's term λ₁σ_t√n_{r_t} by w_{r_t}
(it bounds E_{r_t}, which enters the score multiplied by w_{r_t}); the printed statement drops
that factor, which is only valid when w_{r_t} <= 1. We use the proof's form.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore.errors import InvalidArgumentError

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


@dataclass(frozen=True)
class RoundSummary:
    """What Theorem 4 needs from round t (all private outputs of AIM)."""

    clique: tuple[str, ...]
    sigma: float
    epsilon: float
    sensitivity: float       # Δ_t = max_{r in C_t} w_r
    candidates: int          # |C_t|
    weight: float            # w_{r_t}
    observed_error: float    # ||M_{r_t}(p̂_{t-1}) − ỹ_t||₁


@dataclass(frozen=True)
class ConfidenceBound:
    """A one-sided bound on ||M_r(D) − M_r(D̂)||₁ in counts, holding with probability ``level``.

    ``supported``: Corollary 1 was used (else Corollary 2 at round ``round``). ``bound`` is
    ``inf`` when no valid bound exists (r never a candidate, or w_r = 0).
    """

    clique: tuple[str, ...]
    supported: bool
    bound: float
    level: float
    round: int | None


def _marginals(synthetic, domain, cliques: list) -> dict:
    """The synthetic table's marginals on ``cliques``, counted in batches within the cell cap
    (one batch of every candidate could exceed it, after the whole budget was spent)."""
    from .plan import cell_cap
    cap, out, batch, cells = cell_cap(), {}, [], 0
    for r in cliques + [None]:
        n = 0 if r is None else domain.size(r)
        if batch and (r is None or cells + n > cap):
            out.update(zip(batch, (f.datavector() for f in synthetic.marginals(batch))))
            batch, cells = [], 0
        if r is not None:
            batch.append(r)
            cells += n
    return out


def confidence_bounds(domain, candidates, weights, measurements, summaries, last_reference,
                      synthetic, level: float) -> dict:
    """Bounds for every marginal in ``candidates`` (the downward closure of the workload)."""
    if not 0 < level < 1:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {level}")
    fail = 1 - level
    lam = math.sqrt(math.log(1 / fail))                  # exp(-λ²) = fail
    lam1 = math.sqrt(2 * math.log(2 / fail))             # exp(-λ₁²/2) = fail / 2
    lam2 = math.log(2 / fail)                            # exp(-λ₂) = fail / 2
    synth = _marginals(synthetic, domain, list(candidates))
    holding = _holding(measurements)
    out = {}
    for r in candidates:
        n_r = domain.size(r)
        est, var = _weighted_average(domain, r, n_r, holding(r))
        if est is not None:
            sbar = math.sqrt(var)
            bound = (float(np.abs(synth[r] - est).sum()) + math.sqrt(2 * math.log(2)) * sbar * n_r
                     + lam * sbar * math.sqrt(2 * n_r))
            out[r] = ConfidenceBound(r, True, bound, level, None)
            continue
        w_r = float(weights[r])
        if r not in last_reference or w_r <= 0:
            out[r] = ConfidenceBound(r, False, math.inf, level, None)
            continue
        t, reference = last_reference[r]
        s = summaries[t]
        n_t = domain.size(s.clique)
        em = 2 * s.sensitivity / s.epsilon
        b_r = (s.weight * s.observed_error + _SQRT_2_OVER_PI * s.sigma * (w_r * n_r - s.weight * n_t)
               + em * math.log(s.candidates))
        model_bound = (b_r + s.weight * lam1 * s.sigma * math.sqrt(n_t) + lam2 * em) / w_r
        bound = float(np.abs(synth[r] - reference).sum()) + max(model_bound, 0.0)
        out[r] = ConfidenceBound(r, False, bound, level, t)
    return out


def _holding(measurements):
    """``holding(r)``: the measurements whose attributes contain r (all of them for r = ()),
    in their order: what _weighted_average reads of the list. Found through an index by
    attribute, not by testing every measurement for every candidate (~5,000 x ~200 set tests
    at 100 attributes)."""
    sets = [set(m.attrs) for m in measurements]
    by_attr: dict = {}
    for i, s in enumerate(sets):
        for a in s:
            by_attr.setdefault(a, []).append(i)

    def holding(r):
        if not r:
            return list(measurements)
        first = min((by_attr.get(a, ()) for a in set(r)), key=len)
        target = set(r)
        return [measurements[i] for i in first if target <= sets[i]]
    return holding


def _weighted_average(domain, r, n_r, measurements):
    """Theorem 2: ȳ_r from every measurement whose clique contains r, and its cell variance."""
    num = None
    precision = 0.0
    target = set(r)
    for m in measurements:
        if not target <= set(m.attrs) or m.query is not None:
            continue
        shape = tuple(domain.size((a,)) for a in m.attrs)
        drop = tuple(i for i, a in enumerate(m.attrs) if a not in target)
        kept = [a for a in m.attrs if a in target]
        y = np.asarray(m.noisy).reshape(shape).sum(axis=drop) if drop else np.asarray(m.noisy).reshape(shape)
        order = [kept.index(a) for a in r]
        y = np.transpose(y, order).ravel()
        variance = domain.size(m.attrs) * m.sigma ** 2 / n_r
        num = y / variance if num is None else num + y / variance
        precision += 1 / variance
    if num is None:
        return None, None
    return num / precision, 1 / precision
