"""Public structural constraints (issue 23): parsing, masks, derived columns, rejection."""
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcore.constraints import forbidden_rows, measured_schema, violations
from dpcore.encoding import EncodingError, decode_codes, encode_frame
from dpcore.errors import InvalidArgumentError
from dpcore.schema import Schema, SchemaError
from mechanisms.synthesizer import Synthesizer

INDUSTRY = {"N": "N", "a1": "A", "a2": "A", "b1": "B"}
COLUMNS = {
    "AGE": {"type": "numeric", "lower": 0, "upper": 59, "integer": True, "bins": [0, 16, 30, 59]},
    "IND": {"type": "categorical", "categories": ["N", "a1", "a2", "b1"]},
    "CAT": {"type": "categorical", "categories": ["N", "A", "B"]},
    "INC": {"type": "numeric", "lower": 0, "upper": 100, "bins": [0, 10, 50, 100],
            "missing": "code"},
    "DEC": {"type": "categorical", "categories": ["low", "mid", "high"], "missing": "code"}}
RULES = [
    {"type": "derived", "name": "industry", "column": "CAT", "from": "IND", "map": INDUSTRY},
    {"type": "derived", "name": "decile", "column": "DEC", "from": "INC",
     "ranges": [[0, 10, "low"], [10, 50, "mid"], [50, 100, "high"]]},
    {"type": "forbidden", "name": "kids", "when": {"AGE": {"range": [0, 15]},
                                                   "IND": {"not_in": ["N"]}}},
    {"type": "forbidden", "name": "adults", "when": {"AGE": {"range": [16, 59]},
                                                     "IND": {"in": ["N"]}}}]


def schema_dict(rules=RULES, columns=COLUMNS):
    return {"columns": columns, "constraints": rules}


def frame(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 60, n)
    ind = np.where(age < 16, "N", rng.choice(["a1", "a2", "b1"], n))
    inc = rng.uniform(0, 100, n).round(2)
    dec = np.select([inc < 10, inc < 50], ["low", "mid"], "high")
    return pd.DataFrame({"AGE": age, "IND": ind, "CAT": pd.Series(ind).map(INDUSTRY),
                         "INC": inc, "DEC": dec})


def test_masks_and_round_trip_of_the_spec():
    s = Schema.from_dict(schema_dict())
    kids = s.constraints[2]
    assert kids.masks["AGE"].tolist() == [True, False, False]
    assert kids.masks["IND"].tolist() == [False, True, True, True]
    assert s.constraints[1].table == (0, 1, 2, 3)          # bins -> categories, missing -> missing
    assert Schema.from_dict(s.to_dict()) == s
    assert measured_schema(s).names == ("AGE", "IND", "INC")


@pytest.mark.parametrize("rules, words", [
    ([{**RULES[2], "when": {"AGEX": {"range": [0, 15]}}}], "unknown column 'AGEX'"),
    ([{**RULES[2], "when": {"AGE": {"range": [0, 20]}}}], "cuts bin 1"),
    ([{**RULES[2], "when": {"AGE": {"range": [0, 59]}}}], "forbids every cell"),
    ([{**RULES[2], "when": {"AGE": {"between": [0, 59]}}}], "predicate on 'AGE'"),
    ([{**RULES[2], "when": {"IND": {"in": ["n"]}}}], "names 'n', which is not one of"),
    ([{**RULES[0], "map": {"N": "N", "a1": "A"}}], "misses the 'IND' value 'a2'"),
    ([{**RULES[0], "map": {**INDUSTRY, "b1": "Z"}}], "not a category"),
    ([{**RULES[0], "column": "IND"}], "cannot derive from itself"),
    ([RULES[0], {**RULES[0], "name": "again"}], "derived by more than one rule"),
    ([RULES[0], {"type": "derived", "name": "cycle", "column": "IND", "from": "CAT",
                 "map": {"N": "N", "A": "a1", "B": "b1"}}], "is itself derived"),
    ([{**RULES[1], "ranges": [[0, 20, "low"], [20, 100, "high"]]}], "no range holds"),
    ([{**RULES[0], "on_violation": "ignore"}], "'on_violation'"),
    ([RULES[2], RULES[2]], "names must be unique"),
    ([{**RULES[2], "type": "maybe"}], "'type'"),
    ({"name": "x"}, "must be a list"),
])
def test_bad_rules_are_schema_errors_before_any_charge(rules, words, tmp_path):
    with pytest.raises(SchemaError, match="schema constraint") as err:
        Schema.from_dict(schema_dict(rules))
    assert words in str(err.value) and "\n" not in str(err.value)
    ledger = tmp_path / "ledger"
    synth = Synthesizer.create("aim", epsilon=1.0, delta=1e-9, ledger_path=ledger,
                               progress=False)
    with pytest.raises(SchemaError):
        synth.fit(frame(50), schema=schema_dict(rules))
    assert not ledger.exists()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=5, unique=True),
       st.integers(0, 31), st.integers(0, 31))
def test_range_mask_matches_brute_force(cuts, lo, hi):
    """A bin is forbidden iff every integer in it lies in [lo, hi]; a partial bin is an error."""
    edges = sorted({0, 31, *cuts})
    col = {"type": "numeric", "lower": 0, "upper": 31, "integer": True, "bins": edges}
    rule = {"type": "forbidden", "name": "r", "when": {"x": {"range": [lo, hi]}}}
    schema = {"columns": {"x": col, "y": {"type": "categorical", "categories": ["u"]}}}
    bins = Schema.from_dict(schema)["x"]
    members = [[v for v in range(32) if encode_frame(pd.DataFrame({"x": [v], "y": ["u"]}),
                                                     Schema.from_dict(schema))[0, 0] == k]
               for k in range(bins.size)]
    inside = [all(lo <= v <= hi for v in m) for m in members]
    partial = any(any(lo <= v <= hi for v in m) and not i for m, i in zip(members, inside))
    if lo > hi:
        with pytest.raises(SchemaError, match="lo <= hi"):
            Schema.from_dict({**schema, "constraints": [rule]})
        return
    try:
        mask = Schema.from_dict({**schema, "constraints": [rule]}).constraints[0].masks["x"]
    except SchemaError as err:
        assert partial or all(inside), err
        return
    assert not partial and mask.tolist() == inside


_PROBES = sorted({0.0, 100.0, *(k * 12.5 for k in range(9)), *(k * 12.5 + d for k in range(9)
                                                                for d in (-1e-9, 1e-9, 3.0))})


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([0.0, 25.0, 40.0, 100.0]), max_size=3, unique=True),
       st.sampled_from(["range", "in"]), st.sampled_from(_PROBES), st.sampled_from(_PROBES))
def test_float_rules_with_point_masses_match_the_raw_values(points, kind, lo, hi):
    """Audit 17 F4: on a float column with a point mass, the bin after the point is open at
    its left, yet a rule on the point itself was refused ("make it a point"). An accepted rule
    must forbid exactly the codes of the raw values it holds (brute force over probe values
    at, beside and between every edge and point); a rule naming each point alone is accepted."""
    lo, hi = min(lo, hi), max(lo, hi)
    col = {"type": "numeric", "lower": 0, "upper": 100, "bins": 4, "points": points}
    base = {"columns": {"x": col, "y": {"type": "categorical", "categories": ["u"]}}}
    pred = {"range": [lo, hi]} if kind == "range" else {"in": [lo]}
    holds = (lambda v: lo <= v <= hi) if kind == "range" else (lambda v: v == lo)
    probes = [v for v in _PROBES if 0 <= v <= 100]
    codes = encode_frame(pd.DataFrame({"x": probes, "y": ["u"] * len(probes)}),
                         Schema.from_dict(base))[:, 0]
    try:
        rule = {"type": "forbidden", "name": "r", "when": {"x": pred}}
        mask = Schema.from_dict({**base, "constraints": [rule]}).constraints[0].masks["x"]
    except SchemaError:
        return                      # refused: a bin it would cut (the point rules below)
    for v, code in zip(probes, codes):
        assert mask[code] == holds(v), (v, code, mask)
    for p in points:
        for point_pred in ({"in": [p]}, {"range": [p, p]}):
            rule = {"type": "forbidden", "name": "p", "when": {"x": point_pred}}
            mask = Schema.from_dict({**base, "constraints": [rule]}).constraints[0].masks["x"]
            assert mask.sum() == 1 and all(mask[c] == (v == p) for v, c in zip(probes, codes))


def test_a_derived_column_in_a_mechanism_that_never_sees_it_is_explained():
    """Audit 17 F5: MWEM's workload naming a derived column said "unknown column(s)"; the plan
    now says which rule derives it, from which column, and which mechanism measures it."""
    s = Schema.from_dict(schema_dict())
    with pytest.raises(InvalidArgumentError, match=r"\['CAT'\] \('CAT' is derived from 'IND' "
                       r"by rule 'industry'; mwem does not measure"):
        Synthesizer.create("mwem", epsilon=1.0, workload=[["CAT", "AGE"]]).plan(s)
    Synthesizer.create("aim", epsilon=1.0, workload=[["CAT", "AGE"]]).plan(s)   # AIM does
    with pytest.raises(InvalidArgumentError, match="NOPE") as err:
        Synthesizer.create("mwem", epsilon=1.0, workload=[["NOPE", "AGE"]]).plan(s)
    assert "derived" not in str(err.value)


@pytest.mark.parametrize("column, value", [("IND", "zz"), ("INC", 150.0), ("INC", "abc"),
                                           ("CAT", "Q"), ("DEC", "huge")])
def test_a_bad_value_in_a_rule_column_is_its_own_error(column, value):
    """Audit 17 F10: a bad value in a derived rule's parent (or child) column left that
    column's codes uninitialised, and the rule check read them: a raw IndexError, or "row 1
    breaks the derived-column rule", varying run to run. The bad value's own error now, every
    time; a rule broken before it still comes first."""
    s = Schema.from_dict(schema_dict())
    df = frame(300).astype({column: object})
    df.loc[149, column] = value
    for _ in range(5):
        with pytest.raises(EncodingError, match=f"column '{column}', row 150: ") as err:
            encode_frame(df, s)
        assert err.value.row == 150
    earlier = df.copy()
    earlier.loc[20, "CAT"] = "B" if earlier.loc[20, "CAT"] != "B" else "A"   # breaks 'industry'
    if column != "CAT":
        with pytest.raises(EncodingError, match="row 21 breaks the derived-column rule"):
            encode_frame(earlier, s)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_the_table_free_cover_check_is_the_table(sizes, data):
    """_covers (the check for rule groups over tables too large to build) against the table."""
    from dpcore.constraints import _covers, forbidden_table
    columns = [f"c{i}" for i in range(len(sizes))]
    rules = []
    for _ in range(data.draw(st.integers(1, 5))):
        named = data.draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1, unique=True))
        rules.append({columns[i]: np.array(data.draw(st.lists(
            st.booleans(), min_size=sizes[i], max_size=sizes[i]))) for i in named})
    assert _covers(rules, columns, [10 ** 6]) == forbidden_table(columns, sizes, rules).all()


def test_rules_forbidding_every_cell_of_a_huge_table_are_refused_before_any_charge():
    """Audit 17 F0: two rules that together forbid every cell, over a 2^26-cell table (above
    the table check), passed the schema and the plan; every mechanism spent, then failed."""
    from dpcore.constraints import zero_masks
    cats = [f"k{i}" for i in range(64)]
    spec = {"columns": {
        "a": {"type": "categorical", "categories": ["x", "y"]},
        "b": {"type": "numeric", "lower": 0, "upper": 2 ** 19 - 1, "integer": True,
              "bins": 2 ** 19},
        "c": {"type": "categorical", "categories": cats}},
        "constraints": [
            {"type": "forbidden", "name": "no_x", "when": {"a": {"in": ["x"]},
                                                           "b": {"range": [0, 2 ** 19 - 1]}}},
            {"type": "forbidden", "name": "no_y", "when": {"a": {"in": ["y"]},
                                                           "c": {"in": cats}}}]}
    with pytest.raises(SchemaError, match=r"together forbid every cell"):
        zero_masks(Schema.from_dict(spec))
    with pytest.raises(SchemaError, match=r"together forbid every cell"):
        Synthesizer.create("independent", epsilon=1.0).plan(Schema.from_dict(spec))
    spec["constraints"][1]["when"]["c"]["in"] = cats[:-1]          # k63 with y is allowed
    zero_masks(Schema.from_dict(spec))


def test_derived_columns_round_trip_and_real_rows_are_checked():
    s = Schema.from_dict(schema_dict())
    df = frame(200)
    df.loc[5, "INC"] = None
    df.loc[5, "DEC"] = None
    back = decode_codes(encode_frame(df, s), s, seed=0)
    assert back["CAT"].tolist() == df["CAT"].tolist()
    assert back["DEC"].fillna("?").tolist() == df["DEC"].fillna("?").tolist()
    broken = df.copy()
    broken.loc[7, "CAT"] = "B" if df.loc[7, "CAT"] != "B" else "A"
    with pytest.raises(EncodingError, match="row 8 breaks the derived-column rule 'industry'") \
            as err:
        encode_frame(broken, s)
    assert repr(broken.loc[7, "IND"]) not in str(err.value)   # the values stay private
    derive = Schema.from_dict(schema_dict([{**RULES[0], "on_violation": "derive"}]))
    fixed = decode_codes(encode_frame(broken, derive), derive)
    assert fixed["CAT"].tolist() == df["CAT"].tolist()


@pytest.mark.parametrize("mechanism", ["aim", "mst", "mwem", "independent"])
def test_samples_never_break_a_rule(mechanism):
    s = Schema.from_dict(schema_dict())
    synth = Synthesizer.create(mechanism, epsilon=1.0, delta=1e-9, seed=0,
                               progress=False).fit(frame(), schema=s)
    assert synth.model.domain.attrs == ("AGE", "IND", "INC")   # derived columns not measured
    for codes in (synth.sample_codes(3000, seed=1), synth.sample_codes()):
        assert all(v["rows"] == 0 for v in violations(codes, s))
    out = synth.sample(500, seed=2)
    assert not ((out.AGE < 16) & (out.IND != "N")).any()
    assert (out.CAT == out.IND.map(INDUSTRY)).all()


@pytest.mark.parametrize("mechanism", ["aim", "mst", "mwem"])
def test_forbidden_cells_are_structural_zeros_of_the_model(mechanism):
    """AIM, MST and MWEM fit their model with the forbidden cells at zero mass (-inf
    log-potentials in a clique over the rule's columns), so sampling rejects nothing."""
    s = Schema.from_dict(schema_dict())
    synth = Synthesizer.create(mechanism, epsilon=1.0, delta=1e-9, seed=0,
                               progress=False).fit(frame(), schema=s)
    model = synth.model
    mapping = synth.result.extras.get("compression") or {}
    ind = mapping.get("IND")
    joint = model.project(("AGE", "IND")).values        # model (maybe compressed) codes
    kids = np.array([True, False, False])
    for code in range(joint.shape[1]):
        originals = [code] if ind is None else list(np.flatnonzero(np.asarray(ind) == code))
        industry = all(o != 0 for o in originals)        # IND code 0 is "N"
        if industry:
            assert np.all(joint[kids, code] == 0.0)
        if all(o == 0 for o in originals):
            assert np.all(joint[~kids, code] == 0.0)
    synth.sample_codes(2000, seed=1)
    if ind is None:
        assert synth.rejection_rate_ == 0.0


def test_a_constrained_synthesizer_saves_and_loads(tmp_path):
    s = Schema.from_dict(schema_dict())
    synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-9, seed=0,
                               progress=False).fit(frame(), schema=s)
    synth.save(tmp_path / "synth.pkl")
    back = Synthesizer.load(tmp_path / "synth.pkl")
    assert np.array_equal(back.sample_codes(300, seed=4), synth.sample_codes(300, seed=4))


def test_rejection_law_is_the_model_conditioned_on_allowed_cells():
    """Brute force: the model's joint over the measured cells, zeroed on forbidden cells and
    renormalised, against the sampler's counts. Chi-square at alpha = 1e-6: a correct sampler
    fails with probability <= 1e-6 (randomized rounding only lowers the variance)."""
    s = Schema.from_dict(schema_dict())
    synth = Synthesizer.create("independent", epsilon=0.5, delta=1e-9, seed=3,
                               progress=False).fit(frame(), schema=s)
    attrs = ("AGE", "IND", "INC")
    joint = synth.model.project(attrs).values
    cells = np.array(list(itertools.product(*(range(k) for k in joint.shape))))
    full = np.zeros((len(cells), len(s)), dtype=np.int64)
    for j, a in enumerate(attrs):
        full[:, s.names.index(a)] = cells[:, j]
    allowed = ~forbidden_rows(full, s)
    p = joint.reshape(-1) * allowed
    assert 0 < p.sum() < joint.sum()       # the rules do cut model mass here
    p = p / p.sum()
    n = 40_000
    codes = synth.sample_codes(n, seed=4)
    flat = np.ravel_multi_index(tuple(codes[:, s.names.index(a)] for a in attrs), joint.shape)
    counts = np.bincount(flat, minlength=len(p))
    assert counts[p == 0].sum() == 0
    keep = p > 0
    _, pvalue = stats.chisquare(counts[keep], n * p[keep])
    assert pvalue > 1e-6
    assert 0 < synth.rejection_rate_ < 1


def test_model_with_almost_all_mass_forbidden_is_conditioned_exactly(monkeypatch):
    # rejection fails (the model puts ~all mass on adults); the independent model's law on the
    # allowed cells is drawn exactly instead (mechanisms.conditioned; audit 14 item 3), and
    # where that is not available the sample is refused
    rules = [{"type": "forbidden", "name": "no-adults", "when": {"AGE": {"range": [16, 59]}}}]
    df = frame()
    df["AGE"] = 40
    synth = Synthesizer.create("independent", epsilon=50.0, delta=1e-9, seed=0,
                               progress=False).fit(df, schema=schema_dict(rules))
    codes = synth.sample_codes(100, seed=0)
    assert (codes[:, synth.schema_.names.index("AGE")] == 0).all()   # bin 0: ages 0..15
    assert synth.rejection_rate_ > 0.999
    monkeypatch.setattr(Synthesizer, "_draw_conditioned", lambda self, n, seed: None)
    with pytest.raises(Exception, match="99.9% of its mass on cells forbidden"):
        synth.sample_codes(100, seed=0)


def test_violations_count_rows_per_rule():
    s = Schema.from_dict(schema_dict())
    codes = encode_frame(frame(10), s)
    codes[0, s.names.index("CAT")] = (codes[0, s.names.index("CAT")] + 1) % 3
    codes[1:4, s.names.index("AGE")] = 0
    codes[1:4, s.names.index("IND")] = 1       # a1, whose category A is code 1
    codes[1:4, s.names.index("CAT")] = 1
    got = {v["rule"]: (v["rows"], v["share"]) for v in violations(codes, s)}
    assert got == {"industry": (1, 0.1), "decile": (0, 0.0), "kids": (3, 0.3),
                   "adults": (0, 0.0)}


def test_evaluate_reports_violations_per_rule(tmp_path, capsys):
    import json

    from dpcore.cli import main
    (tmp_path / "schema.json").write_text(json.dumps(schema_dict()))
    real = frame(40)
    real.to_csv(tmp_path / "real.csv", index=False)
    synth = real.copy()
    synth.loc[:3, "CAT"] = "B"          # rows 0-3: a1/a2 -> B breaks "industry" unless b1
    synth.loc[10:14, ["AGE", "IND", "CAT"]] = [3, "a1", "A"]   # 5 working children
    synth.to_csv(tmp_path / "synth.csv", index=False)
    args = ["evaluate", "--real", str(tmp_path / "real.csv"), "--synth",
            str(tmp_path / "synth.csv"), "--schema", str(tmp_path / "schema.json"),
            "--workload", "all-2way"]
    want_industry = int((real.loc[:3, "CAT"] != "B").sum())
    assert want_industry > 0
    want_kids = 5 + int(((real.AGE < 16) & (real.IND != "N")).sum())
    assert main(args + ["--json", "--report", str(tmp_path / "report")]) == 0
    got = {v["rule"]: v for v in json.loads(capsys.readouterr().out)["violations"]}
    assert got["industry"]["rows"] == want_industry and got["kids"]["rows"] == want_kids
    assert got["kids"]["share"] == want_kids / 40 and got["adults"]["rows"] == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Schema constraints" in page and "<td>kids</td>" in page
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"{want_kids} ({want_kids / 40:.2%})  forbidden kids" in text


def test_cli_synth_honours_the_rules_and_the_ledger_verifies(tmp_path, capsys):
    import json

    from dpcore.cli import main
    (tmp_path / "schema.json").write_text(json.dumps(schema_dict()))
    frame().to_csv(tmp_path / "real.csv", index=False)
    code = main(["synth", "--quiet", "--mechanism", "mst", "--data", str(tmp_path / "real.csv"),
                 "--schema", str(tmp_path / "schema.json"), "--epsilon", "1", "--delta",
                 "1e-9", "--out", str(tmp_path / "out.csv"), "--ledger",
                 str(tmp_path / "ledger.json"), "--seed", "0"])
    assert code == 0
    capsys.readouterr()
    out = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    assert list(out.columns) == list(COLUMNS)
    assert (out.CAT == out.IND.map(INDUSTRY)).all()
    assert not ((out.AGE.astype(int) < 16) & (out.IND != "N")).any()
    assert main(["verify", "--allow-fixed-seed", str(tmp_path / "ledger.json")]) == 0
