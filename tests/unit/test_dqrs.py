"""DQRS: the curator's rejection step (its law, its charge, refusals before any charge), the
fresh draws, the mechanism end to end through the Synthesizer, and its round planning."""
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import PrivacyFilter, PureDPEvent, SelfComposedEvent
from dpcore.errors import InvalidArgumentError
from dpcore.evaluation import max_error
from mechanisms.dqrs import dqrs, dqrs_rounds, fresh_count, gamma_t, round_cost
from mechanisms.synthesizer import Synthesizer


def _curator(records, shape, rho=10_000.0, seed=0):
    domain = Domain(tuple(f"x{i}" for i in range(len(shape))), shape)
    return Curator(Dataset(np.asarray(records, dtype=np.int64), domain), PrivacyFilter(rho), seed=seed)


def test_reject_queries_keeps_with_the_stated_probability_and_charges_lemma_9():
    records = [[0]] * 6 + [[1]] * 2                    # counts: cell 0 -> 6, cell 1 -> 2
    curator = _curator(records, (2,), seed=4)
    rows = np.array([[0, 0, 1], [0, 1, 1], [0, 0, -1], [0, 1, 1]])
    sat = np.array([0, 1, 1, 0])
    eta, gamma, total = 1.5, 0.25, 8.0
    n = 4000
    kept = np.zeros(4)
    for _ in range(n):
        kept += curator.reject_queries([("x0",)], rows, sat, eta, gamma, total)
    counts = np.array([6, 2, 2, 2])                    # the negation of cell 0 holds 2 records
    p = np.exp(-(eta + gamma) + eta * (counts / total - sat))
    # binomial 5-sigma band for each flag (fixed seed)
    assert np.all(np.abs(kept / n - p) <= 5 * np.sqrt(p * (1 - p) / n)), (kept / n, p)
    entry = curator.privacy_filter.ledger.entries[-1]
    assert entry.event == SelfComposedEvent(PureDPEvent(Fraction(1.5) / 8 * 4), 4)
    assert entry.what["release"] == "rejection" and entry.what["coins"] == 4


def test_reject_queries_clips_counts_above_the_public_total():
    curator = _curator([[0]] * 10, (2,), seed=1)
    # c = 10 > total = 5: the share is clipped to 1, so p = exp(-gamma) (s = 0)
    n = 3000
    kept = sum(int(curator.reject_queries([("x0",)], np.array([[0, 0, 1]]), [0], 1.0, 0.5, 5.0)[0])
               for _ in range(n))
    p = np.exp(-0.5)
    assert abs(kept / n - p) < 5 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("bad", [
    lambda c: c.reject_queries([("x0",)], np.array([[0, 0, 1]]), [2], 1.0, 0.5, 5.0),
    lambda c: c.reject_queries([("x0",)], np.array([[0, 0, 1]]), [0, 1], 1.0, 0.5, 5.0),
    lambda c: c.reject_queries([("x0",)], np.array([[0, 0, 1]]), [0], 0.0, 0.5, 5.0),
    lambda c: c.reject_queries([("x0",)], np.array([[0, 0, 1]]), [0], 1.0, -1.0, 5.0),
    lambda c: c.reject_queries([("x0",)], np.array([[0, 0, 1]]), [0], 1.0, 0.5, float("inf")),
    lambda c: c.reject_queries([("x0",)], np.array([[0, 3, 1]]), [0], 1.0, 0.5, 5.0),
    lambda c: c.select_query([("x0",)], np.array([[0, 0, 1]]), 1.0, draws=0),
])
def test_bad_input_is_refused_before_any_charge(bad):
    curator = _curator([[0], [1]], (2,))
    with pytest.raises(InvalidArgumentError):
        bad(curator)
    assert curator.privacy_filter.spent == 0 and curator.reads == 0


def test_select_query_draws_charges_each_draw():
    curator = _curator([[0]] * 5 + [[1]], (2,), seed=2)
    picks = curator.select_query([("x0",)], np.array([[0, 0, 1], [0, 1, 1]]), 50.0, draws=7)
    assert len(picks) == 7 and set(picks) == {0}           # 4 counts apart at eps 50
    assert len(curator.privacy_filter.ledger.entries) == 7 and curator.reads == 1
    # draws the budget cannot pay for are refused as a whole, before any charge
    small = _curator([[0], [1]], (2,), rho=1.0)
    with pytest.raises(Exception, match="budget"):
        small.select_query([("x0",)], np.array([[0, 0, 1]]), 1.0, draws=20)   # 20/8 > 1
    assert small.privacy_filter.spent == 0 and small.reads == 0


def test_round_planning_fits_and_is_maximal():
    for rho, eta, s, n in ((Fraction(1, 1000), 0.1, 30, 500.0), (Fraction(1, 50), 0.2, 10, 100.0)):
        T = dqrs_rounds(rho, eta, s, n)
        spent = sum((round_cost(t, eta, s, n) for t in range(1, T)), Fraction(0))
        assert spent <= rho < spent + round_cost(T, eta, s, n)
    assert gamma_t(1) == 0.5 and fresh_count(1, 0.1, 50) == 50 and fresh_count(1000, 0.1, 50) == 21


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(3, size=n)
    b = (a + (rng.random(n) < 0.2)) % 3
    return pd.DataFrame({"a": a, "b": b, "c": (b == 2).astype(int)})


SCHEMA = {"a": 3, "b": 3, "c": 2}


def test_dqrs_synthesizer_fits_samples_and_verifies(tmp_path):
    synth = Synthesizer.create("dqrs", epsilon=1.0, delta=1e-6, seed=1, progress=False,
                               workload="all-2way", samples=10, rounds=30,
                               ledger_path=tmp_path / "ledger.jsonl")
    synth.fit(_frame(), schema=SCHEMA)
    assert synth.verify(allow_fixed_seed=True).ok and synth.ledger.spent == synth.ledger.budget
    assert len(synth.sample(25, seed=0)) == 25
    assert synth.result.extras["rounds"] <= 30


def test_dqrs_learns_with_budget():
    df = _frame(3000)
    real = df.to_numpy()
    domain = Domain(("a", "b", "c"), (3, 3, 2))

    def run(rounds):
        curator = Curator(Dataset(real, domain), PrivacyFilter.from_approx_dp(20.0, 1e-6), seed=3)
        result = dqrs(curator, [("a", "b"), ("b", "c")], rounds=rounds, samples=20, total=3000.0,
                      seed=3)
        return max_error(real, result.synthetic.records, dict(SCHEMA), [["a", "b"], ["b", "c"]])

    assert run(200) < 0.5 * run(2)


@pytest.mark.parametrize("option, value", [("samples", 0), ("eta", 0.0), ("eta", 1.5),
                                           ("eta", 1e308), ("rounds", 0),
                                           ("total", -1.0), ("time_limit", float("nan"))])
def test_dqrs_plan_refuses_bad_options(option, value):
    synth = Synthesizer.create("dqrs", epsilon=1.0, progress=False, workload="all-1way",
                               **{option: value})
    with pytest.raises(InvalidArgumentError, match=option):
        synth.plan(SCHEMA)


def test_fresh_draws_never_overflow_and_a_huge_rate_is_refused_before_any_charge():
    """Audit 17 F11: eta = 1e308 passed the checks, one charge was made (the noisy total), then
    ceil(inf) raised a raw OverflowError. The rate is now capped by the plan (Alg. 4's eta is
    alpha/4 < 1/4) and by dqrs() itself, and fresh_count is s from a share of 1 on."""
    from mechanisms.dqrs import MAX_DQRS_ETA
    assert fresh_count(1, 1e308, 30) == 30 and fresh_count(7, 0.25, 30) == 30
    assert fresh_count(10 ** 6, 0.001, 30) == math.ceil((2 / (2 * (10 ** 6) ** (2 / 3)) + 0.004) * 30)
    df = _frame(200)
    curator = Curator(Dataset(df.to_numpy(), Domain(("a", "b", "c"), (3, 3, 2))),
                      PrivacyFilter.from_approx_dp(1.0, 1e-6), seed=0)
    with pytest.raises(InvalidArgumentError, match="eta"):
        dqrs(curator, [("a", "b")], eta=MAX_DQRS_ETA * 2, samples=5)
    assert curator.privacy_filter.spent == 0
