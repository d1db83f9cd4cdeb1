"""MST and NIST-MST (McKenna, Miklau, Sheldon, "Winning the NIST Contest"; "the MST paper").

MST (Sec. 6, Appendix A): measure every 1-way marginal with a third of the budget (Alg. 1),
select a spanning tree of attribute pairs privately with another third (Alg. 6: Kruskal where
each edge is chosen by the exponential mechanism on q_ij = ||M_ij(D) − M̄_ij||₁, M̄ the
estimate from the 1-way measurements, ε = √(8ρ'/(r−1)) per step), measure the chosen pairs
with the last third, estimate with Private-PGM and generate (Alg. 7-8 via the model's sampler).

NIST-MST (Alg. 2): the pairs (and tree-shaped triples) are chosen from a *public* dataset the
caller supplies (Alg. 5: the mutual-information maximum spanning tree plus triples), spending no
budget on selection; with ``calibration="nist"`` both measurement rounds use the closed-form σ of
Eq. (5.1), which makes the two rounds exactly (ε, δ)-DP by the classic RDP conversion
(proofs/nist_mst_calibration.py).

Options for both: the 3σ domain compression (Alg. 4) with its reverse transform (Sec. 5 step 8:
merged values are spread uniformly over the original values they stand for), and required pairs
(C in Alg. 6) that are always measured and around which the tree is built.

Budget: each stage's share is an exact rational taken from the filter; within a stage every
measurement or selection is calibrated to an exact share of what the stage has left. Under
``calibration="zcdp"`` the calibration residue is retired at the end so the ledger's exact total
equals the budget (proofs/mst_budget.py); under ``"nist"`` the spend is 1/σ² (Eq. 5.1 is looser
than the filter's CKS-derived budget) and nothing is retired.
"""
from __future__ import annotations

import itertools
import math
import numbers
import time
from fractions import Fraction

import numpy as np

from dpcore.accounting import GaussianEvent, ZCDPAccountant
from dpcore.accounting.calibration import exponential_epsilon, gaussian_sigma, nist_mst_sigma
from dpcore.errors import InvalidArgumentError, TableTooLargeError
from dpcore.inference import Measurement, estimate, independent_model

from .result import MechanismResult, RoundRecord, Timer, check_output, synthesize

_COST = ZCDPAccountant()
_MAX_CELLS = 10 ** 6          # Alg. 5 step 5
_TRIPLE_THRESHOLD = 0.1       # Alg. 5 step 4 (on normalised marginals)


def _weight(clique, value) -> float:
    """A measurement weight (NIST-MST Alg. 1): a finite number > 0, checked before any charge
    (audit 15: NaN, inf or 0 failed after the 1-way batch was charged, a negative was squared)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not (math.isfinite(value) and value > 0):
        raise InvalidArgumentError(f"weights[{clique!r}] must be a finite number > 0, got {value!r}")
    return float(value)


def mst(curator, *, public=None, required_pairs=(), compress: bool = True, calibration: str = "zcdp",
        epsilon=None, delta=None, weights=None, synthetic_rows: int | None = None,
        sample_method: str = "round", seed=None, callback=None, estimate_options=None,
        discrete: bool | None = None, zeros=()) -> MechanismResult:
    """Run MST (``public=None``) or NIST-MST (``public`` = a public Dataset on the same domain).

    ``required_pairs``: attribute pairs always measured (Alg. 6's C). ``compress`` (default on,
    as in the published MST, which keeps every NIST-MST step but the census transforms and the
    public-data selection): the 3σ domain compression of Alg. 4 from the noisy 1-way marginals. ``calibration``: "zcdp" (split the filter's remaining ρ) or "nist"
    (Eq. 5.1 from ``epsilon``/``delta``, defaulting to the filter's; NIST-MST mode only).
    ``weights``: {clique: weight} for NIST-MST's weighted measurement (Alg. 1, Alg. 5 step 6).
    ``discrete`` goes to :meth:`Curator.measure` (None: exact discrete Gaussian for counts).
    ``zeros``: public structural zeros (:class:`dpcore.inference.StructuralZero`): the model is
    fit with zero mass on them, each zero's attributes joining the measured tree as an extra,
    unmeasured clique (public information: free). Under compression a merged cell is kept at
    zero only when every cell it merges is forbidden (:func:`compress_zeros`); the reverse
    transform can then put a row in a forbidden cell, which the caller's rejection removes.
    """
    timer = Timer()
    domain = curator.domain
    check_output(domain, synthetic_rows, sample_method, seed)
    if calibration not in ("zcdp", "nist"):
        raise InvalidArgumentError(f"calibration must be 'zcdp' or 'nist', got {calibration!r}")
    if calibration == "nist" and public is None:
        raise InvalidArgumentError("calibration='nist' needs a public dataset (NIST-MST mode)")
    if public is not None and public.domain != domain:
        raise InvalidArgumentError("public dataset must share the curator's domain")
    required = _pairs(domain, required_pairs)
    rho = Fraction(curator.privacy_filter.remaining)
    if rho <= 0:
        raise InvalidArgumentError(f"the privacy filter has no budget left, remaining = {rho}")
    options = dict(estimate_options or {})
    weights = {tuple(domain.canonical(k)): _weight(k, v) for k, v in (weights or {}).items()}
    records: list[RoundRecord] = []

    def log(kind, clique, sigma, eps, cands, spent, start):
        record = RoundRecord(len(records), kind, clique, sigma, eps, None if eps is None else 1.0, cands,
                             Fraction(spent), time.perf_counter() - start)
        records.append(record)
        if callback is not None:
            callback(record)

    # How the budget is split: (1-way, selection, measurement).
    d = len(domain)
    components = _component_count(domain.attrs, required)
    steps = components - 1 if public is None else 0
    if calibration == "nist":
        sigma = nist_mst_sigma(*_eps_delta(curator, epsilon, delta))
        stage = Fraction(_COST.rho(GaussianEvent(sigma, 1)))
        if 2 * stage > rho:
            raise InvalidArgumentError(f"Eq. 5.1 needs rho = {float(2 * stage)} but the filter has {float(rho)}")
        shares = (stage, Fraction(0), stage)
    elif d == 1:
        shares = (rho, Fraction(0), Fraction(0))       # no pairs exist: all budget to the 1-way
    elif steps == 0:
        shares = (rho / 3, Fraction(0), rho - rho / 3)  # nothing to select: selection's third measures
    else:
        shares = (rho / 3, rho / 3, rho - 2 * (rho / 3))

    oneway = [(a,) for a in domain.attrs]
    start = time.perf_counter()
    ones = _measure_batch(curator, oneway, shares[0], {}, log, discrete)
    timer.add("measure", time.perf_counter() - start)

    view, mapping = curator, None
    if compress:
        mapping = _compression(domain, ones)
        view = curator.compress(mapping)
        ones = [_aggregate(m, mapping.get(m.attrs[0])) for m in ones]

    start = time.perf_counter()
    if public is not None:
        cliques = _public_selection(public, required)
        cliques = [c for c in cliques if view.domain.size(c) < _MAX_CELLS or c in required]  # Alg. 5 step 5
    else:
        cliques = list(required) + _private_kruskal(view, ones, required, shares[1], log)
    timer.add("select", time.perf_counter() - start)

    start = time.perf_counter()
    target = rho if calibration == "zcdp" else shares[0] + shares[2]
    budget = target - Fraction(rho - curator.privacy_filter.remaining)
    pairs = _measure_batch(view, cliques, budget, weights, log, discrete) if cliques else []
    timer.add("measure", time.perf_counter() - start)
    retired = curator.retire("MST calibration residue") if calibration == "zcdp" else Fraction(0)

    if zeros:
        options["zeros"] = compress_zeros(zeros, mapping or {})
    start = time.perf_counter()
    try:
        model = estimate(view.domain, ones + pairs, **options).model
    except TableTooLargeError:
        if not options.get("zeros"):
            raise
        # a rule's clique joined to the data-chosen tree can triangulate past the cell cap,
        # which the plan cannot know before the charges: fit the same measurements without
        # the zeros (post-processing); the synthesizer's sampler then keeps the rules
        # (rejection, or the exact conditioned draw)
        options = {k: v for k, v in options.items() if k != "zeros"}
        model = estimate(view.domain, ones + pairs, **options).model
    timer.add("estimate", time.perf_counter() - start)
    start = time.perf_counter()
    synthetic = synthesize(model, synthetic_rows, sample_method, seed)
    if mapping is not None:
        synthetic = decompress(synthetic, domain, mapping, seed)
    timer.add("generate", time.perf_counter() - start)
    return MechanismResult(synthetic, model, curator.privacy_filter.ledger, tuple(records), timer.done(),
                           {"cliques": tuple(cliques), "compression": mapping, "retired_rho": retired})


def _pairs(domain, pairs):
    out = []
    for i, p in enumerate(pairs):
        p = tuple(p)
        if len(p) != 2 or len(set(p)) != 2 or any(a not in domain for a in p):
            raise InvalidArgumentError(f"required_pairs[{i}] must be two distinct domain attributes, got {p!r}")
        c = tuple(domain.canonical(p))
        if c not in out:
            out.append(c)
    return out


def _eps_delta(curator, epsilon, delta):
    epsilon = getattr(curator.privacy_filter, "epsilon", None) if epsilon is None else epsilon
    delta = getattr(curator.privacy_filter, "delta", None) if delta is None else delta
    if epsilon is None or delta is None:
        raise InvalidArgumentError("calibration='nist' needs epsilon and delta (pass them or use "
                                   "PrivacyFilter.from_approx_dp)")
    return epsilon, delta


def _measure_batch(curator, cliques, budget: Fraction, weights, log, discrete):
    """Alg. 1: measure ``cliques`` spending ``budget`` in total, marginal i getting a share ∝ w_i²
    (the normalised weights of Alg. 1 make the batch's L2 sensitivity 1). Each measurement is
    calibrated to its exact share of what the batch has left, so the shares sum to ``budget``."""
    w2 = [weights.get(c, 1.0) ** 2 for c in cliques]
    end = Fraction(curator.privacy_filter.spent) + budget
    out = []
    for i, clique in enumerate(cliques):
        start = time.perf_counter()
        left = end - Fraction(curator.privacy_filter.spent)
        share = left * Fraction(w2[i]) / Fraction(sum(w2[i:]))
        sigma = gaussian_sigma(share)
        before = curator.privacy_filter.spent
        y = curator.measure(clique, sigma, discrete=discrete)
        out.append(Measurement(clique, y, sigma))
        log("measure", clique, sigma, None, 0, curator.privacy_filter.spent - before, start)
    return out


def _component_count(attrs, pairs):
    parent = {a: a for a in attrs}
    for a, b in pairs:
        _union(parent, a, b)
    return len({_find(parent, a) for a in attrs})


def _find(parent, a):
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


def _union(parent, a, b) -> bool:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra == rb:
        return False
    parent[ra] = rb
    return True


def _private_kruskal(curator, ones, required, budget: Fraction, log):
    """Alg. 6: r−1 exponential-mechanism steps, each at ε = √(8ρ'/(r−1)), joining components."""
    domain = curator.domain
    parent = {a: a for a in domain.attrs}
    for a, b in required:
        _union(parent, a, b)
    steps = len({_find(parent, a) for a in domain.attrs}) - 1
    if steps == 0:
        return []
    estimate_model = independent_model(domain, ones)   # Alg. 6 step 1 (footnote 7)
    everything = list(itertools.combinations(domain.attrs, 2))
    # one flat reference array; a step passes the cells of its pool's pairs (Curator.select).
    # project_values: project_many's numbers without a Factor and sub-domain per pair
    flat = np.concatenate(estimate_model.project_values(everything))
    # The pool of a step is every pair joining two components, in the order of `everything`:
    # found from one component label per attribute with array arithmetic (a Python test of
    # every pair at every step made the selection O(d^3) in the interpreter).
    position = {a: i for i, a in enumerate(domain.attrs)}
    first = np.array([position[a] for a, _ in everything], dtype=np.int64)
    second = np.array([position[b] for _, b in everything], dtype=np.int64)
    end = Fraction(curator.privacy_filter.spent) + budget
    chosen = []
    for k in range(steps):
        start = time.perf_counter()
        left = end - Fraction(curator.privacy_filter.spent)
        epsilon = exponential_epsilon(left / (steps - k))
        label = np.array([position[_find(parent, a)] for a in domain.attrs], dtype=np.int64)
        joins = label[first] != label[second]
        before = curator.privacy_filter.spent
        # the pool is `everything` cut to the joining pairs: the curator checks the fixed
        # list and reads its cells once, a step is array work on the pool (Curator.select);
        # after the first step reference=None says "the same flat reference" (the curator's
        # copy), which spares comparing the whole reference again at every step
        pair = everything[curator.select(everything, flat if k == 0 else None, epsilon, among=joins)]
        _union(parent, *pair)
        chosen.append(pair)
        log("select", pair, None, epsilon, int(joins.sum()), curator.privacy_filter.spent - before, start)
    return chosen


def _mutual_information(joint: np.ndarray) -> float:
    p = joint / max(joint.sum(), 1e-300)
    outer = p.sum(axis=1, keepdims=True) * p.sum(axis=0, keepdims=True)
    mask = p > 0
    return float((p[mask] * np.log(p[mask] / outer[mask])).sum())


def _public_selection(public, required):
    """Alg. 5 on public data: MI maximum spanning tree (with the required pairs forced in, the
    paper's "+100" on their edge weights), then tree-shaped triples (steps 3-4)."""
    domain = public.domain
    everything = list(itertools.combinations(domain.attrs, 2))
    joints = dict(zip(everything, (f.values for f in public.marginals(everything)))) if everything else {}
    mi = {p: _mutual_information(joints[p]) for p in everything}
    parent = {a: a for a in domain.attrs}
    tree = []
    for p in list(required) + sorted(everything, key=lambda p: -mi[p]):
        if _union(parent, *p):
            tree.append(p)
    cliques = list(dict.fromkeys(list(required) + tree))
    neighbours = {a: set() for a in domain.attrs}
    for a, b in tree:
        neighbours[a].add(b)
        neighbours[b].add(a)
    for i in domain.attrs:
        nbrs = sorted(neighbours[i], key=domain.attrs.index)
        edges = []
        for j, k in itertools.combinations(nbrs, 2):
            triple = tuple(domain.canonical((i, j, k)))
            if domain.size(triple) >= _MAX_CELLS:
                continue
            error = _triple_error(public, i, j, k)
            if error >= _TRIPLE_THRESHOLD:
                edges.append((error, (j, k), triple))
        sub = {a: a for a in nbrs}
        for error, (j, k), triple in sorted(edges, key=lambda e: -e[0]):
            if _union(sub, j, k):
                for c in (tuple(domain.canonical((j, k))), triple):
                    if c not in cliques:
                        cliques.append(c)
    return cliques


def _triple_error(public, i, j, k) -> float:
    """Alg. 5 step 3: ||M_ijk − M̃_ijk||₁ (normalised), M̃ the PGM estimate from M_ij and M_ik,
    which on this tree is M_ij M_ik / M_i."""
    (f,) = public.marginals([(i, j, k)])
    order = [f.attributes.index(a) for a in (i, j, k)]
    p = np.transpose(f.values, order)
    p = p / max(p.sum(), 1e-300)
    pij, pik, pi = p.sum(axis=2), p.sum(axis=1), p.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(pi[:, None, None] > 0, pij[:, :, None] * pik[:, None, :] / pi[:, None, None], 0.0)
    return float(np.abs(p - est).sum())


def _compression(domain, ones):
    """Alg. 4: keep the values whose noisy count is >= 3σ, merge the rest into one value ∅."""
    mapping = {}
    for m in ones:
        (attr,) = m.attrs
        keep = m.noisy >= 3 * m.sigma
        if keep.all():
            continue
        codes = np.empty(m.noisy.size, dtype=np.int64)
        codes[keep] = np.arange(int(keep.sum()))
        codes[~keep] = int(keep.sum())
        mapping[attr] = codes
    return mapping


def _aggregate(measurement, codes):
    """Re-express a 1-way measurement over the compressed domain (Sec. 5 step 7): group sums with
    per-cell variance |g| σ², scaled by 1/√|g| so every cell has noise σ (an exact reweighting)."""
    if codes is None:
        return measurement
    groups = int(codes.max()) + 1
    sums = np.zeros(groups)
    np.add.at(sums, codes, measurement.noisy)
    counts = np.bincount(codes, minlength=groups).astype(np.float64)
    scale = 1 / np.sqrt(counts)
    return Measurement(measurement.attrs, sums * scale, measurement.sigma, query=np.diag(scale))


def compress_zeros(zeros, mapping):
    """Structural zeros on the compressed domain (Alg. 4's ``mapping``): a merged cell is
    forbidden when every original cell it stands for is; zeros left with no cell are dropped."""
    from dpcore.inference import StructuralZero

    out = []
    for z in zeros:
        mask = z.mask
        for axis, attr in enumerate(z.attrs):
            codes = mapping.get(attr)
            if codes is None:
                continue
            groups = [np.flatnonzero(codes == g) for g in range(int(codes.max()) + 1)]
            mask = np.stack([mask.take(g, axis=axis).all(axis=axis) for g in groups], axis=axis)
        if mask.any():
            out.append(StructuralZero(z.attrs, mask))
    return out


def decompress(synthetic, domain, mapping, seed):
    """Reverse Alg. 4: kept codes map back; ∅ is spread uniformly over the values it merged."""
    from dpcore.accounting.noise import make_rng
    from dpcore.dataset import Dataset
    from dpcore.schema import code_dtype

    rng = make_rng(None if seed is None else int(seed) + 1)
    # the full domain's compact dtype (its sizes bound the compressed ones): no int64 copy
    records = np.array(synthetic.records, dtype=code_dtype(domain.shape), copy=True)
    for attr, codes in mapping.items():
        col = domain.attrs.index(attr)
        records[:, col] = decompress_column(records[:, col], codes, rng)
    return Dataset(records, domain)


def decompress_column(column, codes, rng):
    """One column of compressed codes back to original ones (``codes``: Alg. 4's map of each
    original code): kept codes map back, ∅ (the last code) uniformly over the values it merged."""
    other_code = int(codes.max())               # _compression puts ∅ last
    kept = np.flatnonzero(codes < other_code)
    merged = np.flatnonzero(codes == other_code)
    is_other = column == other_code
    out = np.empty_like(column)
    out[~is_other] = kept[column[~is_other]]
    out[is_other] = merged[rng.integers(0, merged.size, int(is_other.sum()))]
    return out
