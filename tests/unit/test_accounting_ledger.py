"""Ledger save/load validation and the independent verifier's tamper detection."""
import json
from fractions import Fraction

import pytest

from dpcore.accounting import (ComposedEvent, ExponentialEvent, GaussianEvent, Ledger,
                               LedgerError, PrivacyFilter, SelfComposedEvent, ZCDPEvent,
                               verify_ledger)


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "ledger.json"
    f = PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=path)
    f.charge(GaussianEvent(20.0), what={"op": "measure", "attrs": ["age"]})
    f.charge(ExponentialEvent(0.05, 2.0), what={"op": "select", "candidates": 12})
    f.charge(ComposedEvent([GaussianEvent(30.0, 2 ** 0.5), SelfComposedEvent(ZCDPEvent(Fraction(1, 10 ** 5)), 3)]))
    return path, f


def _edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def test_round_trip_and_verify(saved):
    path, f = saved
    loaded = Ledger.load(path)
    assert loaded == f.ledger and loaded.spent == f.spent and loaded.delta == 1e-6
    assert [e.what for e in loaded.entries] == [e.what for e in f.ledger.entries]
    report = verify_ledger(path)
    assert report.ok and report.reasons == ()
    assert report.rho_spent == f.spent and report.rho_budget == f.budget
    assert 0 < report.epsilon < 1 and report.entries == 3
    assert "PASS" in report.summary()
    assert verify_ledger(loaded).ok and verify_ledger(loaded.to_dict()).ok


@pytest.mark.parametrize("change, load_match, verify_match", [
    (lambda d: d["entries"][0]["event"].__setitem__("sigma", (21.0).hex()), "hash", "recomputed"),
    (lambda d: d["entries"].pop(1), "seq", "seq"),
    (lambda d: d["entries"].pop(), "rho_spent", "head_hash|rho_spent"),
    (lambda d: d["entries"][1].__setitem__("rho", "0"), "running sum", "recorded rho 0"),
    (lambda d: d["budget"].__setitem__("rho", "1000"), "chain", "prev_hash"),
    (lambda d: d.__setitem__("rho_spent", "0"), "rho_spent", "rho_spent"),
    (lambda d: d["entries"][0].__setitem__("what", {"op": "nothing"}), "hash", "hash"),
    (lambda d: d["entries"].reverse(), "seq", "seq"),
])
def test_tampering_fails_load_and_verification(saved, change, load_match, verify_match):
    path, _ = saved
    _edit(path, change)
    with pytest.raises(LedgerError, match=load_match):
        Ledger.load(path)
    report = verify_ledger(path)
    assert not report.ok
    assert any(__import__("re").search(verify_match, r) for r in report.reasons), report.reasons


def test_consistently_forged_overspend_is_caught_by_recomputation(saved):
    """An attacker who edits sigma AND recomputes rho, totals and hashes still cannot hide an
    overspend: the verifier recomputes the sum against the budget."""
    path, f = saved
    forged = Ledger(f.budget, epsilon=f.epsilon, delta=f.delta)
    for entry in f.ledger.entries:
        forged = forged.appended(entry.event, entry.rho, entry.what)
    forged = forged.appended(GaussianEvent(0.5), Fraction(2), None)  # true cost 2 > budget
    report = verify_ledger(forged)
    assert not report.ok and any("overspent" in r for r in report.reasons)
    # and a recorded rho that understates the event's true cost is caught
    lying = Ledger(f.budget).appended(GaussianEvent(0.5), Fraction(1, 10 ** 6), None)
    report = verify_ledger(lying)
    assert not report.ok and any("recomputed 2" in r for r in report.reasons)


def test_truncated_and_garbage_files(saved, tmp_path):
    path, _ = saved
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(LedgerError, match="not valid JSON"):
        Ledger.load(path)
    report = verify_ledger(path)
    assert not report.ok and "not valid JSON" in report.reasons[0]
    other = tmp_path / "x.json"
    other.write_text('{"format": "something-else"}')
    with pytest.raises(LedgerError):
        Ledger.load(other)
    assert not verify_ledger(other).ok
    assert not verify_ledger(tmp_path / "missing.json").ok
    other.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(LedgerError):
        Ledger.load(other)


def test_non_canonical_numbers_are_rejected(saved):
    path, _ = saved
    _edit(path, lambda d: d["entries"][0]["event"].__setitem__("sigma", "0x1.4p+4"))
    with pytest.raises(LedgerError, match="canonical|hash"):
        Ledger.load(path)


def test_sigma_zero_entry_is_reported(saved):
    _, f = saved
    forged = f.ledger.appended(GaussianEvent(0.0), Fraction(0), None)
    report = verify_ledger(forged)
    assert not report.ok and any("infinite" in r for r in report.reasons)


def test_epsilon_reported_at_ledger_delta_only_when_delta_known():
    f = PrivacyFilter(1)
    f.charge(ZCDPEvent(Fraction(1, 2)))
    report = verify_ledger(f.ledger)
    assert report.ok and report.epsilon is None and report.delta is None
    g = PrivacyFilter(1, delta=1e-6)
    g.charge(ZCDPEvent(Fraction(1, 2)))
    report = verify_ledger(g.ledger)
    assert report.epsilon == pytest.approx(5.221534444530169, rel=1e-12)
