"""The benchmark's workload-error metric (bench/common.py) against a brute-force count."""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "common.py")
_spec = importlib.util.spec_from_file_location("bench_common", _PATH)
common = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = common  # dataclasses look their module up there
_spec.loader.exec_module(common)


def _write(path, attrs, rows):
    with open(path, "w") as f:
        f.write(",".join(attrs) + "\n")
        for r in rows:
            f.write(",".join(str(int(v)) for v in r) + "\n")


def _brute(real, synth, attrs, cliques):
    total = 0.0
    for cl in cliques:
        idx = [attrs.index(a) for a in cl]
        p = Counter(tuple(r[i] for i in idx) for r in real)
        q = Counter(tuple(r[i] for i in idx) for r in synth)
        total += sum(abs(p[k] / len(real) - q[k] / len(synth)) for k in set(p) | set(q))
    return total / len(cliques)


@st.composite
def _case(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=3, max_size=5))
    attrs = [f"a{i}" for i in range(len(sizes))]

    def rows(n):
        return [[draw(st.integers(0, s - 1)) for s in sizes] for _ in range(n)]

    return attrs, sizes, rows(draw(st.integers(1, 30))), rows(draw(st.integers(1, 30)))


@settings(max_examples=40, deadline=None)
@given(_case())
def test_workload_error_matches_brute_force(tmp_path_factory, case):
    attrs, sizes, real, synth = case
    d = tmp_path_factory.mktemp("err")
    _write(d / "real.csv", attrs, real)
    # Column order in the synthetic file must not matter.
    _write(d / "synth.csv", attrs[::-1], [r[::-1] for r in synth])
    cliques = list(itertools.combinations(attrs, 3))
    got = common.workload_error(str(d / "real.csv"), str(d / "synth.csv"),
                                dict(zip(attrs, sizes)), cliques)
    assert got == pytest.approx(_brute(real, synth, attrs, cliques), abs=1e-12)


def test_identical_data_has_zero_error_and_disjoint_support_has_two(tmp_path):
    attrs = ["x", "y", "z"]
    _write(tmp_path / "a.csv", attrs, [[0, 0, 0], [1, 1, 1]])
    _write(tmp_path / "b.csv", attrs, [[2, 2, 2]])
    dom = {"x": 3, "y": 3, "z": 3}
    assert common.workload_error(str(tmp_path / "a.csv"), str(tmp_path / "a.csv"), dom, [tuple(attrs)]) == 0
    assert common.workload_error(str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), dom,
                                 [tuple(attrs)]) == pytest.approx(2.0)


def test_out_of_domain_code_names_row_and_column(tmp_path):
    _write(tmp_path / "a.csv", ["x", "y"], [[0, 0]])
    _write(tmp_path / "b.csv", ["x", "y"], [[0, 0], [0, 5]])
    with pytest.raises(ValueError, match=r"row 1 column 'y' has code 5"):
        common.workload_error(str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), {"x": 1, "y": 2},
                              [("x", "y")])


def test_target_workload_keeps_only_triples_with_the_label():
    if not os.path.isdir(common.DATA_ROOT):
        pytest.skip("shared data directory not present")
    triples = common.workload_cliques("titanic", "target")
    assert triples and all("survived" in t for t in triples)
    assert len(triples) == len(list(itertools.combinations(range(8), 2)))
    assert common.workload_cliques("national2019", "target") is None
    assert np.isclose(len(common.workload_cliques("nursery", "all3way")), 84)
