"""The plan step refuses every infeasible run before a filter (or a ledger) exists, and a fit it
accepts does not fail on a size it checked."""
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpcore import _core
from dpcore.domain import Domain
from dpcore.errors import InvalidArgumentError
from mechanisms.plan import (MAX_ROUNDS, cell_cap, check_rows, check_seed, max_rounds,
                             model_ceiling_mb, plan_aim, plan_independent, plan_mst, plan_mwem)
from mechanisms.synthesizer import Synthesizer
from mechanisms.workload import make_workload, normalise_weights

DOMAIN = Domain(("a", "b", "c"), (3, 2, 4))
RHO = Fraction(1, 10)


@pytest.fixture
def small_cap():
    """A process-wide cell cap of 20 (restored after the test)."""
    old = _core.set_max_table_cells(20)
    yield
    _core.set_max_table_cells(old)


def test_cell_cap_is_the_kernels_cap(small_cap):
    assert cell_cap() == 20 and model_ceiling_mb() == 20 * 8 / 2**20


def test_mst_refuses_pairs_beyond_the_cell_cap(small_cap):
    # pairs: 3*2 + 3*4 + 2*4 = 26 cells in the first Kruskal batch > 20
    with pytest.raises(InvalidArgumentError, match="MST's spanning-tree selection needs up to 26"):
        plan_mst(DOMAIN, RHO)
    assert plan_mst(Domain(("a", "b"), (3, 2)), RHO).largest_batch_cells == 6


def test_independent_refuses_a_column_beyond_the_cell_cap(small_cap):
    with pytest.raises(InvalidArgumentError, match="1-way marginal needs up to 21"):
        plan_independent(Domain(("a",), (21,)), RHO)


def test_aim_and_mwem_bound_their_selection_batch(small_cap):
    # every pair fits the cap alone (6, 12, 8 cells), but one selection may read all 26, and
    # AIM's pool holds the 1-ways too (3 + 2 + 4 cells): 35
    pairs = [("a", "b"), ("a", "c"), ("b", "c")]
    with pytest.raises(InvalidArgumentError, match="an AIM selection needs up to 35"):
        plan_aim(DOMAIN, RHO, workload=pairs, rounds=3, max_model_size=model_ceiling_mb())
    with pytest.raises(InvalidArgumentError, match="an MWEM selection needs up to 26"):
        plan_mwem(DOMAIN, RHO, workload=pairs)
    # a model cap of 10 cells keeps the 12-cell pair out of every pool: 6 + 8 + 9 = 23
    with pytest.raises(InvalidArgumentError, match="an AIM selection needs up to 23"):
        plan_aim(DOMAIN, RHO, workload=pairs, rounds=3, max_model_size=10 * 8 / 2**20)
    # one pair: its 6 cells and its two 1-ways' 5
    plan = plan_aim(DOMAIN, RHO, workload=[("a", "b")], rounds=3,
                    max_model_size=model_ceiling_mb())
    assert plan.largest_batch_cells == 11


@pytest.mark.parametrize("size", [0, -1, 1e-300, float("nan"), float("inf"), 1e9, True, "80"])
def test_max_model_size_rules(size):
    with pytest.raises(InvalidArgumentError, match="max_model_size"):
        plan_aim(DOMAIN, RHO, workload="all-2way", max_model_size=size)
    with pytest.raises(InvalidArgumentError, match="max_model_size"):
        plan_mwem(DOMAIN, RHO, workload=[("a", "b")], max_model_size=size)


def test_mwem_without_a_cap_runs_with_the_ceiling():
    plan = plan_mwem(DOMAIN, RHO, workload=[("a", "b")])
    assert plan.options["max_model_size"] == model_ceiling_mb() and plan.options["rounds"] == 10


def test_aim_first_round_must_have_a_candidate():
    oneway_mb = sum(DOMAIN.shape) * 8 / 2**20
    with pytest.raises(InvalidArgumentError, match="first round would have no candidate"):
        plan_aim(DOMAIN, RHO, workload="all-2way", max_model_size=oneway_mb)  # share < 1
    plan = plan_aim(DOMAIN, RHO, workload="all-2way", max_model_size=1.0)
    assert plan.options["rounds"] == 16 * 3 and plan.options["max_model_size"] == 1.0


@pytest.mark.parametrize("rounds", [2, 0, -1, MAX_ROUNDS + 1, 10**8, 1.5, True, "3"])
def test_aim_rounds_rules(rounds):
    with pytest.raises(InvalidArgumentError, match="rounds must be an int in"):
        plan_aim(DOMAIN, RHO, workload="all-2way", rounds=rounds)


def test_rounds_cap_keeps_aims_default():
    assert max_rounds(3) == MAX_ROUNDS and max_rounds(1000) == 16000
    assert plan_mwem(DOMAIN, RHO, workload=[("a",)], rounds=MAX_ROUNDS).options["rounds"] == MAX_ROUNDS


@pytest.mark.parametrize("rows", [0, -5, 1.0, 1e23, True, "10", cell_cap() // 3 + 1])
def test_rows_rules(rows):
    with pytest.raises(InvalidArgumentError, match="rows must be"):
        check_rows(rows, 3)
    with pytest.raises(InvalidArgumentError, match="rows must be"):
        plan_mst(DOMAIN, RHO, rows=rows)


def test_rows_accepts_ints_up_to_the_cap():
    assert check_rows(None, 3) is None and check_rows(np.int64(7), 3) == 7
    assert check_rows(cell_cap() // 3, 3) == cell_cap() // 3


@pytest.mark.parametrize("seed", [-1, 2**64, 2**128 + 1, 1.0, "1", True])
def test_seed_rules(seed):
    with pytest.raises(InvalidArgumentError, match="seed must be"):
        check_seed(seed)


def test_seed_range_ends():
    assert check_seed(0) == 0 and check_seed(2**64 - 1) == 2**64 - 1 and check_seed(None) is None


@pytest.mark.parametrize("workload, rule", [
    ([(("a", "b"), 0.0)], "must not all be 0"),
    ([(("a", "b"), 0.0), (("c",), 0.0)], "must not all be 0"),
    ([(("a", "b"), -1.0)], "finite and >= 0"),
    ([(("a", "b"), float("inf"))], "finite and >= 0"),
    ([(("a", "b"), float("nan"))], "finite and >= 0"),
    ([], "at least one marginal"),
])
def test_workload_weight_rules(workload, rule):
    with pytest.raises(InvalidArgumentError, match=rule):
        plan_aim(DOMAIN, RHO, workload=workload)


def test_normalising_weights_by_the_largest():
    work = make_workload(DOMAIN, [(("a", "b"), 1e308), (("c",), 5e307)])
    assert normalise_weights(work) == ((("a", "b"), 1.0), (("c",), 0.5))
    unit = make_workload(DOMAIN, [(("a", "b"), 1.0), (("c",), 0.25)])
    assert normalise_weights(unit) is unit


def frame(rows=60):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.choice(list("xyz"), rows), "b": rng.choice(list("pq"), rows)})


SCHEMA = {"columns": {"a": {"type": "categorical", "categories": list("xyz")},
                      "b": {"type": "categorical", "categories": list("pq")}}}


@pytest.mark.parametrize("name, options, fit", [
    ("mst", {"seed": 2**64}, {}),
    ("aim", {"rounds": 10**8}, {}),
    ("aim", {"max_model_size": 1e-300}, {}),
    ("aim", {"workload": [(("a", "b"), 0.0)]}, {}),
    ("mwem", {"max_model_size": float("inf")}, {}),
    ("independent", {}, {"rows": 10**11}),
])
def test_fit_refuses_before_creating_the_ledger(tmp_path, name, options, fit):
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create(name, epsilon=1.0, delta=1e-6, ledger_path=ledger, **options)
    with pytest.raises(InvalidArgumentError):
        synth.fit(frame(), schema=SCHEMA, **fit)
    assert not ledger.exists() and synth.result_ is None


def test_fit_with_huge_weights_spends_exactly_the_budget(tmp_path):
    synth = Synthesizer.create("aim", epsilon=1.0, delta=1e-6, seed=3, rounds=2,
                               workload=[(("a", "b"), 1e308)])
    synth.fit(frame(), schema=SCHEMA)
    assert synth.ledger.spent == synth.ledger.budget and synth.verify(allow_fixed_seed=True).ok
