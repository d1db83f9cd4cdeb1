"""The ledger file: round trips, its line layout, O(1) appends, torn writes, bounded numbers."""
import contextlib
import hashlib
import json
import os
from fractions import Fraction

import pytest

from dpcore.accounting import (ExponentialEvent, GaussianEvent, Ledger, LedgerError,
                               LedgerInUseError, PrivacyFilter, ZCDPEvent, verify_ledger)
from dpcore.accounting._numbers import COST_GRID
from dpcore.errors import InvalidArgumentError

MARGINAL = {"release": "marginal", "attrs": ["age"], "noise": "discrete_gaussian"}
SELECT = {"release": "selection", "candidates": 12, "sensitivity": 2.0}


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "ledger.json"
    f = PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=path)
    f.open_run(f.budget, {"mechanism": "test", "domain": {"age": 10, "sex": 2}})
    f.charge(GaussianEvent(20.0), what=MARGINAL)
    f.charge(ExponentialEvent(0.05, 2.0), what=SELECT)
    f.charge(ZCDPEvent(Fraction(1, 10 ** 5)), what={"release": "none", "reason": "residue"})
    f.close_run("completed", outputs={"synth.csv": "0" * 64})
    f.close()
    return path, f


def test_round_trip_and_verify(saved):
    path, f = saved
    loaded = Ledger.load(path)
    assert loaded == f.ledger and loaded.spent == f.spent and loaded.delta == 1e-6
    assert [e.kind for e in loaded.entries] == ["open", "charge", "charge", "charge", "close"]
    assert json.loads(path.read_text()) == f.ledger.to_dict()  # one valid JSON document
    report = verify_ledger(path)
    assert report.ok and report.status == "pass" and report.reasons == ()
    assert report.rho_spent == f.spent and report.rho_budget == f.budget and report.runs == 1
    assert 0 < report.epsilon < 1 and report.entries == 5
    assert "PASS" in report.summary() and "taken from the ledger file" in report.summary()
    assert verify_ledger(loaded).ok and verify_ledger(loaded.to_dict()).ok


def test_costs_are_rounded_up_onto_the_grid(saved):
    _, f = saved
    for entry in f.ledger.charges:
        exact = Fraction(1, 2 * Fraction(20.0) ** 2) if entry.seq == 1 else None
        assert (entry.rho / COST_GRID).denominator == 1
        if exact is not None:
            assert exact <= entry.rho < exact + COST_GRID


def test_many_distinct_sigmas_keep_numbers_small(tmp_path):
    """~155 distinct float sigmas used to push exact totals past Python's 4300-digit limit."""
    f = PrivacyFilter(100, delta=1e-9, ledger_path=tmp_path / "l.json")
    for i in range(400):
        f.charge(GaussianEvent(10.0 + i / 7.0), what=MARGINAL)
    assert len(str(f.spent)) < 100
    f.close()
    assert Ledger.load(tmp_path / "l.json").spent == f.spent


def test_append_writes_one_line(tmp_path):
    path = tmp_path / "l.json"
    f = PrivacyFilter(1, delta=1e-6, ledger_path=path)
    f.charge(GaussianEvent(30.0), what=MARGINAL)
    lines = path.read_text().splitlines()
    f.charge(GaussianEvent(31.0), what=MARGINAL)
    after = path.read_text().splitlines()
    assert after[:-1][:len(lines) - 1] == lines[:-1]      # nothing before the trailer changed
    assert len(after) == len(lines) + 1 and after[-2].startswith(',{"seq":1,')


def test_torn_append_is_read_back_as_the_committed_prefix(saved, tmp_path):
    path, f = saved
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    for cut in (len(text) - 5, len("".join(lines[:-1])) + 3, len("".join(lines[:-2])) + 40,
                len("".join(lines[:-1]))):
        torn = tmp_path / f"torn{cut}.json"
        torn.write_text(text[:cut])
        ledger = Ledger.load(torn)
        assert ledger.torn
        report = verify_ledger(torn)
        assert report.status == "incomplete", (cut, report.reasons)
        assert report.rho_spent == ledger.spent
    # A file cut inside the header is not a ledger at all.
    bad = tmp_path / "bad.json"
    bad.write_text(text[:30])
    with pytest.raises(LedgerError):
        Ledger.load(bad)
    assert verify_ledger(bad).status == "fail"


def test_continuing_a_torn_file_needs_repair_and_records_it(saved):
    # A file that ends in a partial line: a crash mid-append, or a cut after the fact (which
    # removes committed entries and looks the same). Audit 15: continuing used to cut it
    # silently and the rewritten file verified PASS with the cut entries gone.
    path, f = saved
    lines = path.read_text().splitlines(keepends=True)
    partial = lines[-2][:30]
    path.write_text("".join(lines[:-2]) + partial)           # cut inside the close entry
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="ends without its trailer.*--repair"):
        PrivacyFilter.resume(path)
    assert path.read_bytes() == before                       # refused: nothing rewritten
    assert verify_ledger(path).status == "incomplete"
    g = PrivacyFilter.resume(path, repair=True)
    g.close()
    ledger = Ledger.load(path)
    assert not ledger.torn and json.loads(path.read_text())
    # the repair is recorded with what it discarded, then the open run is closed as interrupted
    repair, close = ledger.entries[-2:]
    assert repair.kind == "repair" and repair.rho == 0
    assert repair.what == {"dropped_bytes": len(partial.encode()),
                           "dropped_sha256": hashlib.sha256(partial.encode()).hexdigest()}
    assert close.kind == "close" and close.what["status"] == "interrupted"
    report = verify_ledger(path)
    assert report.status == "pass" and "--repair" in report.notes[0]
    assert "--repair" in report.summary()
    with pytest.raises(InvalidArgumentError, match="repair must be True or False"):
        PrivacyFilter.resume(path, repair="yes")


def _needs_and_takes_a_repair(path):
    """A torn file: INCOMPLETE, refused by a plain resume, and PASS once repaired, with the
    repair the first note."""
    assert verify_ledger(path).status == "incomplete"
    with pytest.raises(LedgerError, match="ends without its trailer"):
        PrivacyFilter.resume(path)
    PrivacyFilter.resume(path, repair=True).close()
    report = verify_ledger(path)
    assert report.status == "pass" and "--repair" in report.notes[0]


@contextlib.contextmanager
def _writes_cut_half_way(monkeypatch):
    """Inside: every ledger write stops half way with an I/O error (a crash mid-write)."""
    from dpcore.accounting import journal
    real = journal._write_at

    def crash(fd, data, at):
        real(fd, data[:len(data) // 2], at)
        raise OSError(5, "Input/output error")
    with monkeypatch.context() as patch:
        patch.setattr(journal, "_write_at", crash)
        yield


def test_a_repair_cut_short_by_a_crash_still_needs_repair(saved, monkeypatch):
    # review 15 H1: the repaired file (with its trailer) was written before the repair entry,
    # so a crash between the two left a file that verified PASS with no record of the repair.
    # Now the repair entry and the trailer are one write after the last whole entry.
    path, f = saved
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:25])     # cut inside an entry
    with _writes_cut_half_way(monkeypatch), pytest.raises(OSError):
        PrivacyFilter.resume(path, repair=True)
    _needs_and_takes_a_repair(path)


def test_a_crash_that_cuts_a_character_in_two_can_be_repaired(tmp_path):
    # review 15 M5: entries keep non-ASCII text; a cut inside a multi-byte character made the
    # whole file "not UTF-8" for both the writer and the verifier
    path = tmp_path / "l.json"
    f = PrivacyFilter.from_approx_dp(1.0, 1e-6, ledger_path=path)
    f.open_run(f.budget, {"mechanism": "test", "domain": {"âge": 10}})
    f.charge(GaussianEvent(20.0), what={"release": "marginal", "attrs": ["âge"]})
    f.close()
    raw = path.read_bytes()
    cut = raw.rindex("âge".encode()) + 1                      # inside the two-byte â
    path.write_bytes(raw[:cut])
    assert verify_ledger(path).status == "incomplete"
    PrivacyFilter.resume(path, repair=True).close()
    ledger = Ledger.load(path)
    repair = next(e for e in ledger.entries if e.kind == "repair")
    assert repair.what["dropped_bytes"] == cut - (raw[:cut].rindex(b"\n") + 1)
    assert verify_ledger(path).status == "pass"


def test_a_torn_ledger_is_not_saved_as_a_whole_copy(saved, tmp_path):
    # review 15 L1: Ledger.load(cut).save(copy) made a cut ledger that verified PASS, no note
    path, f = saved
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:25])
    torn = Ledger.load(path)
    assert torn.torn
    with pytest.raises(LedgerError, match="ends without its trailer"):
        torn.save(tmp_path / "copy.json")
    assert not (tmp_path / "copy.json").exists()


def test_bytes_after_a_whole_ledger_are_never_dropped_silently(saved):
    # a complete ledger followed by a partial non-UTF-8 line: torn (INCOMPLETE), and only a
    # recorded repair continues it (the verifier and the writer read it alike)
    path, f = saved
    path.write_bytes(path.read_bytes() + b"\xc3")
    _needs_and_takes_a_repair(path)


def test_a_cut_at_a_line_boundary_needs_repair_too(saved):
    # no partial line at all, but no trailer: a crash between the append's truncation and
    # its write, or a cut of whole entries; repaired with 0 bytes discarded
    path, f = saved
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-4]))
    with pytest.raises(LedgerError, match="ends without its trailer"):
        PrivacyFilter.resume(path)
    PrivacyFilter.resume(path, repair=True).close()
    assert Ledger.load(path).entries[-2].what["dropped_bytes"] == 0


def test_a_torn_trailer_alone_is_mended_without_repair(saved):
    # every entry is whole when only the trailer line is partial: nothing can be missing
    path, f = saved
    text = path.read_text()
    cut = text.rindex("]") + 5
    path.write_text(text[:cut])
    PrivacyFilter.resume(path).close()
    assert all(e.kind != "repair" for e in Ledger.load(path).entries)
    assert verify_ledger(path).status == "pass"


def _reformat(path):
    """The ledger as a person or a tool may rewrite it: indented, keys sorted. Still the same
    record (it verifies), no longer dpcore's line format."""
    pretty = json.dumps(json.loads(path.read_text()), indent=2, sort_keys=True)
    path.write_text(pretty)
    assert verify_ledger(path).status == "pass"
    return pretty


def _in_line_format(path):
    return path.read_text() == Ledger.load(path).to_text()


def test_a_crash_while_a_reformatted_ledger_is_rewritten_loses_nothing(saved, monkeypatch):
    # The rewrite into line format used to truncate the file, then write it: a crash between
    # left a prefix of the line format that --repair accepted, forgetting spent budget.
    path, f = saved
    os.chmod(path, 0o640)
    pretty = _reformat(path)
    with _writes_cut_half_way(monkeypatch), pytest.raises(OSError):
        PrivacyFilter.resume(path)
    assert path.read_text() == pretty and os.listdir(path.parent) == [path.name]
    g = PrivacyFilter.resume(path)       # no repair needed, nothing forgotten
    assert g.spent == f.spent and g.ledger == f.ledger
    g.close()
    assert Ledger.load(path) == f.ledger and _in_line_format(path)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_the_rewritten_ledger_keeps_its_lock_and_its_link(saved, tmp_path):
    path, f = saved
    link = tmp_path / "link.json"
    link.symlink_to(path)
    _reformat(path)
    g = PrivacyFilter.resume(link)
    assert link.is_symlink() and _in_line_format(path)
    with pytest.raises(LedgerInUseError):          # the lock moved to the new file
        PrivacyFilter.resume(path)
    g.charge(ZCDPEvent(Fraction(1, 10 ** 5)), what={"release": "none"})
    g.close()
    assert Ledger.load(path) == g.ledger and len(g.ledger) == len(f.ledger) + 1


def test_a_rewritten_ledger_keeps_its_owner_and_a_hard_linked_one_is_refused(saved, tmp_path):
    # review 16: a new file in place of a hard-linked ledger would leave the other name on the
    # old record (a later run through it would see less spent); the owner must carry over
    path, f = saved
    pretty = _reformat(path)
    alias = tmp_path / "alias.json"
    os.link(path, alias)
    with pytest.raises(LedgerError, match="2 names"):
        PrivacyFilter.resume(path)
    assert path.read_text() == pretty and os.path.samefile(path, alias)
    alias.unlink()
    if os.geteuid() == 0:                     # only root can give a file away
        os.chown(path, 1234, 4321)
        PrivacyFilter.resume(path).close()
        assert (os.stat(path).st_uid, os.stat(path).st_gid) == (1234, 4321)
        assert _in_line_format(path)


def test_a_run_that_opened_the_ledger_before_it_was_rewritten_is_refused(saved, monkeypatch):
    # Run B opens the file; run A rewrites it (rename) and finishes; B then gets the old file's
    # lock, free again. B must not append to a file no path names any more.
    from dpcore.accounting import journal
    path, f = saved
    _reformat(path)
    real = journal._lock
    calls = []

    def a_runs_in_between(fd, where):
        calls.append(where)
        if len(calls) == 1:              # B has opened the old file, A runs now
            PrivacyFilter.resume(path).close()
        real(fd, where)
    monkeypatch.setattr(journal, "_lock", a_runs_in_between)
    with pytest.raises(LedgerInUseError, match="rewritten by another run"):
        PrivacyFilter.resume(path)
    assert len(calls) == 2 and Ledger.load(path) == f.ledger


def test_forged_repair_entries_fail_verification(saved):
    from dpcore.accounting.ledger import sha256_of
    path, f = saved
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]) + lines[-2][:30])
    PrivacyFilter.resume(path, repair=True).close()
    good = json.loads(path.read_text())
    k = next(i for i, e in enumerate(good["entries"]) if e["kind"] == "repair")
    for change in ({"what": {"dropped_bytes": 3}}, {"what": {"dropped_bytes": -1,
                                                             "dropped_sha256": "0" * 64}},
                   {"what": {"dropped_bytes": 3, "dropped_sha256": "0" * 64, "x": 1}},
                   {"what": {"dropped_bytes": True, "dropped_sha256": "0" * 64}},
                   {"rho": "1/2"}):
        data = json.loads(json.dumps(good))
        data["entries"][k].update(change)
        prev = data["entries"][k]["prev_hash"]
        for e in data["entries"][k:]:                  # recompute the chain from the edit on
            e["prev_hash"] = prev
            body = {key: v for key, v in e.items() if key != "hash"}
            e["hash"] = prev = sha256_of(body)
        data["head_hash"] = prev
        path.write_text(json.dumps(data))
        assert verify_ledger(path).status == "fail", change


def test_garbage_files(saved, tmp_path):
    other = tmp_path / "x.json"
    other.write_text('{"format": "something-else"}')
    with pytest.raises(LedgerError):
        Ledger.load(other)
    assert verify_ledger(other).status == "fail"
    assert verify_ledger(tmp_path / "missing.json").status == "fail"
    other.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(LedgerError):
        Ledger.load(other)
    other.write_text('{"a": 1, "a": 2}')
    with pytest.raises(LedgerError, match="duplicate"):
        Ledger.load(other)


def test_non_canonical_numbers_are_rejected(saved):
    path, _ = saved
    data = json.loads(path.read_text())
    data["entries"][1]["event"]["sigma"] = "0x1.4p+4"
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerError, match="canonical|hash"):
        Ledger.load(path)


def test_existing_ledger_is_refused_and_a_second_writer_is_locked_out(tmp_path):
    path = tmp_path / "l.json"
    f = PrivacyFilter(1, delta=1e-6, ledger_path=path)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        PrivacyFilter(1, ledger_path=path)
    with pytest.raises(LedgerInUseError, match="in use"):
        PrivacyFilter.resume(path)
    f.close()
    g = PrivacyFilter.resume(path)
    g.charge(ZCDPEvent(Fraction(3, 4)), what={"release": "none"})
    g.close()
    assert Ledger.load(path).spent == Fraction(3, 4)


def test_failed_append_commits_nothing(tmp_path, monkeypatch):
    from dpcore.accounting.journal import LedgerFile
    path = tmp_path / "l.json"
    f = PrivacyFilter(1, ledger_path=path)
    before = path.read_text()

    def disk_full(self, ledger):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(LedgerFile, "append", disk_full)
    with pytest.raises(OSError, match="No space"):
        f.charge(ZCDPEvent(Fraction(1, 2)), what={"release": "none"})
    assert f.spent == 0 and len(f.ledger) == 0 and path.read_text() == before


def test_no_timestamps_or_counts_in_charges(saved):
    path, _ = saved
    for entry in json.loads(path.read_text())["entries"]:
        assert "timestamp" not in entry
        if entry["kind"] == "charge":
            assert set(entry["what"]) <= {"release", "attrs", "noise", "candidates",
                                          "sensitivity", "reason", "seed_fixed"}
    assert os.stat(path).st_size < 4000
