"""Every privacy claim in proofs/ is checked by pytest too."""
from fractions import Fraction

import pytest

import proofs
from proofs.__main__ import main


@pytest.mark.parametrize("name", proofs.MODULES)
def test_claim(name):
    module = proofs.load(name)
    assert module.__doc__ and "Proof" in module.__doc__ and "Precondition" in module.__doc__
    assert module.CLAIM
    module.check()


def test_runner_reports_failures_without_crashing(monkeypatch, capsys):
    module = proofs.load("aim_l1_error")

    def broken():
        raise AssertionError("deliberately broken")

    monkeypatch.setattr(module, "check", broken)
    result = proofs.run("aim_l1_error")
    assert not result.ok and "deliberately broken" in result.error
    assert main(["aim_l1_error"]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert main(["no_such_claim"]) == 2


def test_runner_passes_a_good_claim(capsys):
    assert main(["mwem_pgm_budget"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "1/1 claims verified" in out


# A claim's check must fail when the constant or the code it vouches for is wrong: break one
# thing at a time and expect the relevant claim to fail.

def _halve_cost(monkeypatch, event_type):
    """Make ZCDPAccountant report half the true cost of ``event_type`` events."""
    from dpcore.accounting import ZCDPAccountant
    for name in ("rho", "exact_rho"):
        original = getattr(ZCDPAccountant, name, None)
        if original is None:
            continue

        def broken(self, event, _original=original):
            cost = _original(self, event)
            return cost / 2 if isinstance(event, event_type) else cost

        monkeypatch.setattr(ZCDPAccountant, name, broken)


def test_gaussian_claim_catches_a_wrong_constant(monkeypatch):
    from dpcore.accounting import GaussianEvent
    _halve_cost(monkeypatch, GaussianEvent)  # Delta^2/(4 sigma^2) instead of Delta^2/(2 sigma^2)
    result = proofs.run("gaussian")
    assert not result.ok and "AssertionError" in result.error


def test_exponential_claim_catches_a_wrong_constant(monkeypatch):
    from dpcore.accounting import ExponentialEvent
    _halve_cost(monkeypatch, ExponentialEvent)  # eps^2/16 instead of eps^2/8
    result = proofs.run("exponential_mechanism")
    assert not result.ok and "AssertionError" in result.error


def test_composition_claim_catches_a_filter_that_understates_costs(monkeypatch):
    from dpcore.accounting import PrivacyFilter
    original = PrivacyFilter.cost
    # one part in 1e30 less than the true cost: only the exhaustive boundary cases can tell
    monkeypatch.setattr(PrivacyFilter, "cost",
                        lambda self, event: original(self, event) * (1 - Fraction(1, 10 ** 30)))
    result = proofs.run("zcdp_composition")
    assert not result.ok and "AssertionError" in result.error


def test_mst_calibration_claim_catches_an_overshooting_share(monkeypatch):
    import mechanisms.mst as mst
    from dpcore.accounting.calibration import gaussian_sigma
    # calibrate each clique to its share plus one part in 1e9
    monkeypatch.setattr(mst, "gaussian_sigma",
                        lambda rho, *a: gaussian_sigma(rho * (1 + Fraction(1, 10 ** 9)), *a))
    result = proofs.run("mst_calibration")
    assert not result.ok and "AssertionError" in result.error
