"""PrivacyFilter: exact charging, validate-then-commit refusal, ledger persistence."""
import json
import math
from fractions import Fraction

import pytest

from dpcore.accounting import (BudgetExceededError, ComposedEvent, ExponentialEvent,
                               GaussianEvent, Ledger, PrivacyFilter, PureDPEvent,
                               SelfComposedEvent, ZCDPEvent, approx_dp_to_zcdp,
                               verify_ledger)
from dpcore.accounting._numbers import COST_GRID, round_cost_up
from dpcore.errors import DpcoreTypeError, InvalidArgumentError


def test_gaussian_charge_is_exact_rational_of_the_float_sigma():
    f = PrivacyFilter(10)
    sigma = 0.1 + 0.2  # 0.30000000000000004: the float actually used
    cost = f.charge(GaussianEvent(sigma))
    exact = 1 / (2 * Fraction(sigma) ** 2)
    assert cost == round_cost_up(exact) and exact <= cost < exact + COST_GRID
    assert cost != round_cost_up(Fraction(1) / (2 * Fraction(3, 10) ** 2))
    assert f.spent == cost and f.remaining == 10 - cost


def test_exponential_and_pure_costs():
    f = PrivacyFilter(10)
    assert f.charge(ExponentialEvent(0.5, 3.0)) == Fraction(1, 32)
    assert f.charge(PureDPEvent(2)) == 2
    assert f.charge(ZCDPEvent(Fraction(1, 3))) == round_cost_up(Fraction(1, 3))
    assert f.charge(SelfComposedEvent(GaussianEvent(2), 4)) == Fraction(1, 2)
    assert f.charge(ComposedEvent([GaussianEvent(1.0, 2), ExponentialEvent(2.0)])) == Fraction(5, 2)
    assert f.spent == Fraction(1, 32) + 2 + round_cost_up(Fraction(1, 3)) + Fraction(1, 2) + Fraction(5, 2)


def test_budget_boundary_is_exact():
    f = PrivacyFilter(Fraction(1, 2))
    assert f.charge(GaussianEvent(2.0)) == Fraction(1, 8)
    assert f.charge(GaussianEvent(2.0)) == Fraction(1, 8)
    assert f.charge(GaussianEvent(math.sqrt(2) * 1.0000001)) < Fraction(1, 4)
    with pytest.raises(BudgetExceededError):
        f.charge(ZCDPEvent(f.remaining + Fraction(1, 10 ** 30)))
    assert f.charge(ZCDPEvent(f.remaining)) > 0
    assert f.remaining == 0 and f.spent == f.budget
    with pytest.raises(BudgetExceededError):
        f.charge(ZCDPEvent(Fraction(1, 10 ** 40)))
    assert f.charge(ZCDPEvent(0)) == 0  # free events still fit


def test_refusal_changes_nothing(tmp_path):
    path = tmp_path / "ledger.json"
    f = PrivacyFilter(Fraction(1, 4), ledger_path=path)
    f.charge(GaussianEvent(2.0), what={"op": "measure", "attrs": ["a"]})
    before_text = path.read_text()
    before_ledger = f.ledger
    assert not f.can_afford(GaussianEvent(1.0))
    with pytest.raises(BudgetExceededError, match="budget"):
        f.charge(GaussianEvent(1.0), what={"op": "measure"})
    assert path.read_text() == before_text
    assert f.ledger is before_ledger and f.spent == Fraction(1, 8)
    # A refusal does not exhaust the filter: a smaller charge still fits.
    assert f.charge(GaussianEvent(2.0)) == Fraction(1, 8)


def test_sigma_zero_fails_closed():
    f = PrivacyFilter(10 ** 3)
    event = GaussianEvent(0.0)
    assert f.cost(event) == math.inf and not f.can_afford(event)
    with pytest.raises(BudgetExceededError, match="infinite"):
        f.charge(event)
    with pytest.raises(BudgetExceededError):
        f.charge(SelfComposedEvent(GaussianEvent(0), 2))
    assert f.spent == 0 and len(f.ledger) == 0


def test_ledger_saved_inside_charge(tmp_path):
    path = tmp_path / "l.json"
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9, ledger_path=path)
    assert Ledger.load(path).budget == Fraction(approx_dp_to_zcdp(1.0, 1e-9))
    f.charge(GaussianEvent(25.0), what={"release": "marginal", "attrs": ("age", "sex")})
    on_disk = Ledger.load(path)  # saved before charge() returned, i.e. before any noise
    assert on_disk == f.ledger and len(on_disk) == 1
    assert on_disk.entries[0].what == {"release": "marginal", "attrs": ["age", "sex"]}
    assert not list(tmp_path.glob(".ledger-*"))  # no temp files left behind
    report = verify_ledger(path)
    assert report.ok, report.reasons
    assert report.rho_spent == round_cost_up(Fraction(1, 1250)) and report.epsilon < 1


def test_existing_ledger_is_not_overwritten_and_can_be_resumed(tmp_path):
    path = tmp_path / "l.json"
    f = PrivacyFilter(1, delta=1e-6, ledger_path=path)
    f.charge(ZCDPEvent(Fraction(3, 4)))
    with pytest.raises(InvalidArgumentError, match="already exists"):
        PrivacyFilter(1, ledger_path=path)
    f.close()
    g = PrivacyFilter.resume(path)
    assert g.spent == Fraction(3, 4) and g.delta == 1e-6
    with pytest.raises(BudgetExceededError):
        g.charge(ZCDPEvent(Fraction(1, 2)))
    g.charge(ZCDPEvent(Fraction(1, 4)))
    g.close()
    assert Ledger.load(path).spent == 1


def test_a_run_cannot_spend_past_its_own_cap_or_the_lifetime_budget():
    f = PrivacyFilter(1, delta=1e-6)
    f.open_run(Fraction(1, 2), {"mechanism": "a"})
    assert f.remaining == Fraction(1, 2)
    with pytest.raises(BudgetExceededError):
        f.charge(ZCDPEvent(Fraction(3, 4)))
    f.charge(ZCDPEvent(Fraction(1, 2)))
    assert f.remaining == 0
    f.close_run()
    assert f.remaining == Fraction(1, 2)
    with pytest.raises(BudgetExceededError, match="lifetime"):
        f.open_run(Fraction(3, 4), {"mechanism": "b"})
    assert len(f.ledger) == 3          # the refused run wrote nothing
    with pytest.raises(InvalidArgumentError, match="no run is open"):
        f.close_run()


@pytest.mark.parametrize("kwargs, match", [
    (dict(rho=0), "rho must be > 0"),
    (dict(rho=-1), "rho must be > 0"),
    (dict(rho=float("nan")), "NaN"),
    (dict(rho=float("inf")), "finite"),
    (dict(rho=10 ** 6), "rho must be <="),
    (dict(rho=1, delta=0), r"delta must be in \(0, 1\)"),
    (dict(rho=1, delta=1.0), r"delta must be in \(0, 1\)"),
    (dict(rho=1, epsilon=1.0), "delta must be given"),
    (dict(rho=1, epsilon=0.5, delta=1e-6), "more than epsilon"),
])
def test_bad_budgets(kwargs, match):
    rho = kwargs.pop("rho")
    with pytest.raises(InvalidArgumentError, match=match):
        PrivacyFilter(rho, **kwargs)


def test_bad_charges():
    f = PrivacyFilter(1)
    with pytest.raises(DpcoreTypeError):
        f.charge(0.5)
    with pytest.raises(DpcoreTypeError, match="JSON"):
        f.charge(ZCDPEvent(0.1), what={"x": object()})
    with pytest.raises(DpcoreTypeError, match="JSON"):
        f.charge(ZCDPEvent(0.1), what={"x": float("nan")})
    assert f.spent == 0


def test_from_approx_dp_records_epsilon_delta():
    f = PrivacyFilter.from_approx_dp(1, 1e-9)
    assert f.epsilon == 1 and f.delta == 1e-9
    assert f.budget == Fraction(approx_dp_to_zcdp(1, 1e-9))
    report = verify_ledger(f.ledger)
    assert report.ok and report.epsilon == 0.0


def test_ledger_json_is_exact_and_readable(tmp_path):
    f = PrivacyFilter(100, ledger_path=tmp_path / "l.json")
    f.charge(GaussianEvent(0.1), what=None)
    data = json.loads((tmp_path / "l.json").read_text())
    entry = data["entries"][0]
    assert entry["event"] == {"type": "GaussianEvent", "sigma": (0.1).hex(), "sensitivity": "1"}
    assert Fraction(entry["rho"]) == round_cost_up(1 / (2 * Fraction(0.1) ** 2))


def test_resume_refuses_a_ledger_with_understated_costs(tmp_path):
    from dpcore.accounting import LedgerError
    path = tmp_path / "l.json"
    forged = Ledger(1).appended("charge", GaussianEvent(0.5), Fraction(1, 100), {"release": "none"})
    forged.save(path)  # hash chain is consistent, but the recorded cost is a lie (true cost 2)
    with pytest.raises(LedgerError, match="recorded rho"):
        PrivacyFilter.resume(path)
