"""Factor: known answers and typed errors for bad input."""
import numpy as np
import pytest

from dpcore import _core
from dpcore.domain import Domain
from dpcore.errors import DpcoreTypeError, InvalidArgumentError, TableTooLargeError
from dpcore.factor import Factor

AB = Domain(("a", "b"), (2, 3))


def test_values_take_the_domain_shape():
    f = Factor(AB, np.arange(6))
    assert f.values.dtype == np.float64 and f.values.shape == (2, 3)
    assert f.attributes == ("a", "b")
    assert f.datavector().tolist() == [0, 1, 2, 3, 4, 5]
    assert Factor.zeros(AB).sum() == 0 and Factor.ones(AB).sum() == 6
    assert np.isclose(Factor.uniform(AB).sum(), 1.0)


def test_project_known_answers():
    f = Factor(AB, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    assert f.project("b").values.tolist() == [3.0, 5.0, 7.0]
    assert f.project(("b", "a")).values.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert f.project(()).values == 15.0
    np.testing.assert_allclose(f.project("a", log=True).values,
                               [np.log(1 + np.e + np.e**2), 3 + np.log(1 + np.e + np.e**2)])


def test_arithmetic_broadcasts_with_self_first():
    f = Factor(AB, np.arange(6.0))
    g = Factor(Domain(("c", "a"), (2, 2)), [[1.0, 10.0], [100.0, 1000.0]])
    h = f * g
    assert h.attributes == ("a", "b", "c")
    assert h.values[1, 2, 0] == 5.0 * 10.0 and h.values[0, 1, 1] == 1.0 * 100.0
    assert (f / 2).values[1, 2] == 2.5 and (1 - f).values[0, 1] == 0.0
    assert (f - f).sum() == 0.0 and (-f).values[1, 0] == -3.0


def test_normalize():
    f = Factor(AB, np.arange(1.0, 7.0))
    assert np.isclose(f.normalize(42.0).sum(), 42.0)
    assert np.isclose(f.log().normalize(log=True).logsumexp(), 0.0)
    with pytest.raises(InvalidArgumentError, match="non-zero"):
        Factor.zeros(AB).normalize()
    with pytest.raises(InvalidArgumentError, match="total must be finite and > 0, got -1"):
        f.normalize(-1)


def test_bad_input_raises_typed_errors():
    with pytest.raises(InvalidArgumentError, match=r"shape \(2, 3\)"):
        Factor(AB, np.zeros(5))
    with pytest.raises(DpcoreTypeError, match="dtype"):
        Factor(AB, np.array([["x"] * 3] * 2))
    with pytest.raises(DpcoreTypeError, match="Domain"):
        Factor(("a", "b"), np.zeros(6))
    f = Factor(AB, np.zeros(6))
    with pytest.raises(InvalidArgumentError, match="'z'"):
        f.project(("a", "z"))
    with pytest.raises(InvalidArgumentError, match="distinct"):
        f.project(("a", "a"))
    with pytest.raises(InvalidArgumentError, match="permutation"):
        f.transpose(("a",))
    with pytest.raises(InvalidArgumentError, match="size"):
        f + Factor(Domain(("b",), (4,)), np.zeros(4))
    with pytest.raises(InvalidArgumentError, match="'c'"):
        f.expand(Domain(("c",), (2,)))
    with pytest.raises(TableTooLargeError):
        Factor.zeros(Domain(("a", "b", "c"), (2**22, 2**22, 2**22)))


def test_kernel_rejects_bad_axes_and_caps():
    with pytest.raises(InvalidArgumentError, match="distinct"):
        _core.marginalize(np.zeros((2, 3)), [0, 0])
    with pytest.raises(InvalidArgumentError, match=r"\[0, 2\)"):
        _core.marginalize(np.zeros((2, 3)), [2])
    with pytest.raises(InvalidArgumentError, match=">= 1"):
        _core.checked_cell_count([3, 0])
    with pytest.raises(TableTooLargeError, match="64 bits"):
        _core.checked_cell_count([2**40, 2**40])
    assert _core.checked_cell_count([3, 4]) == 12


def test_logsumexp_is_stable_and_handles_minus_infinity():
    f = Factor(Domain(("a",), (3,)), [1000.0, 1000.0, -np.inf])
    assert np.isclose(f.logsumexp(), 1000.0 + np.log(2.0))
    g = Factor(AB, [[-np.inf] * 3, [0.0, 0.0, 0.0]])
    out = g.project("a", log=True).values
    assert out[0] == -np.inf and np.isclose(out[1], np.log(3.0))
