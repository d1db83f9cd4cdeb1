"""AIM's uncertainty quantification formulas (AIM paper Sec. 5) against hand computations."""
import math

import numpy as np
import pytest

from dpcore import Dataset, Domain
from dpcore.errors import InvalidArgumentError
from dpcore.inference import Measurement
from mechanisms.aim_bounds import RoundSummary, confidence_bounds


def setup():
    domain = Domain(("a", "b", "c"), (2, 3, 2))
    synthetic = Dataset(np.array([[0, 0, 0], [1, 2, 1], [1, 1, 0], [0, 2, 1]]), domain)
    return domain, synthetic


def test_supported_bound_is_corollary_1_with_the_inverse_variance_estimator():
    domain, synthetic = setup()
    y_ab = np.array([1.0, 0.5, 2.0, -1.0, 3.0, 0.0])          # (a, b), sigma 2
    y_a = np.array([2.0, 1.0])                                 # (a,), sigma 1
    ms = [Measurement(("a",), y_a, 1.0), Measurement(("a", "b"), y_ab, 2.0)]
    out = confidence_bounds(domain, [("a",), ("a", "b")], {("a",): 1.0, ("a", "b"): 2.0}, ms, [], {},
                            synthetic, 0.95)
    # Theorem 2: the (a,b) estimate of the a-marginal sums 3 cells: variance 3 * 4 = 12.
    from_ab = y_ab.reshape(2, 3).sum(axis=1)
    var = 1 / (1 / 1.0 + 1 / 12.0)
    est = var * (y_a / 1.0 + from_ab / 12.0)
    lam = math.sqrt(math.log(20))
    synth_a = np.array([2.0, 2.0])
    expected = np.abs(synth_a - est).sum() + math.sqrt(2 * math.log(2)) * math.sqrt(var) * 2 \
        + lam * math.sqrt(var) * math.sqrt(4)
    assert out[("a",)].supported and out[("a",)].bound == pytest.approx(expected, rel=1e-12)
    synth_ab = np.array([1.0, 0, 1, 0, 1, 1])
    expected_ab = np.abs(synth_ab - y_ab).sum() + math.sqrt(2 * math.log(2)) * 2 * 6 + lam * 2 * math.sqrt(12)
    assert out[("a", "b")].bound == pytest.approx(expected_ab, rel=1e-12)


def test_unsupported_bound_is_corollary_2_at_the_last_round_with_r_as_candidate():
    domain, synthetic = setup()
    ms = [Measurement(("a",), np.array([2.0, 2.0]), 1.0)]
    summary = RoundSummary(clique=("a",), sigma=1.5, epsilon=0.4, sensitivity=3.0, candidates=5, weight=2.0,
                           observed_error=0.7)
    ref = np.full(6, 4 / 6)
    out = confidence_bounds(domain, [("a",), ("b", "c")], {("a",): 2.0, ("b", "c"): 3.0}, ms, [summary],
                            {("b", "c"): (0, ref)}, synthetic, 0.95)
    lam1, lam2 = math.sqrt(2 * math.log(40)), math.log(40)
    em = 2 * 3.0 / 0.4
    b_r = 2.0 * 0.7 + math.sqrt(2 / math.pi) * 1.5 * (3.0 * 6 - 2.0 * 2) + em * math.log(5)
    model = (b_r + 2.0 * lam1 * 1.5 * math.sqrt(2) + lam2 * em) / 3.0
    synth_bc = np.array([1.0, 0, 1, 0, 0, 2])
    b = out[("b", "c")]
    assert not b.supported and b.round == 0
    assert b.bound == pytest.approx(np.abs(synth_bc - ref).sum() + model, rel=1e-12)
    # e^{-λ1²/2} + e^{-λ2} = 5 %: the stated confidence.
    assert math.exp(-lam1 ** 2 / 2) + math.exp(-lam2) == pytest.approx(0.05)


def test_never_a_candidate_means_no_bound_and_bad_level_is_an_error():
    domain, synthetic = setup()
    out = confidence_bounds(domain, [("b",)], {("b",): 1.0}, [], [], {}, synthetic, 0.9)
    assert math.isinf(out[("b",)].bound)
    with pytest.raises(InvalidArgumentError):
        confidence_bounds(domain, [("b",)], {("b",): 1.0}, [], [], {}, synthetic, 1.0)


def test_rule_cliques_that_do_not_fit_the_first_round_are_refused_before_any_charge():
    from fractions import Fraction

    from dpcore import Curator
    from dpcore.accounting import PrivacyFilter
    from dpcore.inference.zeros import StructuralZero
    from mechanisms.aim import aim, first_round_pool
    from mechanisms.workload import downward_closure

    domain = Domain(("a", "b", "c"), (60, 60, 2))
    work = [("a", "c"), ("b", "c")]
    rho, T = Fraction(1, 2), 48
    candidates = downward_closure(work)
    # a cap under which the plain first round has candidates but the a x b rule clique cannot
    # fit: the run must refuse it before measuring anything
    cap = next(c for c in np.geomspace(1e-4, 10, 400)
               if first_round_pool(domain, candidates, rho, T, Fraction(9, 10), c)
               and not first_round_pool(domain, candidates, rho, T, Fraction(9, 10), c,
                                        fixed=[("a", "b")]))
    mask = np.zeros((60, 60), dtype=bool)
    mask[0, 1] = True
    filt = PrivacyFilter(rho)
    records = np.random.default_rng(0).integers(0, 2, (50, 3))
    with pytest.raises(InvalidArgumentError, match="rule cliques"):
        aim(Curator(Dataset(records, domain), filt, seed=0), work, max_model_size=float(cap),
            rounds=T, zeros=[StructuralZero(("a", "b"), mask)])
    assert filt.spent == 0


def test_the_one_vector_projection_releases_what_the_concatenation_did(monkeypatch):
    # review 15c: AIM's full-pool rounds read every candidate's reference from one compiled
    # vector (GraphicalModel.project_flat); the same run with the vector built by
    # concatenating project_values must charge, select and sample exactly the same
    from dpcore import Curator
    from dpcore.accounting import PrivacyFilter
    from dpcore.inference.model import GraphicalModel
    from mechanisms.aim import aim
    domain = Domain(("a", "b", "c", "d", "e"), (3, 2, 4, 2, 3))
    records = np.random.default_rng(1).integers(0, 2, (400, 5))

    def run():
        f = PrivacyFilter(0.5)
        result = aim(Curator(Dataset(records, domain), f, seed=7), "all-2way", rounds=8, seed=3)
        return f.ledger.to_text(), np.asarray(result.synthetic.records).tobytes()

    calls = []
    real = GraphicalModel.project_flat

    def counted(self, attrs_list, *, by_source=False):
        calls.append(1)
        return real(self, attrs_list, by_source=by_source)
    monkeypatch.setattr(GraphicalModel, "project_flat", counted)
    flat_run = run()
    assert calls                               # the run took the one-vector path

    def concatenated(self, attrs_list, *, by_source=False):
        values = self.project_values(attrs_list, by_source=by_source)
        starts = np.cumsum([0] + [v.size for v in values[:-1]])
        return np.concatenate(values), starts
    monkeypatch.setattr(GraphicalModel, "project_flat", concatenated)
    assert run() == flat_run
