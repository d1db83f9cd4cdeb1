"""Schema rules sized before any charge (audit 14, items 5 and 6): a forbidden rule over several
columns is a model clique of AIM, MWEM and MST; the plan sizes it (and the first round's model
with it), and its mask is built before the ledger opens, so a refused run spends nothing and
leaves no ledger."""
import json
import os

import numpy as np
import pandas as pd
import pytest

from dpcore import _core
from dpcore.accounting import verify_ledger
from dpcore.cli import main
from dpcore.constraints import structural_zeros, zero_cliques
from dpcore.errors import InvalidArgumentError
from dpcore.schema import Schema, SchemaError
from mechanisms.synthesizer import Synthesizer

CATS = [f"v{i}" for i in range(60)]


def cube_schema(rule_cols="abc"):
    """Three 60-value columns, a rule forbidding one cell of ``rule_cols``: 60^3 = 216,000 cells."""
    return {"columns": {c: {"type": "categorical", "categories": CATS} for c in "abc"},
            "constraints": [{"type": "forbidden", "name": "r",
                             "when": {c: {"in": ["v0"]} for c in rule_cols}}]}


def cube_frame(n=300):
    rng = np.random.default_rng(0)
    return pd.DataFrame({c: rng.choice(CATS[1:], n) for c in "abc"})


@pytest.fixture
def cap():
    """The kernel's cell cap lowered (restored after): a small table stands for a huge one."""
    olds = []

    def set_cap(cells):
        olds.append(_core.set_max_table_cells(cells))
    yield set_cap
    if olds:
        _core.set_max_table_cells(olds[0])


OPTIONS = {"mst": {}, "mwem": {"rounds": 2, "workload": "all-2way"},
           "aim": {"rounds": 3, "workload": "all-2way"}}


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_a_rule_clique_over_the_cell_cap_is_refused_before_the_ledger(name, cap, tmp_path):
    # audit 14 item 5: pairs are 3,600 cells (the plan passed), the rule clique 216,000; MWEM
    # charged half its budget and died in estimation
    cap(10 ** 5)
    ledger = tmp_path / "l.json"
    s = Synthesizer.create(name, epsilon=0.5, progress=False, ledger_path=ledger, **OPTIONS[name])
    with pytest.raises(SchemaError, match="'r'.*216000 cells.*cell cap 100000"):
        s.plan(cube_schema())
    with pytest.raises(SchemaError, match="'r'"):
        s.fit(cube_frame(), cube_schema())
    assert not ledger.exists()


def test_aim_plan_counts_the_rule_clique_in_its_model_size(cap, tmp_path):
    # the clique fits the cap but not AIM's first round's share of max_model_size: the plan
    # said OK and fit() refused after opening (and closing as failed) a run
    cap(10 ** 6)
    ledger = tmp_path / "l.json"
    s = Synthesizer.create("aim", epsilon=0.5, progress=False, ledger_path=ledger, rounds=3,
                           workload="all-2way", max_model_size=0.7)
    with pytest.raises(InvalidArgumentError, match="rule cliques"):
        s.plan(cube_schema())
    with pytest.raises(InvalidArgumentError, match="rule cliques"):
        s.fit(cube_frame(), cube_schema())
    assert not ledger.exists()
    # without the rule the same options plan fine: the refusal is the rule clique's
    plain = {"columns": cube_schema()["columns"]}
    s.plan(plain)


def test_mwem_plan_counts_the_rule_clique_in_its_model_size(cap, tmp_path):
    cap(10 ** 6)
    ledger = tmp_path / "l.json"
    # 216,000 cells = 1.65 MB: every workload pair joins it (the tree holds it from the start)
    s = Synthesizer.create("mwem", epsilon=0.5, progress=False, ledger_path=ledger, rounds=2,
                           workload="all-2way", max_model_size=1.0)
    with pytest.raises(InvalidArgumentError, match="MWEM's first round.*rule cliques"):
        s.fit(cube_frame(), cube_schema())
    assert not ledger.exists()


@pytest.mark.parametrize("name", ["mwem", "aim"])
def test_a_planned_run_with_a_rule_clique_completes(name, tmp_path):
    # the plan's check agrees with the run's: a rule clique that fits runs to the end and the
    # model holds its forbidden cell at zero
    ledger = tmp_path / "l.json"
    cols = {c: {"type": "categorical", "categories": CATS[:6]} for c in "abc"}
    schema = {"columns": cols, "constraints": [{"type": "forbidden", "name": "r", "when": {
        c: {"in": ["v0"]} for c in "abc"}}]}
    rng = np.random.default_rng(1)
    df = pd.DataFrame({c: rng.choice(CATS[1:6], 200) for c in "abc"})
    s = Synthesizer.create(name, epsilon=1.0, progress=False, ledger_path=ledger, seed=0,
                           rounds=3, workload="all-2way")
    s.plan(schema)
    s.fit(df, schema)
    assert verify_ledger(ledger, allow_fixed_seed=True).ok
    assert float(s.model.project(("a", "b", "c")).datavector().reshape(6, 6, 6)[0, 0, 0]) == 0


def test_zero_cliques_sizes_without_building_the_mask():
    # three 2^20-bin columns: the rule's product is 2^60 cells; sizing it allocates nothing
    col = {"type": "numeric", "lower": 0, "upper": 2 ** 20 - 1, "bins": 2 ** 20, "integer": True}
    s = Schema.from_dict({"columns": {"a": col, "b": col, "c": col}, "constraints": [{
        "type": "forbidden", "name": "big", "when": {c: {"range": [0, 10]} for c in "abc"}}]})
    assert zero_cliques(s) == [("a", "b", "c")]
    with pytest.raises(SchemaError, match="'big'.*cell cap 1000"):
        zero_cliques(s, max_cells=1000)
    with pytest.raises(SchemaError, match="'big'"):
        structural_zeros(s, max_cells=1000)


def _bigzero(tmp_path):
    col = {"type": "numeric", "lower": 0, "upper": 2 ** 20 - 1, "bins": 2 ** 20, "integer": True}
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"columns": {"a": col, "b": col, "c": col}, "constraints": [{
        "type": "forbidden", "name": "big", "when": {c: {"range": [0, 10]} for c in "abc"}}]}))
    data = tmp_path / "d.csv"
    data.write_text("a,b,c\n" + "".join(f"{i + 20},{i + 30},{i + 40}\n" for i in range(50)))
    return schema, data


@pytest.mark.parametrize("mechanism", ["independent", "mst"])
def test_cli_a_huge_rule_never_leaves_an_open_run(mechanism, tmp_path, capsys):
    # audit 14 item 6: the 2^60-cell mask was built after open_run and outside the try that
    # closes failed runs: MemoryError, a ledger with an open run (INCOMPLETE), and advice
    # naming --max-model-size. Independent does not use the mask (it runs; rejection reads
    # per-column masks); MST sizes it in the plan and is refused with no ledger.
    schema, data = _bigzero(tmp_path)
    ledger = tmp_path / "l.json"
    code = main(["synth", "--mechanism", mechanism, "--data", str(data), "--schema", str(schema),
                 "--epsilon", "0.5", "--delta", "1e-9", "--rows", "10", "--engine", "memory", "--out",
                 str(tmp_path / "o.csv"), "--ledger", str(ledger), "--quiet"])
    err = capsys.readouterr().err
    if mechanism == "independent":
        assert code == 0, err
        assert verify_ledger(ledger).ok
    else:
        assert code == 2 and "'big'" in err and "cell cap" in err, err
        assert not ledger.exists() and not (tmp_path / "o.csv").exists()


def test_cli_memory_advice_names_only_the_mechanism_options():
    from argparse import Namespace

    from dpcore.cli.parser import _memory_advice
    assert "--max-model-size" in _memory_advice(Namespace(mechanism="aim"))
    for name in ("independent", "mst", "nist-mst", "pep", "fem", "privpgd"):
        assert "--max-model-size" not in _memory_advice(Namespace(mechanism=name))
    assert "--rows" not in _memory_advice(Namespace())


@pytest.mark.parametrize("name", ["independent", "pep", "mst"])
def test_a_rule_forbidding_every_measured_cell_is_refused_by_every_plan(name, tmp_path):
    # the child value "Z" is never derived, so "CAT not Z" forbids every parent code: was only
    # caught when building the zeros (after open_run, and no longer built for independent/pep)
    schema = {"columns": {"IND": {"type": "categorical", "categories": ["a", "b"]},
                          "CAT": {"type": "categorical", "categories": ["A", "B", "Z"]},
                          "x": {"type": "categorical", "categories": ["u", "v"]}},
              "constraints": [
                  {"type": "derived", "name": "cat", "column": "CAT", "from": "IND",
                   "map": {"a": "A", "b": "B"}},
                  {"type": "forbidden", "name": "notz", "when": {"CAT": {"not_in": ["Z"]}}}]}
    df = pd.DataFrame({"IND": ["a", "b"] * 20, "CAT": ["A", "B"] * 20, "x": ["u"] * 40})
    ledger = tmp_path / "l.json"
    s = Synthesizer.create(name, epsilon=1.0, progress=False, ledger_path=ledger)
    with pytest.raises(SchemaError, match="'notz'.*forbids every cell"):
        s.fit(df, schema)
    assert not ledger.exists()


@pytest.mark.parametrize("mechanism", ["independent", "mst", "mwem", "aim"])
def test_rules_that_together_forbid_every_cell_are_refused_before_any_charge(mechanism, tmp_path):
    # each rule alone leaves a value; together none (review of session 14)
    from dpcore.schema import SchemaError
    from mechanisms.synthesizer import Synthesizer
    schema = {"columns": {"a": {"type": "categorical", "categories": ["x", "y"]},
                          "b": {"type": "categorical", "categories": ["u", "v"]}},
              "constraints": [{"type": "forbidden", "name": "no_x", "when": {"a": {"in": ["x"]}}},
                              {"type": "forbidden", "name": "no_y", "when": {"a": {"in": ["y"]}}}]}
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create(mechanism, epsilon=1.0, progress=False, ledger_path=ledger)
    with pytest.raises(SchemaError, match="together forbid every cell"):
        synth.plan(schema)
    df = pd.DataFrame({"a": ["x", "y"] * 5, "b": ["u"] * 10})
    with pytest.raises(SchemaError, match="together forbid every cell"):
        synth.fit(df, schema)
    assert not ledger.exists()


def test_rules_on_shared_columns_that_leave_a_cell_pass():
    from dpcore.constraints import zero_masks
    from dpcore.schema import Schema
    schema = Schema.from_dict({
        "columns": {"a": {"type": "categorical", "categories": ["x", "y", "z"]},
                    "b": {"type": "categorical", "categories": ["u", "v"]}},
        "constraints": [{"type": "forbidden", "name": "r1", "when": {"a": {"in": ["x"]}}},
                        {"type": "forbidden", "name": "r2",
                         "when": {"a": {"in": ["y", "z"]}, "b": {"in": ["u"]}}}]})
    assert [name for name, _ in zero_masks(schema)] == ["r1", "r2"]     # (z, v) is allowed
