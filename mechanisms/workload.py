"""Workloads of weighted marginal queries for the mechanisms (AIM paper, Sec. 2.1 and 4).

A workload is a list of attribute subsets r_i with weights c_i >= 0. Everything here is a
function of public information only (the domain and the workload). Named workloads
("all-3way") and the workload-error metric live in :mod:`dpcore.evaluation`.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from dpcore.errors import DpcoreTypeError, InvalidArgumentError
from dpcore.evaluation import parse_workload

Clique = tuple[str, ...]
Workload = tuple[tuple[Clique, float], ...]


def _canonical(domain, attrs, field: str) -> Clique:
    if isinstance(attrs, str):
        raise DpcoreTypeError(f"{field} must be a sequence of attribute names, got the string {attrs!r}")
    try:
        names = tuple(attrs)
    except TypeError:
        raise DpcoreTypeError(f"{field} must be a sequence of attribute names, got {attrs!r}") from None
    if not names:
        raise InvalidArgumentError(f"{field} must name at least one attribute, got ()")
    unknown = [a for a in names if a not in domain]
    if unknown:
        raise InvalidArgumentError(f"{field} names attributes not in the domain: {unknown!r}")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"{field} repeats an attribute: {names!r}")
    return tuple(domain.canonical(names))


def make_workload(domain, workload: Iterable) -> Workload:
    """Validate a workload: a named spec ("all-3way", see ``dpcore.evaluation.parse_workload``)
    or items that are attribute tuples or ``(attrs, weight)`` pairs.

    Returns a tuple of ``(clique, weight)`` with cliques in domain order. Unknown attributes,
    repeated marginals and negative or non-finite weights raise :class:`InvalidArgumentError`
    naming the item.
    """
    if isinstance(workload, str):
        workload = parse_workload(workload, list(domain.attrs))
    merged: dict[Clique, float] = {}
    for i, item in enumerate(workload):
        if (isinstance(item, tuple) and len(item) == 2 and not isinstance(item[0], str)
                and isinstance(item[1], (int, float)) and not isinstance(item[1], bool)):
            attrs, weight = item
        else:
            attrs, weight = item, 1.0
        clique = _canonical(domain, attrs, f"workload[{i}]")
        weight = float(weight)
        if not math.isfinite(weight) or weight < 0:
            raise InvalidArgumentError(f"workload[{i}] weight must be finite and >= 0, got {weight}")
        if clique in merged:
            raise InvalidArgumentError(f"workload[{i}]: marginal {list(clique)} appears twice")
        merged[clique] = weight
    if merged and max(merged.values()) == 0:
        raise InvalidArgumentError("workload weights must not all be 0 (the exponential "
                                   "mechanism's sensitivity is the largest weight)")
    return tuple(merged.items())


def downward_closure(cliques: Iterable[Clique]) -> tuple[Clique, ...]:
    """W_+ = {r : r ⊆ s for some s in W}, non-empty subsets, smallest first (AIM Sec. 4)."""
    closure: set[Clique] = set()
    for clique in cliques:
        for size in range(1, len(clique) + 1):
            closure.update(itertools.combinations(clique, size))
    return tuple(sorted(closure, key=lambda c: (len(c), c)))


def candidate_weights(candidates: Sequence[Clique], workload: Workload) -> np.ndarray:
    """AIM's relevance weights w_r = Σ_s c_s |r ∩ s| (AIM Sec. 4, "Better Selection Criteria")."""
    # Only the workload marginals that share an attribute with r add a non-zero term, so each
    # candidate sums over those (found through an index by attribute), in workload order: the
    # same floating-point sum as over the whole workload (x + 0.0 == x), without the
    # |candidates| x |workload| loop (25 million terms at 100 attributes).
    exact = _integer_weights(candidates, workload)
    if exact is not None:
        return exact
    sets = [(frozenset(s), c) for s, c in workload]
    touching: dict[str, list[int]] = {}
    for i, (s, _) in enumerate(sets):
        for a in s:
            touching.setdefault(a, []).append(i)
    out = []
    for r in candidates:
        r = frozenset(r)
        near = sorted({i for a in r for i in touching.get(a, ())})
        out.append(sum(sets[i][1] * len(r & sets[i][0]) for i in near))
    return np.array(out, dtype=np.float64)


def _integer_weights(candidates: Sequence[Clique], workload: Workload) -> np.ndarray | None:
    """candidate_weights' numbers in O(|candidates| + |workload|) when every c_s is an integer
    (the all-k-way workloads: c_s = 1): w_r = Σ_{a in r} Σ_{s ∋ a} c_s, since |r ∩ s| counts
    the attributes of r in s. Every term and partial sum is then an integer below 2^53, so
    any order of addition gives the same float as the ordered sum (the loop's ~200 terms a
    candidate were quadratic in the attribute count: 1M terms at 100 attributes). None when
    that is not provable (a fractional, non-finite or large weight): the caller sums in order."""
    weights = [c for _, c in workload]
    if not all(isinstance(c, (int, float)) and math.isfinite(c) and c >= 0 and c == int(c)
               for c in weights):
        return None
    per_attr: dict = {}
    for s, c in workload:
        for a in set(s):
            per_attr[a] = per_attr.get(a, 0) + int(c)
    out = [sum(per_attr.get(a, 0) for a in set(r)) for r in candidates]
    if max(out, default=0) >= 2 ** 53 or sum(int(c) * len(set(s)) for s, c in workload) >= 2 ** 53:
        return None
    return np.array(out, dtype=np.float64)


def normalise_weights(workload: Workload) -> Workload:
    """The workload with its weights divided by the largest (which becomes 1).

    Exact to drop: the exponential mechanism uses only w_r / max w_r (its score is w_r(...) and
    its sensitivity max w_r, see ``Curator.select``), AIM's w_r are linear in the c_s, and AIM's
    bounds (Sec. 5) are ratios of them; without it weights like 1e308 sum to inf. A workload
    whose largest weight is already 1 is returned unchanged.
    """
    top = max((c for _, c in workload), default=0.0)
    if top in (0.0, 1.0):
        return workload
    return tuple((clique, c / top) for clique, c in workload)
