"""Workload error (AIM Definition 2) against a brute-force reference, and workload parsing."""
import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcore.errors import InvalidArgumentError
from dpcore.evaluation import all_k_way, evaluate, parse_workload


def brute_force_error(real, synth, shape, attrs_list):
    errors = []
    for axes in attrs_list:
        cells = itertools.product(*[range(shape[a]) for a in axes])
        total = 0.0
        for cell in cells:
            p = np.mean([all(r[a] == c for a, c in zip(axes, cell)) for r in real])
            q = np.mean([all(r[a] == c for a, c in zip(axes, cell)) for r in synth])
            total += abs(p - q)
        errors.append(total)
    return errors


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(1, 12),
       st.integers(1, 12), st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_matches_brute_force(shape, n_real, n_synth, seed, k):
    k = min(k, len(shape))
    rng = np.random.default_rng(seed)
    real = np.stack([rng.integers(0, s, n_real) for s in shape], axis=1)
    synth = np.stack([rng.integers(0, s, n_synth) for s in shape], axis=1)
    domain = {f"a{i}": s for i, s in enumerate(shape)}
    result = evaluate(real, synth, domain, f"all-{k}way")
    combos = list(itertools.combinations(range(len(shape)), k))
    expected = brute_force_error(real, synth, shape, combos)
    assert [m.error for m in result.marginals] == pytest.approx(expected, abs=1e-12)
    assert result.workload_error == pytest.approx(np.mean(expected), abs=1e-12)


def test_identical_data_has_zero_error_and_disjoint_has_two():
    real = np.array([[0, 1], [1, 0]])
    assert evaluate(real, real, {"a": 2, "b": 2}).workload_error == 0.0
    disjoint = evaluate(np.array([[0]]), np.array([[1]]), {"a": 2}, "all-1way")
    assert disjoint.workload_error == 2.0


def test_weights_scale_the_mean():
    real, synth = np.array([[0, 0]]), np.array([[1, 0]])
    r = evaluate(real, synth, {"a": 2, "b": 2}, [{"attrs": ["a"], "weight": 3}, ["b"]])
    assert r.workload_error == pytest.approx((3 * 2.0 + 0.0) / 2)


def test_workload_file_and_errors(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"workload": [["b", "a"]]}))
    assert parse_workload(str(path), ["a", "b"]) == [(("a", "b"), 1.0)]
    assert parse_workload("all-3way", ["a", "b"]) == all_k_way(["a", "b"], 2)
    for bad, message in [([["z"]], "unknown column"), ([["a", "a"]], "repeats"),
                         ([["a"], ["a"]], "appears twice"), ([], "non-empty"),
                         ([{"attrs": ["a"], "weight": -1}], "weight must be"),
                         ("nope", "no such file")]:
        with pytest.raises(InvalidArgumentError, match=message):
            parse_workload(bad, ["a", "b"])


def test_shape_mismatch_is_an_error():
    with pytest.raises(InvalidArgumentError, match="N x 2"):
        evaluate(np.zeros((3, 1), int), np.zeros((3, 2), int), {"a": 1, "b": 1})


@pytest.mark.parametrize("raw, message", [
    (b'{"workload": [["a"]], "workload": [["b"]]}', "key 'workload' appears twice"),
    (b"[" * 5000 + b"]" * 5000, "nested deeper than 64 levels"),
    (b'[["a"]]\xff', "not UTF-8 text"),
    (b'[{"attrs": ["a"], "weight": NaN}]', "NaN is not a JSON number"),
])
def test_workload_file_is_read_strictly(tmp_path, raw, message):
    path = tmp_path / "w.json"
    path.write_bytes(raw)
    with pytest.raises(InvalidArgumentError, match=message) as err:
        parse_workload(str(path), ["a", "b"])
    assert str(err.value).startswith(f"workload file {str(path)!r}: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("text, match", [
    ('[{"attrs": ["a", "b"], "wieght": 2}]', "takes the keys attrs and weight"),
    ('{"workload": [["a"]], "extra": 1}', "holds one key"),
    ('{"marginals": [["a"]]}', "holds one key"),
])
def test_workload_files_with_unknown_keys_are_refused(tmp_path, text, match):
    from dpcore.evaluation import parse_workload
    path = tmp_path / "workload.json"
    path.write_text(text)
    with pytest.raises(InvalidArgumentError, match=match):
        parse_workload(str(path), ["a", "b"])


def test_a_pathlib_workload_file_reads_as_its_path(tmp_path):
    path = tmp_path / "workload.json"
    path.write_text('[["b", "a"]]')
    assert parse_workload(path, ["a", "b"]) == [(("a", "b"), 1.0)]
