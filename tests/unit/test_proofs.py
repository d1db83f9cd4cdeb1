"""Every privacy claim in proofs/ is checked by pytest too."""
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
