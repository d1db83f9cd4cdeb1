"""The live ledger file: created exclusively, locked for the whole run, appended in O(1).

One writer per ledger. :meth:`LedgerFile.create` makes the file with its first content in one
step that fails if the path exists (a hard link of a finished temp file: two runs started
together on one path → exactly one gets it); :meth:`LedgerFile.open` continues an existing
ledger. Either way the writer holds an exclusive advisory lock (``flock``) until
:meth:`close`, and a second writer is refused before it can charge anything.

An append truncates the file at the trailer, writes the new entry line and a new trailer, and
fsyncs: one small write per charge, whatever the ledger's length. A crash at any moment leaves
either the old complete document, or the old entries without a trailer, or those plus a
partial line — all read back by :func:`~.ledger.parse_ledger_text` as the true record of what
was committed (the filter draws noise only after the append returned).
Locks are POSIX ``flock``: advisory, per open file, released by the OS if the process dies.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from fractions import Fraction

from dpcore.errors import InvalidArgumentError

from .errors import LedgerError
from .ledger import (Ledger, entry_line, fsync_directory, parse_ledger_text,
                     trailer_line, MAX_LEDGER_BYTES)


class LedgerInUseError(InvalidArgumentError):
    """Another process holds the ledger's writer lock (a run is using it)."""


def _utf8_text(raw: bytes, path: str) -> tuple[str, bool]:
    """The file's text, and whether it is all of the file. A crash can cut a multi-byte
    character of the last line in two: then the text is the whole lines before it, and the
    file is torn whatever those lines hold."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        pass
    try:
        return raw[:raw.rfind(b"\n") + 1].decode("utf-8"), False
    except UnicodeDecodeError:
        raise LedgerError(f"ledger {path!r} is not UTF-8 text") from None


def _mend(fd: int, path: str, raw: bytes, ledger: Ledger, repair: bool) -> Ledger:
    """Complete a torn ledger file in place after its last whole entry: the trailer again
    when what follows that entry is a (non-empty) prefix of the very trailer line it would
    have, else (``repair`` only) a ``repair`` entry naming the discarded bytes, then the
    trailer. Returns the ledger as now on disk."""
    whole = ledger.to_text().encode("utf-8")
    whole = whole[:len(whole) - len(trailer_line(ledger.spent, ledger.head_hash).encode("utf-8"))]
    if raw.startswith(whole):
        at = len(whole)
    elif whole.startswith(raw) and len(whole) - len(raw) == 1:   # only the last newline is cut
        at = len(raw)
    else:
        raise LedgerError(f"ledger {path!r} ends without its trailer and is not in dpcore's line "
                          f"format (one entry a line): it cannot be repaired in place")
    tail = raw[len(whole):]
    if not trailer_line(ledger.spent, ledger.head_hash).encode("utf-8").startswith(tail) or not tail:
        if not repair:
            raise LedgerError(
                f"ledger {path!r} ends without its trailer ({len(tail)} bytes of a partial last "
                f"line): a write cut off by a crash, or a cut of the file that may have removed "
                f"committed entries. Check it against the head you last published (dpcore verify "
                f"--head H); continuing discards the partial line and records the repair in the "
                f"ledger: pass --repair (API: repair_ledger=True) to do so")
        ledger = ledger.appended("repair", None, Fraction(0), {
            "dropped_bytes": len(tail), "dropped_sha256": hashlib.sha256(tail).hexdigest()})
        entry = ledger.entries[-1]
        text = whole[at:] + entry_line(entry.to_dict(), first=(entry.seq == 0)).encode("utf-8")
    else:
        text = whole[at:]
    text += trailer_line(ledger.spent, ledger.head_hash).encode("utf-8")
    os.ftruncate(fd, at)      # first shrink: a crash from here on leaves no trailer
    _write_at(fd, text, at)
    os.fsync(fd)
    return ledger


class LedgerFile:
    """The open, locked file behind a :class:`~.filter.PrivacyFilter`'s ledger."""

    def __init__(self, path: str, fd: int, ledger: Ledger, trailer_at: int):
        self.path = path
        self._fd = fd
        self._trailer_at = trailer_at   # byte offset of the trailer line
        self._count = len(ledger)

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def create(cls, path, ledger: Ledger) -> "LedgerFile":
        """Create ``path`` holding ``ledger`` (refusing if it exists), and lock it."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        text = ledger.to_text()
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", suffix=".tmp", dir=directory)
        try:
            os.fchmod(fd, 0o644)
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
            os.close(fd)
            try:
                os.link(tmp, path)    # atomic, and fails if path exists
            except FileExistsError:
                raise InvalidArgumentError(
                    f"ledger {path!r} already exists; refusing to overwrite a record of spent "
                    "budget (continue it with --continue / continue_ledger=True, or choose a "
                    "new path)") from None
            except OSError:           # filesystems without hard links
                _exclusive_copy(tmp, path)
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        fsync_directory(directory)
        fd = os.open(path, os.O_RDWR)
        try:
            _lock(fd, path)
            if os.fstat(fd).st_size != len(text.encode("utf-8")):
                raise LedgerInUseError(f"ledger {path!r} changed while it was being created")
        except BaseException:
            os.close(fd)
            raise
        trailer = len(text.encode("utf-8")) - len(trailer_line(ledger.spent, ledger.head_hash)
                                                  .encode("utf-8"))
        return cls(path, fd, ledger, trailer)

    @classmethod
    def open(cls, path, *, repair: bool = False) -> tuple["LedgerFile", Ledger]:
        """Lock an existing ledger for appending; returns the file and its validated ledger.

        A file whose last line is a partial trailer lost nothing: the trailer is written again.
        A file that ends without its trailer otherwise was cut: by a crash in the middle of an
        append (the partial entry was never committed), or by someone cutting the file, which
        removes committed entries just the same; the two look alike. Such a file is refused
        unless ``repair``: then the partial last line is replaced by a ``repair`` entry naming
        its byte count and SHA-256, and the trailer, in one write after the last whole entry,
        so a crash during the repair leaves a file that still needs one (never a repaired file
        without its record)."""
        path = os.fspath(path)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise InvalidArgumentError(f"ledger {path!r} does not exist (nothing to continue)") from None
        except OSError as exc:
            raise InvalidArgumentError(f"cannot open ledger {path!r}: {exc.strerror}") from None
        try:
            _lock(fd, path)
            if not _is_current(fd, path):
                raise LedgerInUseError(f"ledger {path!r} was rewritten by another run while it "
                                       "was being opened; try again")
            raw = _read_all(fd)
            text, whole_file = _utf8_text(raw, path)
            data, torn = parse_ledger_text(text, where=f"ledger {path!r}")
            if not whole_file:       # the trailer read, if any, is not the file's last line
                torn = True
                data = {k: v for k, v in data.items() if k not in ("rho_spent", "head_hash")}
            ledger = Ledger.from_dict(data, allow_open_tail=torn)
            if torn:
                ledger = _mend(fd, path, raw, ledger, repair)
            else:
                good = ledger.to_text().encode("utf-8")
                if good != raw:      # a reformatted copy: written back in dpcore's line format
                    new = _replace_locked(path, fd, good)
                    os.close(fd)
                    fd = new
            trailer = len(ledger.to_text().encode("utf-8")) - len(
                trailer_line(ledger.spent, ledger.head_hash).encode("utf-8"))
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, ledger, trailer), ledger

    # -- appending ----------------------------------------------------------------------------
    def append(self, ledger: Ledger) -> None:
        """Write the entries of ``ledger`` beyond those already on disk, then the new trailer."""
        if self._fd < 0:
            raise LedgerError(f"ledger {self.path!r} is closed")
        new = ledger.entries[self._count:]
        text = "".join(entry_line(e.to_dict(), first=(e.seq == 0)) for e in new)
        data = (text + trailer_line(ledger.spent, ledger.head_hash)).encode("utf-8")
        os.ftruncate(self._fd, self._trailer_at)   # first shrink: a crash now leaves no trailer
        _write_at(self._fd, data, self._trailer_at)
        os.fsync(self._fd)
        self._trailer_at += len(text.encode("utf-8"))
        self._count = len(ledger)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)   # releases the lock
            self._fd = -1

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __del__(self):
        self.close()


def _lock(fd: int, path: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise LedgerInUseError(f"ledger {path!r} is in use by another run (one writer per "
                               "ledger); wait for it to finish") from None


def _is_current(fd: int, path: str) -> bool:
    """Whether ``fd`` is still the file at ``path``: a run that rewrote a reformatted ledger
    (:func:`_replace_locked`) renamed a new file over it, and a process that opened the old one
    just before must not append to a file no path names any more."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _replace_locked(path: str, fd: int, data: bytes) -> int:
    """Put ``data`` in place of the locked ledger ``fd`` at ``path``; returns the new file's
    descriptor, locked (the caller closes ``fd``). The new content is written to a file beside it,
    locked, then renamed over ``path``: a crash leaves the old file or the new one, never a part
    (rewriting in place could leave a prefix that ``--repair`` would accept, forgetting spent
    budget), and readers see either whole. The lock moves with the content: the new file is
    locked before its rename, and a process that opened the old file meanwhile finds it no
    longer at ``path`` once it gets the old lock (:func:`_is_current`). The new file keeps the
    old one's owner, group and mode; where a new file cannot stand for the old one (other
    hard links to it, an owner this process cannot give, a bind-mounted file) the ledger is
    refused, unchanged."""
    def refuse(why: str) -> LedgerError:
        return LedgerError(f"ledger {path!r} is not in dpcore's line format and cannot be "
                           f"rewritten safely ({why}): write it back in that format by hand "
                           f"(Ledger.load(path).save(new_path), then put it in place)")

    held = os.fstat(fd)
    if held.st_nlink > 1:    # a new file would leave the other names on the old record
        raise refuse(f"it has {held.st_nlink} names (hard links)")
    target = os.path.realpath(path)           # a link to the ledger stays a link
    directory = os.path.dirname(target)
    try:
        new, tmp = tempfile.mkstemp(prefix=".ledger-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise refuse(f"no file can be made beside it: {exc.strerror}") from None
    try:
        try:                 # the same owner, group and mode as the file it replaces
            if (held.st_uid, held.st_gid) != (os.geteuid(), os.getegid()):
                os.fchown(new, held.st_uid, held.st_gid)
            os.fchmod(new, held.st_mode & 0o7777)
        except PermissionError:
            raise refuse("its owner or group cannot be kept") from None
        _write_at(new, data, 0)
        os.fsync(new)
        fcntl.flock(new, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not _is_current(fd, target):       # the path no longer names the locked file
            raise LedgerInUseError(f"ledger {path!r} was moved while it was being opened; "
                                   f"try again")
        try:
            os.replace(tmp, target)
        except OSError as exc:                 # a bind-mounted file, another device, ...
            raise refuse(f"it cannot be replaced: {exc.strerror}") from None
    except BaseException:
        os.close(new)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        fsync_directory(directory)
    except BaseException:
        os.close(new)
        raise
    return new


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_LEDGER_BYTES:
            raise LedgerError(f"ledger is larger than {MAX_LEDGER_BYTES} bytes")
        chunks.append(chunk)


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _exclusive_copy(src: str, dst: str) -> None:
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise InvalidArgumentError(f"ledger {dst!r} already exists; refusing to overwrite a "
                                   "record of spent budget") from None
    with open(src, "rb") as fh:
        data = fh.read()
    try:
        _write_at(fd, data, 0)
        os.fsync(fd)
    finally:
        os.close(fd)
