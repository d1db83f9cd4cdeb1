"""Domain: validation, views and the JSON format."""
import json

import pytest

from dpcore.domain import Domain
from dpcore.errors import DpcoreTypeError, InvalidArgumentError


def test_views_and_sizes():
    d = Domain(("a", "b", "c"), (2, 3, 4))
    assert d.attrs == ("a", "b", "c") and d.shape == (2, 3, 4)
    assert d.size() == 24 and d.size(["c", "a"]) == 8 and d.size([]) == 1
    assert d.project(["c", "a"]) == Domain(("c", "a"), (4, 2))
    assert d.marginalize(["b", "zzz"]) == Domain(("a", "c"), (2, 4))
    assert d.axes(["c", "a"]) == (2, 0)
    assert d.canonical(("c", "a")) == ("a", "c")
    assert d.project("b").attrs == ("b",)
    assert "a" in d and "z" not in d and ["a"] not in d
    assert d["b"] == 3 and len(d) == 3 and list(d) == ["a", "b", "c"]
    assert d.to_dict() == {"a": 2, "b": 3, "c": 4}


def test_size_is_exact_beyond_64_bits():
    d = Domain([f"x{i}" for i in range(30)], [1000] * 30)
    assert d.size() == 1000**30


def test_equality_hash_merge():
    d = Domain(("a", "b"), (2, 3))
    assert d == Domain(["a", "b"], [2, 3]) and hash(d) == hash(Domain(("a", "b"), (2, 3)))
    assert d != Domain(("b", "a"), (3, 2))
    assert d.merge(Domain(("b", "c"), (3, 5))) == Domain(("a", "b", "c"), (2, 3, 5))
    with pytest.raises(InvalidArgumentError, match="'b' has size 3"):
        d.merge(Domain(("b",), (4,)))
    assert len({d, Domain(("a", "b"), (2, 3))}) == 1


@pytest.mark.parametrize("attrs, shape, error, match", [
    (("a", "a"), (2, 2), InvalidArgumentError, "unique.*'a'"),
    (("a",), (0,), InvalidArgumentError, "'a' must be >= 1, got 0"),
    (("a",), (-3,), InvalidArgumentError, "got -3"),
    (("a", "b"), (2,), InvalidArgumentError, "same length"),
    (("a",), (2.0,), DpcoreTypeError, "'a' must be an integer"),
    (("a",), (True,), DpcoreTypeError, "must be an integer"),
    (("",), (2,), InvalidArgumentError, "non-empty"),
    ((1,), (2,), InvalidArgumentError, "non-empty strings"),
    (("a",), 2, DpcoreTypeError, "shape must be an iterable"),
])
def test_bad_domains(attrs, shape, error, match):
    with pytest.raises(error, match=match):
        Domain(attrs, shape)


def test_unknown_attributes():
    d = Domain(("a", "b"), (2, 3))
    for call in (lambda: d.project(["z"]), lambda: d.axes("z"), lambda: d["z"],
                 lambda: d.canonical(["a", "z"])):
        with pytest.raises(InvalidArgumentError, match="'z' is not in the domain"):
            call()
    with pytest.raises(InvalidArgumentError, match="must not repeat"):
        d.project(["a", "a"])


def test_from_json(tmp_path):
    path = tmp_path / "domain.json"
    path.write_text(json.dumps({"age": 32, "sex": 2}))
    assert Domain.from_json(path) == Domain(("age", "sex"), (32, 2))
    path.write_text("[1, 2]")
    with pytest.raises(InvalidArgumentError, match="JSON object"):
        Domain.from_json(path)
    path.write_text("{nope")
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        Domain.from_json(path)
    path.write_text('{"age": "32"}')
    with pytest.raises(DpcoreTypeError, match="'age' must be an integer"):
        Domain.from_json(path)


def test_adult_domain_file():
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "data/adult/adult-domain.json"
    d = Domain.from_json(path)
    assert len(d) == 15 and d["age"] == 32 and d.attrs[-1] == "income>50K"
