"""The scikit-learn-style API and the doctests of the front-door modules."""
import doctest
import importlib
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import DpcoreTypeError, InvalidArgumentError
from mechanisms.synthesizer import AIM, MST, MWEM, Independent, Synthesizer


@pytest.mark.parametrize("module", ["mechanisms.synthesizer", "dpcore.schema",
                                    "dpcore.encoding", "dpcore.evaluation"])
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


SCHEMA = {"columns": {
    "age": {"type": "numeric", "lower": 0, "upper": 99, "bins": 10, "integer": True},
    "job": {"type": "categorical", "categories": ["a", "b", "c"], "other": "other"},
    "city": {"type": "categorical", "categories": ["x", "y"]},
    "score": {"type": "numeric", "bins": [0.0, 0.5, 1.0], "missing": "code"}}}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    n = 400
    age = rng.integers(0, 100, n)
    return pd.DataFrame({
        "age": age,
        "job": np.where(age > 50, "a", rng.choice(["b", "c", "zz"], n)),
        "city": rng.choice(["x", "y"], n),
        "score": np.where(rng.random(n) < 0.1, np.nan, rng.random(n))})


def test_create_by_name_and_errors():
    assert isinstance(Synthesizer.create("AIM", epsilon=1, delta=1e-6), AIM)
    for name, cls in [("mst", MST), ("mwem", MWEM), ("independent", Independent)]:
        assert type(Synthesizer.create(name, epsilon=1, delta=1e-6)) is cls
    with pytest.raises(InvalidArgumentError, match="mechanism must be one of"):
        Synthesizer.create("gan", epsilon=1, delta=1e-6)
    for kwargs, message in [({"epsilon": 0, "delta": 1e-6}, "epsilon must be"),
                            ({"epsilon": float("inf"), "delta": 1e-6}, "epsilon must be"),
                            ({"epsilon": 1, "delta": 1}, "delta must be in")]:
        with pytest.raises(InvalidArgumentError, match=message):
            MST(**kwargs)
    with pytest.raises(DpcoreTypeError, match="epsilon must be a number"):
        MST(epsilon=True, delta=1e-6)


def test_create_names_an_option_the_mechanism_does_not_take_or_needs():
    """Audit 17 F6: raw TypeErrors from create (the README's create("mst", ...) pattern with
    nist-mst, or an option of another mechanism). Every registered mechanism: each of its
    options is accepted, an unknown one refused by name, a required one missing named."""
    from mechanisms.synthesizer import _options
    for name, klass in Synthesizer._registry.items():
        accepted, required = _options(klass)
        assert {"epsilon", "delta", "seed", "ledger_path"} <= accepted
        with pytest.raises(InvalidArgumentError, match=f"{name} takes no option 'colour'"):
            Synthesizer.create(name, epsilon=1, colour=3)
        for option in required:
            given = {o: None for o in required if o != option}
            with pytest.raises(InvalidArgumentError, match=f"{name} needs the option '{option}'"):
                Synthesizer.create(name, **given)
    with pytest.raises(InvalidArgumentError, match="nist-mst needs the option 'public'"):
        Synthesizer.create("nist-mst", epsilon=1.0)
    with pytest.raises(InvalidArgumentError, match="mst takes no option 'rounds'"):
        Synthesizer.create("mst", epsilon=1.0, rounds=3)
    assert Synthesizer.create("aim", epsilon=1.0, workload="all-1way", rounds=3).rounds == 3
    with pytest.raises(InvalidArgumentError, match="mechanism must be one of"):
        Synthesizer.create(3, epsilon=1.0)


def test_write_refuses_a_directory_path(frame, tmp_path):
    synth = MST(epsilon=1, delta=1e-6, seed=0, progress=False).fit(frame, SCHEMA)
    with pytest.raises(InvalidArgumentError, match="ends with a separator"):
        synth.write(f"{tmp_path}/out/", 5)
    assert not (tmp_path / "out").exists()


def test_fit_needs_schema_and_unfitted_use_is_an_error(frame):
    with pytest.raises(InvalidArgumentError, match="schema is required"):
        MST(epsilon=1, delta=1e-6).fit(frame)
    with pytest.raises(InvalidArgumentError, match="call fit"):
        MST(epsilon=1, delta=1e-6).sample(3)
    with pytest.raises(InvalidArgumentError, match="DataFrame"):
        MST(epsilon=1, delta=1e-6).fit(frame.to_numpy(), schema=SCHEMA)


def test_independent_fit_sample_verify(frame, tmp_path):
    path = tmp_path / "ledger.json"
    synth = Independent(epsilon=2.0, delta=1e-6, seed=3, ledger_path=path).fit(frame, SCHEMA)
    sample = synth.sample(250)
    assert list(sample.columns) == list(SCHEMA["columns"]) and len(sample) == 250
    assert pd.api.types.is_integer_dtype(sample["age"]) and sample["age"].between(0, 99).all()
    assert set(sample["job"]) <= {"a", "b", "c", "other"}
    assert synth.verify(allow_fixed_seed=True).ok and json.loads(path.read_text())["entries"]
    assert synth.ledger.spent <= synth.ledger.budget
    with pytest.raises(InvalidArgumentError, match="already fitted"):
        synth.fit(frame, SCHEMA)
    with pytest.raises(InvalidArgumentError, match="only AIM"):
        synth.confidence_bounds()
    with pytest.raises(InvalidArgumentError, match="n must be"):
        synth.sample(0)


def test_aim_small_workload_bounds(frame):
    work = [("age", "job"), ("city", "score")]
    synth = AIM(epsilon=5.0, delta=1e-6, workload=work, rounds=4, seed=1).fit(frame, SCHEMA)
    bounds = synth.confidence_bounds()
    assert list(bounds.columns) == ["attrs", "bound", "level", "supported"]
    assert {("age", "job"), ("city", "score")} <= set(bounds["attrs"])
    assert (bounds["bound"] >= 0).all() and synth.model is not None
    assert len(synth.sample()) >= 1


def test_same_seed_same_sample(frame):
    a = MST(epsilon=1.0, delta=1e-6, seed=11).fit(frame, SCHEMA).sample(50)
    b = MST(epsilon=1.0, delta=1e-6, seed=11).fit(frame, SCHEMA).sample(50)
    pd.testing.assert_frame_equal(a, b)


def test_pre_encoded_in_codes_out(frame):
    codes = pd.DataFrame({"a": [0, 1, 2, 1] * 30, "b": [0, 1, 1, 0] * 30})
    synth = MWEM(epsilon=3.0, delta=1e-6, workload="all-2way", rounds=2, seed=0)
    out = synth.fit(codes, schema={"a": 3, "b": 2}).sample(40)
    assert list(out.columns) == ["a", "b"] and out.dtypes.tolist() == [np.int64, np.int64]
    assert out["a"].between(0, 2).all() and out["b"].between(0, 1).all()


# -- what users of the anchors expect (issue: the front door) ------------------------------
@pytest.fixture(scope="module")
def adult_small():
    import dpcore
    frame, schema = dpcore.datasets.adult()
    return frame.sample(4000, random_state=0).reset_index(drop=True), schema


def test_mst_samples_on_the_original_domain_after_compression(adult_small):
    frame, schema = adult_small
    synth = Synthesizer.create("mst", epsilon=0.5, seed=3, progress=False).fit(frame, schema)
    mapping = synth.result.extras["compression"]
    assert mapping, "eps=0.5 on 4000 rows must merge rare values (Alg. 4)"
    attr, codes = next(iter(mapping.items()))
    compressed = int(codes.max()) + 1
    sample = synth.sample_codes(20000)
    column = sample[:, schema.names.index(attr)]
    assert column.max() < schema.domain_dict()[attr]
    assert len(set(column.tolist())) > compressed      # merged values come back spread out
    decoded = synth.sample(50)
    assert list(decoded.columns) == list(schema.names)


def test_seed_fixes_the_sequence_of_samples_not_one_sample(adult_small):
    frame, schema = adult_small
    a = Synthesizer.create("independent", epsilon=1.0, seed=5, progress=False).fit(frame, schema)
    b = Synthesizer.create("independent", epsilon=1.0, seed=5, progress=False).fit(frame, schema)
    first, second = a.sample(30), a.sample(30)
    assert not first.equals(second)
    assert first.equals(b.sample(30)) and second.equals(b.sample(30))


def test_default_delta_fit_sample_and_pickle_round_trip(adult_small, tmp_path):
    import pickle
    from mechanisms.synthesizer import DEFAULT_DELTA
    frame, schema = adult_small
    synth = Synthesizer.create("mst", epsilon=1.0, progress=False)
    assert synth.delta == DEFAULT_DELTA == 1e-9
    out = synth.fit_sample(frame, schema, n=100)
    assert len(out) == 100 and list(out.columns) == list(schema.names)
    path = tmp_path / "synth.pkl"
    synth.save(path)
    again = Synthesizer.load(path)
    assert again.verify(allow_fixed_seed=True).ok and len(again.sample(25)) == 25
    assert pickle.loads(pickle.dumps(synth)).ledger == synth.ledger


# ------------------------------------------------------------------ session 14 audit: inputs
def test_outputs_never_replace_the_schema_or_workload_files_the_fit_read(frame, tmp_path):
    schema_file, workload_file = tmp_path / "schema.json", tmp_path / "workload.json"
    schema_file.write_text(json.dumps(SCHEMA))
    workload_file.write_text(json.dumps([["age", "job"], ["job", "city"]]))
    synth = AIM(epsilon=1.0, workload=str(workload_file), rounds=4, progress=False)
    synth.fit(frame, str(schema_file))
    for write in (synth.save, synth.write):
        for target in (schema_file, workload_file):
            before = target.read_bytes()
            with pytest.raises(InvalidArgumentError, match="refusing to overwrite"):
                write(target)
            assert target.read_bytes() == before
    synth.write(tmp_path / "out.csv")          # any other path is fine


def test_an_iterator_workload_is_kept_whole_for_the_plan_and_the_ledger(frame):
    marginals = [("age", "job"), ("job", "city")]
    synth = AIM(epsilon=1.0, workload=iter(marginals), rounds=4, progress=False)
    synth.fit(frame, SCHEMA)
    opening = next(e for e in synth.ledger.entries if e.kind == "open")
    assert opening.what["parameters"]["workload"] == "2 marginals"
    assert synth.plan(SCHEMA).options["workload"]        # a second plan still sees it
    with pytest.raises(DpcoreTypeError, match="workload"):
        AIM(epsilon=1.0, workload=42)


@pytest.mark.parametrize("call, error", [
    (lambda s, d: s.write(123), DpcoreTypeError),
    (lambda s, d: s.write(None), DpcoreTypeError),
    (lambda s, d: s.write(b"out.csv"), DpcoreTypeError),
    (lambda s, d: s.write(d / "out.csv", missing_token=5), DpcoreTypeError),
    (lambda s, d: s.save(b"model.pkl"), DpcoreTypeError),
    (lambda s, d: Synthesizer.load(d / "missing.pkl"), InvalidArgumentError),
    (lambda s, d: Synthesizer.load(d), InvalidArgumentError),
    (lambda s, d: Synthesizer.load(0), DpcoreTypeError),      # never a file descriptor
])
def test_path_arguments_get_typed_errors(frame, tmp_path, call, error):
    synth = Independent(epsilon=1.0, progress=False).fit(frame, SCHEMA)
    with pytest.raises(error):
        call(synth, tmp_path)


def test_no_output_replaces_a_ledger_or_salt_file(frame, tmp_path):
    from dpcore.accounting import PrivacyFilter
    other = tmp_path / "other-ledger.json"
    PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=other).close()
    salt = tmp_path / "other-ledger.json.private"
    salt.write_text(json.dumps({"run": 0, "input_sha256": "00", "input_salt": "11"}) + "\n")
    synth = Independent(epsilon=1.0, progress=False).fit(frame, SCHEMA)
    for target, what in ((other, "dpcore ledger"), (salt, "salt file")):
        before = target.read_bytes()
        for write in (synth.write, synth.save):
            with pytest.raises(InvalidArgumentError, match=what):
                write(target)
        assert target.read_bytes() == before
