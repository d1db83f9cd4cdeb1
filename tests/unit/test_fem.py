"""FEM: the MILP oracle against brute force, the curator's query selection, the mechanism end
to end through the Synthesizer, its refusals before any charge, and the max-error metric."""
import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dpcore import Curator, Dataset, Domain
from dpcore.accounting import ExponentialEvent, PrivacyFilter, ZCDPAccountant
from dpcore.accounting.calibration import exponential_rounds
from dpcore.errors import InvalidArgumentError
from dpcore.evaluation import evaluate, max_error
from mechanisms.fem import (MAX_FEATURES, Program, Queries, _allowed_argmax, fem, milp_oracle,
                           rule_features)
from mechanisms.synthesizer import Synthesizer


# ---------------------------------------------------------------------- oracle vs brute force
@st.composite
def programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    offsets = np.concatenate([[0], np.cumsum(shape)[:-1]])
    m = draw(st.integers(0, 6))
    features, negated = [], []
    for _ in range(m):
        attrs = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=3, unique=True))
        features.append(np.array(sorted(offsets[a] + draw(st.integers(0, shape[a] - 1))
                                        for a in attrs), dtype=np.int64))
        negated.append(draw(st.booleans()))
    weights = np.array(draw(st.lists(st.integers(1, 4), min_size=m, max_size=m)), dtype=np.float64)
    sigma = np.array(draw(st.lists(st.floats(0, 5), min_size=sum(shape), max_size=sum(shape))))
    rules = []
    for _ in range(draw(st.integers(0, 3))):      # forbidden rules: {attribute: value mask}
        attrs = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=3, unique=True))
        rules.append({f"a{a}": np.array(draw(st.lists(st.booleans(), min_size=shape[a],
                                                       max_size=shape[a])), dtype=bool)
                      for a in attrs})
    domain = Domain(tuple(f"a{a}" for a in range(len(shape))), shape)
    return Program(shape, tuple(features), np.array(negated, dtype=bool), weights, sigma,
                   rule_features(domain, rules)), rules


def _allowed_records(program, rules):
    """Every record keeping the rules, by brute force over the rule masks (not the features)."""
    for r in itertools.product(*(range(k) for k in program.shape)):
        if not any(all(mask[r[int(col[1:])]] for col, mask in rule.items()) for rule in rules):
            yield np.array(r)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_milp_oracle_finds_the_exhaustive_argmax(drawn):
    """Over the records that keep the forbidden rules (audit 17 F1: the oracle ignored them,
    and a DQRS run with few rounds spent its budget on records sampling then refused)."""
    program, rules = drawn
    allowed = list(_allowed_records(program, rules))
    assume(allowed)
    kept = {tuple(r) for r in allowed}
    for r in itertools.product(*(range(k) for k in program.shape)):
        assert program.allows(np.array(r)) == (r in kept)
    best = max(program.value(r) for r in allowed)
    record = milp_oracle(5.0)(program)
    assert record.shape == (len(program.shape),)
    assert all(0 <= v < k for v, k in zip(record, program.shape))
    assert program.allows(record)
    assert program.value(record) == pytest.approx(best, abs=1e-6)
    # the fallback when HiGHS finds no point in time: the perturbation's argmax, allowed
    fallback = _allowed_argmax(program, 5.0)
    assert program.allows(fallback)
    assert -program.sigma @ _one_hot(program, fallback) == pytest.approx(
        max(-program.sigma @ _one_hot(program, r) for r in allowed), abs=1e-9)


def _one_hot(program, record):
    x = np.zeros(int(sum(program.shape)))
    x[program.offsets + np.asarray(record)] = 1.0
    return x


def test_rule_features_refuse_unknown_columns_and_bad_masks():
    domain = Domain(("a", "b"), (2, 3))
    with pytest.raises(InvalidArgumentError, match="'z' is not in the domain"):
        rule_features(domain, [{"z": np.ones(2, dtype=bool)}])
    with pytest.raises(InvalidArgumentError, match="mask of column 'b' has shape"):
        rule_features(domain, [{"b": np.ones(2, dtype=bool)}])
    # a rule with an empty mask forbids nothing: no row
    assert rule_features(domain, [{"a": np.zeros(2, dtype=bool), "b": np.ones(3, dtype=bool)}]) == ()


@pytest.mark.parametrize("name", ["fem", "sepfem", "dqrs"])
def test_record_mechanisms_keep_rules_that_leave_one_value_a_column(tmp_path, name):
    """Audit 17 F1: rules allowing one value of each of two columns, data that keeps them; with
    three rounds DQRS's few oracle records were all forbidden, the budget spent, no output.
    Every record the oracle returns now keeps the rules, so the run completes."""
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({"a": rng.integers(0, 3, n).astype(str), "b": "y",
                       "c": np.full(n, "q")})
    schema = {"format": "dpcore-schema", "version": 1, "columns": {
        "a": {"type": "categorical", "categories": ["0", "1", "2"]},
        "b": {"type": "categorical", "categories": ["x", "y", "z"]},
        "c": {"type": "categorical", "categories": ["p", "q"]}},
        "constraints": [
            {"type": "forbidden", "name": "only_y", "when": {"b": {"not_in": ["y"]}}},
            {"type": "forbidden", "name": "only_q", "when": {"c": {"not_in": ["q"]}}}]}
    synth = Synthesizer.create(name, epsilon=1.0, delta=1e-6, seed=0, progress=False,
                               workload="all-2way", rounds=3, samples=2,
                               ledger_path=tmp_path / "ledger.jsonl")
    synth.fit(df, schema=schema)
    assert synth.verify(allow_fixed_seed=True).ok
    records = synth.result.model.records
    assert (records[:, 1] == 1).all() and (records[:, 2] == 1).all()     # y, q
    out = synth.sample(50, seed=1)
    assert len(out) == 50 and set(out["b"]) == {"y"} and set(out["c"]) == {"q"}


def test_program_value_counts_queries_and_negations():
    # x0 = 1 (feature 1), x1 = 0 (feature 2): query {1, 2} holds, its negation not, {0} not
    program = Program((2, 2), (np.array([1, 2]), np.array([1, 2]), np.array([0])),
                      np.array([False, True, True]), np.array([3.0, 5.0, 7.0]),
                      np.array([0.5, 0.25, 1.0, 2.0]))
    assert program.value(np.array([1, 0])) == 3.0 + 7.0 - 0.25 - 1.0


def test_milp_oracle_refuses_a_bad_time_limit():
    with pytest.raises(InvalidArgumentError, match="time_limit"):
        milp_oracle(0)


# ---------------------------------------------------------------------- the query player
def _curator(records, shape, rho=1.0, seed=0):
    domain = Domain(tuple(f"x{i}" for i in range(len(shape))), shape)
    data = Dataset(np.asarray(records, dtype=np.int64), domain)
    return Curator(data, PrivacyFilter(rho), seed=seed)


def test_select_query_picks_the_largest_score_and_charges_sensitivity_one():
    records = [[0, 0]] * 30 + [[1, 1]] * 5
    curator = _curator(records, (2, 2), rho=10000)
    queries = Queries.of(curator.domain, [("x0", "x1")])
    # scores s (2c - n) - offset with c = (30, 0, 0, 5), n = 35: with no offsets the negations
    # of the empty cells 1 and 2 score 35, the most; offsets of 20 on every negation leave
    # them 15 and hand the selection to the positive query of cell 0 (25)
    pick = curator.select_query(queries.cliques, queries.rows, 200.0)
    assert tuple(queries.rows[pick]) in {(0, 1, -1), (0, 2, -1)}
    offsets = np.where(queries.rows[:, 2] < 0, 20.0, 0.0)
    pick = curator.select_query(queries.cliques, queries.rows, 200.0, offsets=offsets)
    assert tuple(queries.rows[pick]) == (0, 0, 1)
    entry = curator.privacy_filter.ledger.entries[-1]
    assert entry.event == ExponentialEvent(200.0, 1)
    assert entry.what == {"release": "selection", "candidates": 8, "sensitivity": 1,
                          "seed_fixed": True}    # the test curator is seeded


def test_select_query_follows_the_exponential_mechanism():
    records = [[0]] * 6 + [[1]] * 2
    curator = _curator(records, (2,), rho=1000, seed=3)
    rows = np.array([[0, 0, 1], [0, 1, 1], [0, 0, -1]])
    eps = 0.5
    scores = np.array([6 - 2, 2 - 6, 2 - 6], dtype=float)
    expected = np.exp(eps * scores / 2)
    expected /= expected.sum()
    n = 3000
    counts = np.bincount([curator.select_query([("x0",)], rows, eps) for _ in range(n)], minlength=3)
    # chi-square, 2 degrees of freedom; 13.8 is the 0.999 quantile (false failure 1e-3, seed fixed)
    chi2 = (((counts - n * expected) ** 2) / (n * expected)).sum()
    assert chi2 < 13.8, (counts, expected)


@pytest.mark.parametrize("bad", [
    lambda c: c.select_query([], np.array([[0, 0, 1]]), 1.0),
    lambda c: c.select_query([("x0",)], np.array([[0, 0, 1]]), 0.0),
    lambda c: c.select_query([("x0",)], np.array([[0, 2, 1]]), 1.0),
    lambda c: c.select_query([("x0",)], np.array([[1, 0, 1]]), 1.0),
    lambda c: c.select_query([("x0",)], np.array([[0, 0, 0]]), 1.0),
    lambda c: c.select_query([("x0",)], np.array([0, 0, 1]), 1.0),
    lambda c: c.select_query([("x0",)], np.array([[0, 0, 1]]), 1.0, offsets=[np.nan]),
    lambda c: c.select_query([("x0",)], np.array([[0, 0, 1]]), 1.0, offsets=[1.0, 2.0]),
])
def test_select_query_refuses_bad_input_before_charging(bad):
    curator = _curator([[0], [1]], (2,))
    with pytest.raises(InvalidArgumentError):
        bad(curator)
    assert curator.privacy_filter.spent == 0 and curator.reads == 0


# ---------------------------------------------------------------------- the mechanism
def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(3, size=n)
    b = (a + (rng.random(n) < 0.2)) % 3
    c = (b == 2).astype(int)
    return pd.DataFrame({"a": a, "b": b, "c": c})


SCHEMA = {"a": 3, "b": 3, "c": 2}


def test_fem_synthesizer_fits_samples_and_verifies(tmp_path):
    synth = Synthesizer.create("fem", epsilon=2.0, delta=1e-6, seed=1, progress=False,
                               workload="all-2way", rounds=12, samples=4,
                               ledger_path=tmp_path / "ledger.jsonl")
    synth.fit(_frame(), schema=SCHEMA)
    assert synth.verify(allow_fixed_seed=True).ok
    assert synth.ledger.spent == synth.ledger.budget
    sample = synth.sample(50, seed=0)
    assert list(sample.columns) == ["a", "b", "c"] and len(sample) == 50
    rounds = [r for r in synth.result.rounds if r.kind == "select"]
    assert len(rounds) == 12


@pytest.mark.parametrize("name", ["fem", "sepfem"])
def test_fem_and_sepfem_through_the_synthesizer(name):
    synth = Synthesizer.create(name, epsilon=2.0, delta=1e-6, seed=1, progress=False,
                               workload="all-2way", rounds=6, samples=3)
    synth.fit(_frame(), schema=SCHEMA)
    assert synth.verify(allow_fixed_seed=True).ok and synth.ledger.spent == synth.ledger.budget
    assert len(synth.sample(20, seed=0)) == 20


def test_sepfem_perturbation_is_laplace_on_the_features():
    from mechanisms.fem import perturb
    draws = perturb(np.random.default_rng(0), 2.0, 200_000, "separator")
    # -Lap(0, 2): mean 0, mean |.| = 2, both signs (FEM's Exp(2) is positive with mean 2)
    assert abs(draws.mean()) < 0.03 and abs(np.abs(draws).mean() - 2.0) < 0.03
    assert (draws < 0).any() and (draws > 0).any()
    exp = perturb(np.random.default_rng(0), 2.0, 200_000, "exponential")
    assert (exp >= 0).all() and abs(exp.mean() - 2.0) < 0.03


def test_fem_refuses_an_unknown_perturbation_before_any_charge():
    curator = _curator([[0, 1], [1, 0]], (2, 2))
    with pytest.raises(InvalidArgumentError, match="perturbation"):
        fem(curator, [("x0", "x1")], rounds=2, samples=2, perturbation="gumbel")
    assert curator.privacy_filter.spent == 0 and curator.reads == 0


def test_fem_beats_its_data_independent_start():
    df = _frame(2000)
    real = df.to_numpy()
    domain = Domain(("a", "b", "c"), (3, 3, 2))
    work = [("a", "b"), ("b", "c")]

    def run(rounds, epsilon):
        curator = Curator(Dataset(real, domain), PrivacyFilter.from_approx_dp(epsilon, 1e-6), seed=5)
        result = fem(curator, work, rounds=rounds, samples=8, total=2000.0, seed=5)
        return max_error(real, result.synthetic.records, dict(SCHEMA), [list(w) for w in work])

    # one round barely moves off the random start; 40 rounds at a large budget fit the data
    assert run(40, 20.0) < 0.5 * run(1, 20.0)


def test_fem_later_half_keeps_half_the_pool():
    real = _frame(300).to_numpy()
    domain = Domain(("a", "b", "c"), (3, 3, 2))
    out = {}
    for keep in ("all", "later-half"):
        curator = Curator(Dataset(real, domain), PrivacyFilter.from_approx_dp(1.0, 1e-6), seed=1)
        out[keep] = len(fem(curator, [("a", "b")], rounds=5, samples=3, keep=keep,
                            seed=1).model.records)
    assert out == {"all": 18, "later-half": 9}


@pytest.mark.parametrize("name", ["fem", "sepfem", "dqrs"])
def test_fem_refuses_a_domain_past_the_feature_cap_before_any_charge(tmp_path, name):
    wide = {f"c{i}": 100 for i in range(MAX_FEATURES // 100 + 1)}
    df = pd.DataFrame({k: [0, 1] for k in wide})
    ledger = tmp_path / "ledger.jsonl"
    synth = Synthesizer.create(name, epsilon=1.0, progress=False, workload="all-1way",
                               ledger_path=ledger)
    with pytest.raises(InvalidArgumentError, match="MAX_FEATURES"):
        synth.fit(df, schema=wide)
    assert not ledger.exists()


@pytest.mark.parametrize("option, value", [("samples", 0), ("eta", -1.0), ("keep", "first"),
                                           ("time_limit", float("inf")), ("rounds", 0),
                                           ("total", 0.0), ("total_share", 1.0)])
def test_fem_plan_refuses_bad_options(option, value):
    synth = Synthesizer.create("fem", epsilon=1.0, progress=False, workload="all-1way",
                               **{option: value})
    with pytest.raises(InvalidArgumentError, match=option):
        synth.plan(SCHEMA)


@pytest.mark.parametrize("name", ["fem", "sepfem", "dqrs"])
def test_fem_refuses_a_workload_past_the_query_cap(monkeypatch, name):
    import mechanisms.fem as fem_module
    monkeypatch.setattr(fem_module, "MAX_QUERIES", 10)
    synth = Synthesizer.create(name, epsilon=1.0, progress=False, workload="all-2way")
    with pytest.raises(InvalidArgumentError, match="MAX_QUERIES"):
        synth.plan(SCHEMA)


# ---------------------------------------------------------------------- accounting and metric
def test_exponential_rounds_is_the_largest_t_that_fits():
    acc = ZCDPAccountant()
    for rho, eps in ((Fraction(1, 8), 0.5), (Fraction(1, 1000), 0.01), (Fraction(2, 3), 0.1)):
        t = exponential_rounds(rho, eps)
        cost = acc.rho(ExponentialEvent(eps, 1))
        assert t * cost <= rho < (t + 1) * cost
    assert exponential_rounds(Fraction(1, 8), 0.5) == 4
    with pytest.raises(InvalidArgumentError):
        exponential_rounds(0, 0.5)


def test_max_error_is_the_worst_cell_over_the_workload():
    real = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
    synth = np.array([[0, 0], [0, 0]])
    # a: real (1/2, 1/2) vs (1, 0) -> 1/2; b and (a, b): cell 0 / (0, 0) 1/4 vs 1 -> 3/4
    assert max_error(real, synth, {"a": 2, "b": 2}, [["a"]]) == 0.5
    assert max_error(real, synth, {"a": 2, "b": 2}, "all-1way") == 0.75
    assert max_error(real, synth, {"a": 2, "b": 2}, "all-2way") == 0.75
    assert evaluate(real, synth, {"a": 2, "b": 2}, "all-2way").to_dict()["max_error"] == 0.75
