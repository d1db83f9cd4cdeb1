"""Small helpers shared by the proof modules."""
import sympy as sp


def assert_equal(lhs, rhs, what: str) -> None:
    """Fail unless sympy proves lhs - rhs == 0."""
    diff = sp.simplify(sp.expand(lhs - rhs))
    if diff != 0:
        diff = sp.simplify(sp.powsimp(sp.expand_log(diff, force=True), force=True))
    if diff != 0:
        raise AssertionError(f"{what}: lhs - rhs simplifies to {diff}, not 0")


def assert_true(condition, what: str) -> None:
    if condition is not True and not (hasattr(condition, "__bool__") and bool(condition)):
        raise AssertionError(what)
