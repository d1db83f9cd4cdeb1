"""The verifier against forged ledgers: every forgery has a *valid* hash chain (re-chained here
with an independent implementation of the documented scheme) and must still fail."""
import hashlib
import json
import re
from fractions import Fraction

import pytest

from dpcore.accounting import (ExponentialEvent, GaussianEvent, PrivacyFilter, PureDPEvent,
                               SelfComposedEvent, ZCDPEvent, approx_dp_to_zcdp, l2_sensitivity,
                               verify_ledger)
from dpcore.cli import main

DOMAIN = {"age": 10, "sex": 2, "income": 5}


def _digest(obj):
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rechain(doc):
    """Recompute running totals, hashes and the trailer as a forger would."""
    prev = _digest({k: doc[k] for k in ("format", "version", "budget")})
    total = Fraction(0)
    for i, entry in enumerate(doc["entries"]):
        entry["seq"] = i
        total += Fraction(entry["rho"])
        entry["rho_total"] = str(total)
        entry["prev_hash"] = prev
        entry["hash"] = _digest({k: v for k, v in entry.items() if k != "hash"})
        prev = entry["hash"]
    doc["rho_spent"], doc["head_hash"] = str(total), prev
    return doc


def _grid(cost):
    return Fraction(-((-cost.numerator * 2 ** 128) // cost.denominator), 2 ** 128)


@pytest.fixture
def honest():
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    f.open_run(f.budget, {"mechanism": "test", "domain": DOMAIN})
    f.charge(GaussianEvent(20.0), what={"release": "marginal", "attrs": ["age"],
                                         "noise": "discrete_gaussian"})
    f.charge(ExponentialEvent(0.05, 2.0), what={"release": "selection", "candidates": 3,
                                                 "sensitivity": 2.0})
    f.charge(GaussianEvent(15.0), what={"release": "marginal", "attrs": ["age", "sex"],
                                         "noise": "discrete_gaussian"})
    f.close_run("completed")
    doc = f.ledger.to_dict()
    assert verify_ledger(doc).ok
    return doc


def _fails(doc, pattern, **promise):
    report = verify_ledger(json.loads(json.dumps(doc)), **promise)
    assert report.status == "fail", report
    assert any(re.search(pattern, r) for r in report.reasons), report.reasons
    return report


def test_inflated_budget_with_epsilon_and_delta_removed(honest):
    doc = honest
    doc["budget"] = {"rho": "10", "epsilon": None, "delta": None}
    _fails(_rechain(doc), "no \\(epsilon, delta\\) promise")
    # ... and against the auditor's own promise it is an overspend of the promise.
    _fails(_rechain(doc), "more than the promised epsilon", epsilon=1, delta=1e-9)


def test_inflated_budget_with_matching_epsilon_fails_against_the_auditors_promise(honest):
    doc = honest
    rho = Fraction(approx_dp_to_zcdp(8.0, 1e-9))
    doc["budget"] = {"rho": str(rho), "epsilon": (8.0).hex(), "delta": (1e-9).hex()}
    assert verify_ledger(_rechain(doc)).ok          # self-consistent: only a promise catches it
    _fails(doc, "more than the promised epsilon", epsilon=1, delta=1e-9)


def test_budget_beyond_the_filters_cap(honest):
    doc = honest
    doc["budget"] = {"rho": str(10 ** 6), "epsilon": (10.0 ** 7).hex(), "delta": (1e-9).hex()}
    _fails(_rechain(doc), "cap")


def test_sigma_edited_and_rechained(honest):
    doc = honest
    doc["entries"][1]["event"]["sigma"] = (200.0).hex()     # claims 100x less noise cost
    _fails(_rechain(doc), "recorded rho .* recomputed")


def test_exact_marginal_recorded_as_a_zero_cost_event(honest):
    doc = honest
    doc["entries"][3]["event"] = {"type": "ZCDPEvent", "rho": "0"}
    doc["entries"][3]["rho"] = "0"
    _fails(_rechain(doc), "must be charged as GaussianEvent")


def test_marginal_as_pure_dp_event(honest):
    doc = honest
    doc["entries"][3]["event"] = {"type": "PureDPEvent", "epsilon": (2.0 ** -10).hex()}
    doc["entries"][3]["rho"] = str(_grid(Fraction(1, 2 ** 21)))
    _fails(_rechain(doc), "must be charged as GaussianEvent")


@pytest.mark.parametrize("sens", ["1000", "1/1000", "0x1.0000000000001p+0"])
def test_sensitivity_field_edited(honest, sens):
    doc = honest
    entry = doc["entries"][1]
    entry["event"]["sensitivity"] = sens
    s = Fraction.from_float(float.fromhex(sens)) if "0x" in sens else Fraction(sens)
    entry["rho"] = str(_grid(s ** 2 / (2 * Fraction(20.0) ** 2)))   # consistent cost
    _fails(_rechain(doc), "L2 sensitivity 1")


@pytest.mark.parametrize("weights", [[(0.3).hex(), (0.4).hex()], [(0.5).hex()] * 4])
def test_a_marginal_stating_weights_fails_whatever_its_sensitivity(honest, weights):
    # the curator charges one marginal of records an entry; weights claimed a sensitivity
    # below 1 (here 0.5: a marginal four times cheaper) for a release it never makes
    doc = honest
    entry = doc["entries"][1]
    entry["what"]["weights"] = weights
    norm = l2_sensitivity([float.fromhex(w) for w in weights])
    for sens in (norm, 1.0):
        entry["event"]["sensitivity"] = sens.hex()
        entry["rho"] = str(_grid(Fraction(sens) ** 2 / (2 * Fraction(20.0) ** 2)))
        _fails(_rechain(doc), "states no weights")


def test_a_composed_event_of_unrelated_denominators_is_refused_early(honest):
    # many coprime 300-digit denominators once took minutes to sum exactly before failing;
    # no release is charged as a ComposedEvent (alone or repeated), so none is summed (audit
    # 18 M2: 1,000 parts of 75-digit primes, each under the bits allowed a part, took 147 s)
    parts = [{"type": "ExponentialEvent", "epsilon": f"1/{10 ** 299 + 2 * i + 1}",
              "sensitivity": "1"} for i in range(3000)]
    for event in ({"type": "ComposedEvent", "events": parts},
                  {"type": "SelfComposedEvent", "count": 2,
                   "event": {"type": "ComposedEvent", "events": parts}}):
        doc = json.loads(json.dumps(honest))
        doc["entries"][2]["event"] = event
        _fails(_rechain(doc), "no documented release's charge")
    # an honest composition of many Gaussian parts (odd denominators: sigma squared) verifies
    f = PrivacyFilter(10, delta=1e-6)
    from dpcore.accounting import ComposedEvent
    f.charge(ComposedEvent([GaussianEvent(3.0 + i / 7) for i in range(400)]),
             what={"release": "none", "reason": "test"})
    report = verify_ledger(f.ledger.to_dict())
    assert not any("outgrows" in r for r in report.reasons), report.reasons


def test_attributes_must_exist_in_the_runs_domain(honest):
    doc = honest
    doc["entries"][3]["what"]["attrs"] = ["age", "secret_column"]
    _fails(_rechain(doc), "not in the run's domain")


def test_a_marginal_relabelled_as_releasing_nothing(honest):
    doc = honest
    entry = doc["entries"][3]
    entry["event"], entry["rho"] = {"type": "ZCDPEvent", "rho": "0"}, "0"
    entry["what"]["release"] = "none"                 # attrs still name what was released
    _fails(_rechain(doc), "release of nothing")


def test_undocumented_release_and_missing_what(honest):
    doc = honest
    doc["entries"][1]["what"] = {"release": "histogram"}
    _fails(_rechain(doc), "not a documented release")
    doc["entries"][1]["what"] = None
    _fails(_rechain(doc), "must say what it released")


def test_selection_sensitivity_must_match(honest):
    doc = honest
    doc["entries"][2]["what"]["sensitivity"] = 1.0
    _fails(_rechain(doc), "stated sensitivity")


def test_understated_cost_and_overspend(honest):
    doc = honest
    doc["entries"][1]["rho"] = "0"
    _fails(_rechain(doc), "recorded rho 0")
    doc = json.loads(json.dumps(honest))
    doc["entries"].insert(3, {"seq": 0, "kind": "charge",
                              "event": {"type": "GaussianEvent", "sigma": (0.5).hex(),
                                        "sensitivity": "1"},
                              "rho": "2", "rho_total": "0", "what": {
                                  "release": "marginal", "attrs": ["sex"]},
                              "prev_hash": "", "hash": ""})
    _fails(_rechain(doc), "overspent|more than the rho its opening entry allowed")


def test_removed_reordered_or_edited_entries_without_rechaining(honest):
    for change, pattern in [
        (lambda d: d["entries"].pop(1), "seq|chain"),
        (lambda d: d["entries"].reverse(), "seq|chain"),
        (lambda d: d["entries"].pop(), "head_hash|rho_spent"),
        (lambda d: d["entries"][1]["what"].__setitem__("attrs", ["sex"]), "hash"),
    ]:
        doc = json.loads(json.dumps(honest))
        change(doc)
        _fails(doc, pattern)


def test_run_markers_cannot_carry_cost_or_nest(honest):
    doc = honest
    doc["entries"][0]["rho"] = "1/1000"
    _fails(_rechain(doc), "run marker")
    doc = json.loads(json.dumps(honest))
    doc["entries"].insert(2, dict(doc["entries"][0]))
    _fails(_rechain(doc), "still open")


@pytest.mark.parametrize("text", [
    '{"format":"dpcore-ledger","version":2,"budget":{"rho":"0x1p+99999","epsilon":null,"delta":null},'
    '"entries":[],"rho_spent":"0","head_hash":""}',
    '{"format":"dpcore-ledger","version":2,"budget":{"rho":"' + "9" * 5000 + '","epsilon":null,'
    '"delta":null},"entries":[],"rho_spent":"0","head_hash":""}',
    '{"format":"dpcore-ledger","version":2,"budget":{"rho":1' + "0" * 5000 + '}}',
    "[" * 100000 + "]" * 100000,
    '{"format":"dpcore-ledger","version":2,"budget":' + '{"a":' * 3000 + "1" + "}" * 3001,
    '{"format":"dpcore-ledger","version":2,"budget":{"rho":"1/0","epsilon":null,"delta":null},'
    '"entries":[],"rho_spent":"0","head_hash":""}',
    '{"format":"dpcore-ledger","version":2,"budget":{"rho":NaN}}',
    "",
])
def test_hostile_content_never_raises(tmp_path, text):
    path = tmp_path / "l.json"
    path.write_text(text)
    report = verify_ledger(path)
    assert report.status == "fail" and report.reasons
    assert all(len(r) <= 240 for r in report.reasons)
    assert len(report.summary().splitlines()) <= 10


def test_tiny_sigma_and_huge_costs_are_reported_not_raised(honest):
    doc = honest
    doc["entries"][1]["event"]["sigma"] = (5e-324).hex()
    doc["entries"][1]["rho"] = str(_grid(1 / (2 * Fraction(5e-324) ** 2)))
    report = _fails(_rechain(doc), "overspent|not an exact number")
    assert len(report.summary()) < 2000


def test_output_stays_short_on_a_thoroughly_tampered_ledger(honest):
    doc = honest
    for _ in range(200):
        doc["entries"].append(json.loads(json.dumps(doc["entries"][1])))
    for e in doc["entries"]:
        e["rho"] = "1/3"
    report = verify_ledger(doc)
    assert report.status == "fail"
    summary = report.summary()
    assert len(summary.splitlines()) <= 10 and "more problem" in summary


def test_cli_verify_promise_and_exit_codes(tmp_path, honest, capsys):
    path = tmp_path / "l.json"
    path.write_text(json.dumps(honest))
    assert main(["verify", str(path), "--epsilon", "1", "--delta", "1e-9"]) == 0
    assert "given by the auditor" in capsys.readouterr().out
    assert main(["verify", str(path), "--epsilon", "0.5", "--delta", "1e-9"]) == 3
    assert main(["verify", str(path), "--epsilon", "1"]) == 2
    doc = json.loads(json.dumps(honest))
    doc["entries"].pop()          # drop the closing entry: a run that was cut off
    path.write_text(json.dumps(_rechain(doc)))
    assert main(["verify", str(path)]) == 4
    out = capsys.readouterr()
    assert "INCOMPLETE" in out.out and "no closing entry" in out.err


def test_retired_budget_may_be_a_raw_zcdp_event():
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    f.open_run(f.budget, {"mechanism": "test", "domain": DOMAIN})
    f.charge(ZCDPEvent(f.remaining), what={"release": "none", "reason": "residue"})
    f.close_run()
    assert verify_ledger(f.ledger, epsilon=1.0, delta=1e-9).ok


# ------------------------------------------------------------------ session 13 audit
def test_a_rewritten_ledger_fails_against_its_published_head(honest):
    doc = honest
    published = doc["head_hash"]
    assert verify_ledger(json.loads(json.dumps(doc)), head=published).ok
    forged = json.loads(json.dumps(doc))
    del forged["entries"][3]                   # a charge dropped, the chain recomputed
    _rechain(forged)
    assert verify_ledger(forged).ok            # consistent with itself: no anchor, no proof
    _fails(forged, "published head .* is not in this ledger", head=published)


def test_a_ledger_that_grew_still_holds_its_published_head(honest):
    published = honest["head_hash"]
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    f.open_run(f.budget / 2, {"mechanism": "test", "domain": DOMAIN, "seed_fixed": False})
    f.charge(GaussianEvent(20.0), what={"release": "marginal", "attrs": ["age"]})
    f.close_run("completed")
    head = f.ledger.to_dict()["head_hash"]
    f.open_run(f.remaining, {"mechanism": "test", "domain": DOMAIN, "seed_fixed": False})
    f.close_run("completed")
    assert verify_ledger(f.ledger.to_dict(), head=head).ok
    assert not verify_ledger(f.ledger.to_dict(), head=published).ok    # another ledger's
    assert verify_ledger(f.ledger.to_dict(), head=head.upper()).ok
    for bad in ("", "ABC", published[:-1], "g" * 64, 7):
        assert "64 hex digits" in verify_ledger(f.ledger.to_dict(), head=bad).reasons[0]


def test_a_fixed_seed_run_fails_unless_allowed():
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    f.open_run(f.budget, {"mechanism": "test", "domain": DOMAIN, "seed_fixed": True})
    f.charge(GaussianEvent(20.0), what={"release": "marginal", "attrs": ["age"]})
    f.close_run("completed")
    doc = f.ledger.to_dict()
    _fails(doc, "run 0 used a fixed seed")
    report = verify_ledger(doc, allow_fixed_seed=True)
    assert report.ok and any("fixed seed" in n for n in report.notes)


@pytest.mark.parametrize("rho", ["1" + "0" * 399, "1/" + "1" + "0" * 399])
def test_huge_numbers_are_reported_not_raised(honest, rho, tmp_path, capsys):
    doc = honest
    doc["budget"]["rho"] = rho
    report = verify_ledger(json.loads(json.dumps(_rechain(doc))))
    assert report.status == "fail" and "unverifiable" not in " ".join(report.reasons)
    assert "ledger verification: FAIL" in report.summary()
    path = tmp_path / "l.json"
    path.write_text(json.dumps(doc))
    assert main(["verify", "--json", str(path)]) == 3
    out = json.loads(capsys.readouterr().out)            # valid JSON: no Infinity
    assert out["status"] == "fail"


def test_continuing_a_ledger_with_a_raised_budget_is_refused(tmp_path):
    from dpcore.accounting import LedgerError
    path = tmp_path / "life.json"
    f = PrivacyFilter.from_approx_dp(0.5, 1e-9, ledger_path=path)
    f.close()
    doc = json.loads(path.read_text())
    doc["budget"]["rho"] = "1"                 # raised; the file still says epsilon 0.5
    path.write_text(json.dumps(_rechain(doc)))
    with pytest.raises(LedgerError, match="rho=1 is .* more than epsilon=0.5; refusing to continue"):
        PrivacyFilter.resume(path)
    doc["budget"]["rho"] = str(10 ** 5)        # above the cap, whatever the file's epsilon
    doc["budget"]["epsilon"] = doc["budget"]["delta"] = None
    path.write_text(json.dumps(_rechain(doc)))
    with pytest.raises(LedgerError, match="rho must be <= 10000"):
        PrivacyFilter.resume(path)


@pytest.mark.parametrize("seed", [None, 0])
def test_a_seeded_curator_marks_its_charges_and_they_fail(seed):
    # a curator used directly (no Synthesizer run) with a fixed seed: its noise is reproducible
    import numpy as np

    from dpcore import Curator, Dataset, Domain
    domain = Domain(["age", "sex"], [10, 2])
    data = Dataset(np.random.default_rng(0).integers(0, 2, (50, 2)), domain)
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    curator = Curator(data, f, seed=seed)
    curator.measure(("age",), 20.0)
    curator.measure(("age", "sex"), 20.0)
    report = verify_ledger(f.ledger.to_dict())
    if seed is None:
        assert report.ok and not any("fixed seed" in n for n in report.notes), report
    else:
        assert not report.ok and report.reasons == ("a charge outside a run used a fixed seed: "
                                                    "whoever knows "
                                                    "the seed recomputes its noise, so it is "
                                                    "not a private release (tests and demos "
                                                    "only; allow_fixed_seed / "
                                                    "--allow-fixed-seed checks its accounting "
                                                    "alone)",)
        assert verify_ledger(f.ledger.to_dict(), allow_fixed_seed=True).ok


def test_a_seeded_fit_fails_its_own_verify_by_default():
    import pandas as pd

    from mechanisms import Synthesizer
    df = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["u", "v", "v", "u"] * 25})
    schema = {"columns": {"a": {"type": "categorical", "categories": ["x", "y"]},
                          "b": {"type": "categorical", "categories": ["u", "v"]}}}
    synth = Synthesizer.create("mst", epsilon=1.0, seed=3, progress=False).fit(df, schema)
    report = synth.verify()
    assert not report.ok and report.reasons == (report.reasons[0],)
    assert report.reasons[0].startswith("run 0 used a fixed seed")
    assert synth.verify(allow_fixed_seed=True).ok


def test_verify_notes_float_noise_and_a_count_taken_as_public(tmp_path):
    # audit 15 F4 and F6: both pass, with a note saying what the guarantee rests on
    import numpy as np
    import pandas as pd
    from mechanisms.synthesizer import Synthesizer
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.choice(["x", "y"], 60), "b": rng.choice(["u", "v", "w"], 60)})
    schema = {"columns": {"a": {"type": "categorical", "categories": ["x", "y"]},
                          "b": {"type": "categorical", "categories": ["u", "v", "w"]}}}
    float_ledger, count_ledger, plain = (tmp_path / n for n in ("f.json", "c.json", "p.json"))
    Synthesizer.create("independent", epsilon=1.0, noise="gaussian", ledger_path=float_ledger,
                       progress=False).fit(df, schema)
    Synthesizer.create("fem", epsilon=1.0, total=60, rounds=2, ledger_path=count_ledger,
                       progress=False).fit(df, schema)
    Synthesizer.create("independent", epsilon=1.0, ledger_path=plain, progress=False).fit(df, schema)
    report = verify_ledger(float_ledger)
    assert report.ok and any("2 release(s) used float Gaussian noise" in n for n in report.notes)
    report = verify_ledger(count_ledger)
    assert report.ok and any("record count (total = 60) as public" in n for n in report.notes)
    assert verify_ledger(plain).ok and not verify_ledger(plain).notes


def test_the_report_lists_each_run_its_status_and_its_recomputed_rho(tmp_path, capsys):
    """Audit 17 F7: a lifetime ledger with a failed run verified PASS without naming it. The
    report lists every run: mechanism, how it closed (with the recorded reason), and the rho
    its charges add up to as recomputed (not the file's running totals)."""
    f = PrivacyFilter.from_approx_dp(2.0, 1e-9, ledger_path=tmp_path / "life.json")
    sigmas = {"aim": [20.0, 30.0], "mst": [9.0], "fem\x1b[2J": [], "dqrs": [50.0]}
    charges = {m: [GaussianEvent(s) for s in sig] for m, sig in sigmas.items()}
    for k, (mechanism, events) in enumerate(charges.items()):
        f.open_run(f.remaining / 4, {"mechanism": mechanism, "domain": DOMAIN,
                                     "seed_fixed": False})
        for event in events:
            f.charge(event, what={"release": "marginal", "attrs": ["age"]})
        if k == 1:
            f.close_run("failed", reason="writing the outputs: \x1b]0;pwned\x07 OSError")
        elif k < 3:
            f.close_run("completed")
    f.close()
    report = verify_ledger(tmp_path / "life.json")
    assert report.status == "incomplete"                     # the last run never closed
    runs = report.run_summaries
    assert [(r.mechanism, r.status) for r in runs] == [
        ("aim", "completed"), ("mst", "failed"), ("fem\x1b[2J", "completed"), ("dqrs", "open")]
    for r, sig in zip(runs, sigmas.values()):       # rho = 1 / (2 sigma^2) a marginal
        expected = sum((1 / (2 * Fraction(s) ** 2) for s in sig), Fraction(0))
        assert expected <= r.rho <= expected + Fraction(len(sig), 2 ** 128)   # grid rounding
    assert runs[1].reason.startswith("writing the outputs")
    text = report.summary()
    assert "run 1 (mst): FAILED (writing the outputs: ?]0;pwned? OSError)" in text
    assert "(fem?[2J): completed" in text and "\x1b" not in text
    assert "(dqrs): OPEN" in text
    # a run id with escapes reaches the reasons and notes as '?'
    doc = json.loads((tmp_path / "life.json").read_text())
    last_open = max(i for i, e in enumerate(doc["entries"]) if e["kind"] == "open")
    doc["entries"][last_open]["what"]["run"] = "\x1b[31mred"     # quoted: "has no closing entry"
    forged = verify_ledger(doc)
    assert all("\x1b" not in line for line in forged.reasons + forged.notes)
    assert any("run ?[31mred" in line for line in forged.notes)
    assert main(["verify", "--json", "--allow-fixed-seed", str(tmp_path / "life.json")]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in doc["run_summaries"]] == ["completed", "failed", "completed",
                                                          "open"]
    assert Fraction(doc["run_summaries"][0]["rho"]) == runs[0].rho


def test_a_failed_run_among_many_is_always_listed_and_run_ids_are_in_order(tmp_path):
    """Review 17: the summary showed the last 10 runs only, so a failed run 0 of 12 went
    unnamed; and the ids printed were whatever the file said. Every run that did not complete
    is listed; an id out of order fails."""
    f = PrivacyFilter.from_approx_dp(2.0, 1e-9)
    for k in range(12):
        f.open_run(f.remaining / 20, {"mechanism": f"m{k}", "domain": DOMAIN,
                                      "seed_fixed": False})
        f.charge(GaussianEvent(40.0), what={"release": "marginal", "attrs": ["age"]})
        f.close_run("failed" if k == 0 else "completed", reason="boom" if k == 0 else None)
    doc = f.ledger.to_dict()
    report = verify_ledger(doc)
    assert report.ok
    text = report.summary()
    assert "run 0 (m0): FAILED (boom)" in text and "run 11 (m11): completed" in text
    assert "run 1 (m1)" not in text and "(1 other run(s) not shown" in text
    forged = json.loads(json.dumps(doc))
    opening = next(e for e in forged["entries"] if e["kind"] == "open" and e["what"]["run"] == 3)
    opening["what"]["run"] = 7
    _rechain(forged)
    _fails(forged, r"the run is numbered 7, not 3")


def test_a_repair_inside_a_run_is_followed_by_its_interrupted_close(honest):
    """A repair entry is written only when a torn file is continued, and the continuing process
    closes a run left open as interrupted before anything else: a repair in the middle of a
    run that goes on (a forged note of a crash) fails; the real sequences pass."""
    repair = {"seq": 0, "kind": "repair", "what": {"dropped_bytes": 7, "dropped_sha256": "0" * 64},
              "event": None, "rho": "0", "rho_total": "0", "prev_hash": "", "hash": ""}
    doc = json.loads(json.dumps(honest))
    doc["entries"].insert(2, dict(repair))
    _fails(_rechain(doc), "cut off at the repair in entry 2")
    doc = json.loads(json.dumps(honest))            # review 18: a close, but as completed
    doc["entries"][2:] = [dict(repair), doc["entries"][-1]]
    assert doc["entries"][-1]["kind"] == "close"
    _fails(_rechain(doc), "cut off at the repair in entry 2")
    # what resume writes: the repair, then the open run closed as interrupted (twice over
    # when the first continuation was itself torn), or a repair between runs
    run = {"run": doc["entries"][0]["what"]["run"], "status": "interrupted", "reason": "cut"}
    close = {**repair, "kind": "close", "what": run}
    for tail in ([repair], [repair, close], [repair, dict(repair), close]):
        doc = json.loads(json.dumps(honest))
        doc["entries"][2:] = json.loads(json.dumps(tail))
        report = verify_ledger(_rechain(doc))
        assert report.status != "fail", report.reasons
    doc = json.loads(json.dumps(honest))
    doc["entries"].append(dict(repair))
    assert verify_ledger(_rechain(doc)).status == "pass"


@pytest.mark.parametrize("path, text", [
    (("entries", 1, "event", "sigma"), "0x1.3fffffffffffffp+4"),   # 20 - ulp/16: rounds to 20
    (("entries", 1, "event", "sigma"), "0x1.4p+4"),                 # 20, short form
    (("budget", "rho"), None),                                      # unreduced (set below)
    (("entries", 0, "rho"), "-0"),
    (("entries", 1, "event", "sensitivity"), "0001"),
    (("entries", 0, "seq"), 0.0),
])
def test_numbers_must_be_in_the_form_the_ledger_writes(honest, path, text):
    """Audit 18 H1: the verifier read any hex float Python rounds (16 fraction digits: a
    sigma below the real one read as it) and unreduced rationals, where Ledger.load refuses
    them: only float.hex() and str(Fraction) forms, and integer seq and run ids, pass."""
    doc = honest
    target = doc
    for key in path[:-1]:
        target = target[key]
    if text is None:
        p, q = Fraction(target[path[-1]]).as_integer_ratio()
        text = f"{2 * p}/{2 * q}"
    target[path[-1]] = text
    if path[0] == "entries":
        _rechain(doc)
        doc["entries"][0]["seq"] = text if path[-1] == "seq" else 0
    _fails(doc, "canonical|seq is not 0")


def _dqrs_like(total, stated_total):
    """A run with DQRS's public total (or None) and two rejections stating ``stated_total``,
    each priced at (eta / total) max(1, 1 / gamma) for the total it states, rounded up."""
    import math
    f = PrivacyFilter.from_approx_dp(1.0, 1e-9)
    f.open_run(f.budget, {"mechanism": "dqrs", "domain": DOMAIN,
                          "parameters": {"total": total}})
    eps = math.nextafter(0.5 / stated_total * 2, math.inf)
    for _ in range(2):
        f.charge(SelfComposedEvent(PureDPEvent(eps), 3),
                 what={"release": "rejection", "coins": 3, "eta": 0.5, "gamma": 0.5,
                       "total": stated_total})
    f.close_run("completed")
    return f.ledger.to_dict()


def test_a_rejection_is_priced_with_the_runs_public_total():
    """Audit 18 H2: a rejection charge stated its own total (10^6 times the run's public one,
    with an epsilon 10^6 times smaller) and passed."""
    import math
    assert verify_ledger(_dqrs_like(13020.0, 13020.0)).ok
    _fails(_dqrs_like(13020.0, 1.302e10), "not the run's public total")
    doc = _dqrs_like(None, 13020.0)
    assert verify_ledger(doc).ok                    # the count estimated in the run
    doc["entries"][2]["what"]["total"] = 1.302e10   # a later rejection with another total
    doc["entries"][2]["event"]["event"]["epsilon"] = math.nextafter(0.5 / 1.302e10 * 2,
                                                                     math.inf).hex()
    _fails(_rechain(doc), "differs from the run's earlier")


@pytest.mark.parametrize("text", ["0.2", "0.8", "1.1", "5", "1e-5", "1e-6", "1e-9", "1e-10",
                                  "0.3", "2.5e-1", "7e-7"])
def test_a_typed_budget_is_read_as_the_largest_float_at_most_it(text):
    """Audit 18 H3: '0.2' was read as the nearest float, 0.2000000000000000111, so a budget
    made from it and checked against it allowed more than the typed promise."""
    import argparse
    import math
    from decimal import Decimal

    from dpcore.cli.common import parse_budget
    eps, delta = parse_budget(argparse.Namespace(epsilon=text, delta="1e-6"))
    assert Fraction(eps) <= Fraction(Decimal(text)) < Fraction(math.nextafter(eps, math.inf))
    assert Fraction(delta) <= Fraction(Decimal("1e-6"))


def test_a_budget_from_the_nearest_float_above_the_promise_fails_it(tmp_path):
    path = tmp_path / "ledger.json"
    assert main(["ledger", "create", str(path), "--epsilon", "0.2", "--delta", "1e-6"]) == 0
    assert main(["verify", "--epsilon", "0.2", "--delta", "1e-6", str(path)]) == 0
    f = PrivacyFilter.from_approx_dp(0.2, 1e-6)     # the nearest floats: above 0.2
    assert verify_ledger(f.ledger.to_dict(), epsilon=0.2, delta=1e-6).ok
    path2 = tmp_path / "nearest.json"
    path2.write_text(f.ledger.to_text())
    assert main(["verify", "--epsilon", "0.2", "--delta", "1e-6", str(path2)]) != 0


def test_hostile_files_end_quickly(tmp_path):
    """Audit 18 M1 and M3: a file of escaped quotes after an unclosed one was scanned from
    every quote to the end (160 KB: 53 s), and a FIFO blocked verify_ledger in open()."""
    import os
    import subprocess
    import sys
    quotes = tmp_path / "quotes.json"
    quotes.write_text('"' + '\\"' * 200_000)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    script = ("import sys; from dpcore.accounting import verify_ledger\n"
              "for p in sys.argv[1:]: print(verify_ledger(p).status, verify_ledger(p).reasons)")
    done = subprocess.run([sys.executable, "-c", script, str(quotes), str(fifo)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("fail") and lines[1].startswith("fail")
    assert "not a regular file" in lines[1]


def test_notes_quoting_the_file_are_cut_short(honest):
    """Audit 18 LOW: a run id of 200,000 characters was quoted whole in a note (the summary
    ran to 200 KB); reasons were already cut to 240 characters."""
    doc = honest
    doc["entries"][0]["what"]["run"] = "r" * 200_000
    doc["entries"][0]["what"].pop("seed_fixed", None)     # a note that quotes the run id
    report = verify_ledger(_rechain(doc))
    assert report.notes and all(len(n) <= 480 for n in report.notes)
    assert len(report.summary()) < 5_000


def test_structure_a_filter_never_writes_fails(honest):
    """Audit 18 LOW: forged structure that passed; each is refused by PrivacyFilter itself."""
    def forged(edit):
        doc = json.loads(json.dumps(honest))
        edit(doc)
        return _rechain(doc)
    e = lambda doc: doc["entries"]   # noqa: E731
    _fails(forged(lambda d: e(d)[0]["what"].update(rho="9999")), "what the ledger had left")
    _fails(forged(lambda d: e(d)[0]["what"].update(rho="0")), "not in \\(0")
    _fails(forged(lambda d: e(d)[-1]["what"].update(extra=1)), "at most a reason")
    _fails(forged(lambda d: e(d).insert(3, {
        **e(d)[1], "kind": "charge", "event": {"type": "ZCDPEvent", "rho": "0"},
        "rho": "0", "what": {"release": "none"}})), "with a reason")
    repair = {"seq": 0, "kind": "repair", "event": None, "rho": "0", "rho_total": "0",
              "prev_hash": "", "hash": "",
              "what": {"dropped_bytes": 0, "dropped_sha256": "0" * 64}}
    _fails(forged(lambda d: e(d).append(repair)), "a repair names the bytes")
    repair["what"]["dropped_sha256"] = hashlib.sha256(b"").hexdigest()   # what a repair writes
    assert verify_ledger(forged(lambda d: e(d).append(repair))).ok
    report = verify_ledger(forged(lambda d: e(d)[0]["what"].pop("domain")))
    assert report.ok and any("records no domain" in n for n in report.notes)
