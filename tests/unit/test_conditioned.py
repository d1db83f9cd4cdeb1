"""Exact conditioned sampling when rejection fails (audit 14, item 3): a forbidden rule with a
mechanism that fits no structural zeros (independent), a tiny budget and a huge column spent the
whole budget and then refused to sample; now the model's law on the allowed cells is drawn
exactly (mechanisms.conditioned), checked here against the brute-force conditional."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore import Domain
from dpcore.accounting import verify_ledger
from dpcore.inference import Measurement, estimate
from mechanisms.conditioned import conditioned_rows, rule_block
from mechanisms.synthesizer import Synthesizer


def _assert_draws_follow(rows, joint, shape):
    """``rows`` (codes over ``shape``) never fall in a zero cell of ``joint`` (a normalised
    table) and are chi-square-consistent with it."""
    observed = np.bincount(np.ravel_multi_index(rows.T, shape), minlength=joint.size)
    support = joint.ravel() > 0
    assert observed[~support].sum() == 0
    p = stats.chisquare(observed[support], len(rows) * joint.ravel()[support]).pvalue
    assert p > 1e-4, p


def _only_c0(values: int) -> dict:
    """Columns sex (2 values) and c (``values`` values), and a rule allowing only c = c0."""
    return {"columns": {"sex": {"type": "categorical", "categories": ["F", "M"]},
                        "c": {"type": "categorical", "categories": [f"c{i}" for i in range(values)]}},
            "constraints": [{"type": "forbidden", "name": "only_c0",
                             "when": {"c": {"not_in": ["c0"]}}}]}


def _model():
    """A model with cliques (a, b) and (c,): a and b dependent, c independent of both."""
    rng = np.random.default_rng(0)
    dom = Domain(("a", "b", "c"), (3, 4, 5))
    ab = rng.uniform(1, 50, 12)
    c = rng.uniform(1, 50, 5) * ab.sum() / 125
    ms = [Measurement(("a", "b"), ab, 1.0), Measurement(("c",), c, 1.0)]
    return estimate(dom, ms, max_iters=2000).model


def _draw(model):
    """The model's own sampler (independent draws from its full joint, brute force)."""
    joint = model.project(("a", "b", "c")).values.ravel()

    def draw(n, seed):
        cells = np.random.default_rng(seed).choice(joint.size, size=n, p=joint / joint.sum())
        return np.stack(np.unravel_index(cells, (3, 4, 5)), axis=1)
    return draw


def test_rule_block_is_the_components_holding_the_rules():
    model = _model()
    assert rule_block(model, [["b"]]) == ["a", "b"]          # b's clique brings a
    assert rule_block(model, [["c"]]) == ["c"]
    assert rule_block(model, [["a"], ["c"]]) == ["a", "b", "c"]


def test_conditioned_rows_follow_the_brute_force_conditional():
    model = _model()
    # forbidden: b in {0, 1, 2} (every a), and (a = 0, b = 3): only a in {1, 2}, b = 3 allowed
    masks = [{"b": np.array([True, True, True, False])},
             {"a": np.array([True, False, False]), "b": np.array([False, False, False, True])}]
    n = 60_000
    rows = conditioned_rows(model, masks, _draw(model), ["a", "b", "c"], n, 7, 10 ** 6)
    assert rows.shape == (n, 3)
    # brute force: the full joint, forbidden cells zeroed, renormalised
    joint = model.project(("a", "b", "c")).values.copy()
    joint[:, :3, :] = 0
    joint[0, 3, :] = 0
    joint /= joint.sum()
    _assert_draws_follow(rows, joint, (3, 4, 5))


def test_conditioned_rows_refuse_a_block_over_the_cap():
    model = _model()
    masks = [{"b": np.array([True, True, True, False])}]
    assert conditioned_rows(model, masks, _draw(model), ["a", "b", "c"], 10, 0, 11) is None


def test_independent_tiny_budget_huge_column_samples_the_allowed_cells(tmp_path):
    # audit 14 item 3 (f1): c has 20,000 values and only c0 is allowed; at eps = 0.05 the noisy
    # model puts almost all its mass on the forbidden 19,999: rejection fails after the spend
    schema = _only_c0(20_000)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 200, p=[0.8, 0.2]), "c": "c0"})
    ledger = tmp_path / "l.json"
    s = Synthesizer.create("independent", epsilon=0.05, progress=False, ledger_path=ledger,
                           seed=3).fit(df, schema)
    out = s.sample(5000)
    assert (out["c"] == "c0").all()
    assert s.rejection_rate_ > 0.999                  # rejection did fail: the fallback drew
    # sex keeps the model's own 1-way law (independent of c in this model)
    p_model = s.model.project(("sex",)).values / s.model.total
    counts = out["sex"].value_counts().reindex(["F", "M"]).to_numpy()
    assert stats.chisquare(counts, 5000 * p_model).pvalue > 1e-4
    own = s.sample()                                   # the fit's own table is redrawn too
    assert (own["c"] == "c0").all()
    s.write(tmp_path / "o.csv", 100)
    assert verify_ledger(ledger, allow_fixed_seed=True).ok


def test_product_mixture_rows_follow_the_brute_force_conditional():
    from mechanisms.conditioned import mixture_rows
    from mechanisms.product_mixture import ProductMixture
    rng = np.random.default_rng(2)
    dom = Domain(("a", "b", "c"), (3, 4, 2))
    tables = [rng.uniform(0.1, 1, (3, k)) for k in dom.shape]
    model = ProductMixture(dom, tables, 100.0)
    masks = [{"a": np.array([True, False, False]), "c": np.array([False, True])},
             {"b": np.array([True, True, False, False])}]
    n = 60_000
    rows = mixture_rows(model, masks, n, 5, 10 ** 6)
    # brute force: the mixture's full joint (1/B sum_j prod_i P_i[j]), forbidden zeroed
    t = model.tables
    joint = np.einsum("ja,jb,jc->abc", t[0], t[1], t[2]) / 3
    joint[0, :, 1] = 0
    joint[:, :2, :] = 0
    joint /= joint.sum()
    _assert_draws_follow(rows, joint, dom.shape)
    # two rules sharing no column: each is drawn outside its product set, no table needed
    assert mixture_rows(model, masks, 10, 5, 1).shape == (10, 3)


def test_product_mixture_rows_with_rules_sharing_a_column_use_their_tree():
    from mechanisms.conditioned import mixture_rows
    from mechanisms.product_mixture import ProductMixture
    rng = np.random.default_rng(4)
    dom = Domain(("a", "b", "c"), (3, 4, 2))
    model = ProductMixture(dom, [rng.uniform(0.1, 1, (5, k)) for k in dom.shape], 100.0)
    masks = [{"a": np.array([True, False, False]), "c": np.array([False, True])},
             {"c": np.array([True, False]), "b": np.array([True, True, True, False])}]
    n = 60_000
    rows = mixture_rows(model, masks, n, 6, 100)
    t = model.tables
    joint = np.einsum("ja,jb,jc->abc", t[0], t[1], t[2]) / 5
    joint[0, :, 1] = 0
    joint[:, :3, 0] = 0
    joint /= joint.sum()
    _assert_draws_follow(rows, joint, dom.shape)
    # their tree has cliques (a, c) and (b, c): 6 + 8 cells (and the 1-way), over a cap of 10
    assert mixture_rows(model, masks, 10, 5, 10) is None


def test_record_rows_draw_the_allowed_records_uniformly():
    from mechanisms.conditioned import record_rows
    from mechanisms.fem import MixtureModel
    dom = Domain(("a", "b"), (3, 2))
    records = np.array([[0, 0], [1, 1], [2, 0], [2, 1], [0, 1]])
    model = MixtureModel(dom, records, 5.0)
    masks = [{"a": np.array([True, False, True]), "b": np.array([False, True])}]  # a!=1, b=1
    rows = record_rows(model, masks, 30_000, 1)
    got = np.bincount(rows[:, 0] * 2 + rows[:, 1], minlength=6)
    assert got[[5, 1]].sum() == 0 and got[[0, 3, 4]].min() > 9_000   # (2,1), (0,1) dropped
    assert record_rows(model, [{"a": np.array([True, True, True])}], 3, 1) is None


@pytest.mark.parametrize("name", ["mwem-explicit", "rap-softmax"])
def test_other_families_tiny_budget_sample_the_allowed_cells(name, tmp_path):
    # the same failure for a histogram family (a one-clique graphical model) and a product
    # mixture: rejection fails after the spend, the exact conditional is drawn instead
    schema = _only_c0(2_000)
    df = pd.DataFrame({"sex": ["F", "M"] * 50, "c": "c0"})
    s = Synthesizer.create(name, epsilon=0.01, progress=False, seed=1, rounds=1,
                           workload="all-2way").fit(df, schema)
    out = s.sample(500)
    assert (out["c"] == "c0").all() and s.rejection_rate_ > 0.999


def test_compressed_model_rows_follow_the_brute_force_conditional():
    # MST's model is on a compressed domain; its sampler spreads a merged code uniformly over
    # the codes it merged. b's 4 original codes: 0, 1 kept, 2 and 3 merged into code 2.
    model = _model()                                     # a: 3, b: 4, c: 5 (compressed sizes)
    mapping = {"b": np.array([0, 1, 2, 2, 3, 3])}        # b has 6 original codes
    orig = (3, 6, 5)
    comp = model.project(("a", "b", "c")).values
    full = np.take(comp, mapping["b"], axis=1) / 2.0
    full[:, :2, :] *= 2.0                                # kept codes: no spread

    def draw(n, seed):
        cells = np.random.default_rng(seed).choice(full.size, size=n, p=full.ravel() / full.sum())
        return np.stack(np.unravel_index(cells, orig), axis=1)
    masks = [{"b": np.array([False, True, True, False, True, False])}]   # b in {1, 2, 4} out
    n = 60_000
    rows = conditioned_rows(model, masks, draw, ["a", "b", "c"], n, 3, 10 ** 6, mapping)
    joint = full.copy()
    joint[:, [1, 2, 4], :] = 0
    joint /= joint.sum()
    _assert_draws_follow(rows, joint, orig)


def test_mst_tiny_budget_huge_column_samples_the_allowed_cells():
    # MST compresses c's 20,000 values (almost all merged), so its zero cannot hold the rule
    # and rejection fails; the compressed model's law on the allowed cells is drawn instead
    schema = _only_c0(20_000)
    df = pd.DataFrame({"sex": ["F", "M"] * 100, "c": "c0"})
    s = Synthesizer.create("mst", epsilon=0.05, progress=False, seed=0).fit(df, schema)
    out = s.sample(300)
    assert (out["c"] == "c0").all() and s.rejection_rate_ > 0.999


# ------------------------------------------------------------------ session 14 review
def test_mst_conditions_a_wide_tree_on_the_rule_columns_only():
    # MST's spanning tree puts every column in the rule's block; expanding them all to their
    # original codes made a 2.6e9-cell table here (refused after the whole budget was spent)
    import pandas as pd
    from mechanisms.synthesizer import Synthesizer
    K, W = 20_000, 40
    cols = {"sex": {"type": "categorical", "categories": ["F", "M"]},
            "c": {"type": "categorical", "categories": [f"c{i}" for i in range(K)]}}
    for k in range(3):
        cols[f"x{k}"] = {"type": "categorical", "categories": [f"v{i}" for i in range(W)]}
    schema = {"columns": cols, "constraints": [{"type": "forbidden", "name": "only_c0",
                                                 "when": {"c": {"not_in": ["c0"]}}}]}
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 200), "c": "c0",
                       **{f"x{k}": rng.choice([f"v{i}" for i in range(W)], 200) for k in range(3)}})
    synth = Synthesizer.create("mst", epsilon=0.05, progress=False, seed=0).fit(df, schema)
    out = synth.sample(300)
    assert synth.rejection_rate_ > 0.999            # rejection failed: the fallback drew these
    assert (out["c"] == "c0").all()
    for k in range(3):                               # the other columns spread over their values
        assert out[f"x{k}"].nunique() > 10


def test_mst_fits_without_zeros_when_a_rule_triangulates_past_the_cap():
    # a rule over (a, b) joined to the tree a-d, b-d closes the clique {a, b, d} (4,096 cells
    # against a cap of 4,000 here): the plan cannot see it before the charges
    import pandas as pd
    from dpcore import _core
    from dpcore.accounting import verify_ledger
    from mechanisms.synthesizer import Synthesizer
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 8, 1000), rng.integers(0, 8, 1000)
    df = pd.DataFrame({"a": [f"a{v}" for v in a], "b": [f"b{v}" for v in b],
                       "d": [f"d{v}" for v in a * 8 + b]})
    df = df[~((df.a == "a0") & (df.b == "b0"))]
    schema = {"columns": {"a": {"type": "categorical", "categories": [f"a{i}" for i in range(8)]},
                          "b": {"type": "categorical", "categories": [f"b{i}" for i in range(8)]},
                          "d": {"type": "categorical", "categories": [f"d{i}" for i in range(64)]}},
              "constraints": [{"type": "forbidden", "name": "r",
                               "when": {"a": {"in": ["a0"]}, "b": {"in": ["b0"]}}}]}
    old = _core.set_max_table_cells(4000)
    try:
        synth = Synthesizer.create("mst", epsilon=50.0, progress=False, seed=0).fit(df, schema)
        out = synth.sample(500)
    finally:
        _core.set_max_table_cells(old)
    assert verify_ledger(synth.ledger, allow_fixed_seed=True).ok
    assert not ((out["a"] == "a0") & (out["b"] == "b0")).any()


def _independent_model(shape, seed):
    """An independent model (1-way cliques), as the independent mechanism releases."""
    rng = np.random.default_rng(seed)
    names = tuple("abcd"[:len(shape)])
    dom = Domain(names, shape)
    ms = [Measurement((a,), rng.uniform(1, 50, k), 1.0) for a, k in zip(names, shape)]
    return estimate(dom, ms, max_iters=500).model


def test_conditioned_rows_need_the_rules_tree_not_a_table_over_every_rule_column():
    # two rules on disjoint pairs of an independent model: one table over all four columns
    # (360 cells) exceeds the cap of 100, and the rules need no table at all (each is drawn
    # outside its product set); the draw follows the brute-force conditional
    model = _independent_model((3, 4, 5, 6), 1)
    masks = [{"a": np.array([True, True, False]), "b": np.array([False, True, True, True])},
             {"c": np.array([True, False, False, False, True]),
              "d": np.array([True, True, True, True, True, False])}]
    n = 80_000
    rows = conditioned_rows(model, masks, None, ["a", "b", "c", "d"], n, 3, 100)
    joint = model.project(("a", "b", "c", "d")).values.copy()
    joint[np.ix_([0, 1], [1, 2, 3], range(5), range(6))] = 0
    joint[np.ix_(range(3), range(4), [0, 4], range(5))] = 0
    joint /= joint.sum()
    _assert_draws_follow(rows, joint, (3, 4, 5, 6))
    # columns come back in the caller's order
    swapped = conditioned_rows(model, masks, None, ["d", "c", "b", "a"], 1000, 3, 100)
    assert np.array_equal(swapped, conditioned_rows(model, masks, None, ["a", "b", "c", "d"],
                                                    1000, 3, 100)[:, ::-1])
    assert conditioned_rows(model, masks, None, ["a", "b", "c", "d"], 10, 3, 1).shape == (10, 4)


def test_conditioned_rows_of_rules_sharing_a_column_follow_the_brute_force_conditional():
    # rules joined by column b go through the masked model's junction tree
    model = _independent_model((3, 4, 5), 2)
    masks = [{"a": np.array([True, True, False]), "b": np.array([False, True, True, True])},
             {"b": np.array([True, False, False, True]), "c": np.array([True, False] * 2 + [True])}]
    n = 80_000
    rows = conditioned_rows(model, masks, None, ["a", "b", "c"], n, 5, 100)
    joint = model.project(("a", "b", "c")).values.copy()
    joint[np.ix_([0, 1], [1, 2, 3], range(5))] = 0
    joint[np.ix_(range(3), [0, 3], [0, 2, 4])] = 0
    joint /= joint.sum()
    _assert_draws_follow(rows, joint, (3, 4, 5))
    # the masked tree: cliques (a, b) and (b, c), 12 + 20 cells (and the 1-way)
    assert conditioned_rows(model, masks, None, ["a", "b", "c"], 10, 5, 30) is None


def test_conditioned_rows_draw_the_allowed_cells_uniformly_when_they_have_no_mass():
    from dpcore.factor import Factor
    from dpcore.inference.model import GraphicalModel
    dom = Domain(("a", "b"), (3, 4))
    # the model's a-potential is -inf on a = 1, 2: the only allowed a (a = 1) has no mass
    pot = [Factor(dom.project(("a",)), np.array([0.0, -np.inf, -np.inf])),
           Factor(dom.project(("b",)), np.log([1.0, 2.0, 3.0, 4.0]))]
    model = GraphicalModel(dom, [("a",), ("b",)], pot, 10.0)
    masks = [{"a": np.array([True, False, True])}]           # only a = 1 allowed
    rows = conditioned_rows(model, masks, None, ["a", "b"], 8000, 0, 100)
    assert (rows[:, 0] == 1).all()       # the rule's column: uniform on its allowed cells
    counts = np.bincount(rows[:, 1], minlength=4)          # b, in no rule: the model's law
    assert stats.chisquare(counts, 8000 * np.array([0.1, 0.2, 0.3, 0.4])).pvalue > 1e-4
    # the same through the masked model's tree (a second rule joins a and b)
    masks.append({"a": np.array([False, True, False]), "b": np.array([True, False, False, False])})
    rows = conditioned_rows(model, masks, None, ["a", "b"], 9000, 0, 100)
    assert (rows[:, 0] == 1).all() and (rows[:, 1] != 0).all()
    counts = np.bincount(rows[:, 1], minlength=4)[1:]      # the block is uniform on (1, 1..3)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_rules_too_large_for_the_conditioned_draw_are_refused_before_any_charge(tmp_path):
    # a mechanism without structural zeros draws from the rules' tree when rejection fails
    # after the spend: rules sharing a column whose tree is over an eighth of the cell cap are
    # refused in the plan instead; a rule alone needs no table and is not
    from dpcore import _core
    from dpcore.schema import SchemaError
    cats = {c: {"type": "categorical", "categories": [f"{c}{i}" for i in range(30)]}
            for c in "abc"}
    ab = {"type": "forbidden", "name": "ab", "when": {"a": {"in": ["a0"]}, "b": {"in": ["b0"]}}}
    bc = {"type": "forbidden", "name": "bc", "when": {"b": {"in": ["b1"]}, "c": {"in": ["c1"]}}}
    df = pd.DataFrame({"a": ["a1", "a2"] * 10, "b": ["b2", "b3"] * 10, "c": ["c2", "c3"] * 10})
    ledger = tmp_path / "l.json"
    old = _core.set_max_table_cells(8 * 1500)      # the two rules' tree: 900 + 900 cells
    try:
        for name in ("independent", "rap-softmax"):
            with pytest.raises(SchemaError, match="share columns and make a junction tree"):
                Synthesizer.create(name, epsilon=1.0, progress=False, ledger_path=ledger, seed=0,
                                   ).fit(df, {"columns": cats, "constraints": [ab, bc]})
            assert not ledger.exists()
        # record models filter records (no tree): not refused; a histogram over the whole
        # domain (27,000 cells here) is
        both = {"columns": cats, "constraints": [ab, bc]}
        from mechanisms.synthesizer import as_schema
        for name in ("fem", "dqrs", "privpgd"):
            assert Synthesizer.create(name, epsilon=1.0)._rule_options(as_schema(both)) == {}
        with pytest.raises(SchemaError, match="histogram over the whole domain"):
            Synthesizer.create("mwem-explicit", epsilon=1.0).plan(
                {"columns": cats, "constraints": [ab]})
        s = Synthesizer.create("independent", epsilon=1.0, progress=False, ledger_path=ledger,
                               seed=0).fit(df, {"columns": cats, "constraints": [ab]})
    finally:
        _core.set_max_table_cells(old)
    out = s.sample(300)
    assert not ((out["a"] == "a0") & (out["b"] == "b0")).any()
