"""A schema file is user input: any mutation of a valid one (a field set to a value of another
JSON type, out of range, empty, nested) is either a valid schema or a typed DpcoreError naming
the column or rule, never a raw TypeError/IndexError (audit 17 F9: a list as a column's "type",
a derived rule's "from", or "bins": [] beside "lower" crashed the reader)."""
from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore.errors import DpcoreError
from dpcore.schema import Schema

BASE = {
    "format": "dpcore-schema", "version": 1, "missing_values": ["?"],
    "columns": {
        "age": {"type": "numeric", "lower": 0, "upper": 99, "integer": True,
                "bins": [0, 16, 30, 50, 65, 99]},
        "agecat": {"type": "categorical", "categories": ["child", "adult", "senior"]},
        "indp": {"type": "categorical", "categories": ["N", "A", "B", "C"]},
        "indpcat": {"type": "categorical", "categories": ["none", "x", "y"]},
        "sex": {"type": "categorical", "categories": ["M", "F"], "missing": "code"},
        "inc": {"type": "numeric", "lower": 0, "upper": 99999, "integer": True, "bins": 8,
                "points": [0]},
        "when": {"type": "datetime", "lower": "2020-01-01", "upper": "2021-01-01",
                 "resolution": "day", "bins": 4},
        "id": {"type": "code", "size": 5}},
    "constraints": [
        {"type": "derived", "name": "agecat_from_age", "column": "agecat", "from": "age",
         "ranges": [[0, 15, "child"], [16, 64, "adult"], [65, 99, "senior"]]},
        {"type": "derived", "name": "indpcat_from_indp", "column": "indpcat", "from": "indp",
         "map": {"N": "none", "A": "x", "B": "x", "C": "y"}},
        {"type": "forbidden", "name": "no_child_work",
         "when": {"age": {"range": [0, 15]}, "indp": {"not_in": ["N"]}}},
        {"type": "forbidden", "name": "no_senior_y",
         "when": {"agecat": {"in": ["senior"]}, "indpcat": {"in": ["y"]}}}]}

WEIRD = [None, True, False, 0, -1, 1, 2, 2.5, 1e308, -1e308, float("nan"), float("inf"), "", "x",
         "0", [], [1], ["a", "a"], {}, {"a": 1}, [[0, 1, "x"]], 2 ** 64, -(2 ** 64), [0, 0],
         [1, 0], [0, 1e308], ["a", None], [None], "∞", [0.5, 0.5, 1], ["indp"], {"N": "x"}]


def _paths(obj, at=()):
    if at:
        yield at
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, at + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, at + (i,))


PATHS = list(_paths(BASE))


def test_the_base_schema_is_valid():
    Schema.from_dict(copy.deepcopy(BASE))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(WEIRD)), min_size=1,
                max_size=3))
def test_any_mutation_is_a_schema_or_a_typed_error(edits):
    spec = copy.deepcopy(BASE)
    for path, value in edits:
        node = spec
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = copy.deepcopy(value)
        except (KeyError, IndexError, TypeError):
            continue                     # an earlier edit replaced the path's parent
    spec = json.loads(json.dumps(spec))  # what a schema file can hold (NaN and inf included)
    try:
        Schema.from_dict(spec)
    except DpcoreError:
        pass
