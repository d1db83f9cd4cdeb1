"""Where dpcore may write: one rule for every writer, the CLI's and the Python API's.

Outputs are written to a temporary file beside the target and renamed over it
(:func:`replace_into`). A rename replaces whatever the name held, so the target must be absent,
a regular file, or a link to one (the link is replaced, not what it points to): a device, a
FIFO, a socket or a directory (``/dev/null``, or a link to it such as ``/dev/stdout``) is
refused, never turned into a regular file. The check runs just before the rename; it guards
against mistakes, not against a concurrent writer swapping the name in between. A run's ledger,
its salt file and its input are never an output (:func:`check_not_protected`), nor is any
existing ledger or salt file (:func:`check_not_a_record`).
"""
from __future__ import annotations

import os
import stat
from typing import Iterable

from dpcore.errors import InvalidArgumentError

__all__ = ["check_not_a_record", "check_not_protected", "check_replaceable", "replace_into",
           "salt_path", "same_file"]


def salt_path(ledger: str | os.PathLike) -> str:
    """The private file beside a ledger that keeps the salts of its input commitments."""
    return f"{os.fspath(ledger)}.private"


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: equal after resolving symlinks, or (both existing)
    the same inode, which also catches hard links."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return False


def check_replaceable(path: str | os.PathLike, label: str = "output") -> None:
    """Refuse a target a rename must not replace: anything but a regular file or a link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise InvalidArgumentError(f"cannot write {label} {os.fspath(path)!r}: "
                                   f"{err.strerror}") from None
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(path).st_mode        # what the link names: /dev/stdout is one
        except OSError:
            return                              # a dangling link: the rename replaces it
    if stat.S_ISDIR(mode):
        raise InvalidArgumentError(f"{label} {os.fspath(path)!r} is a directory")
    if not stat.S_ISREG(mode):
        raise InvalidArgumentError(f"{label} {os.fspath(path)!r} is not a regular file (a "
                                   f"device, FIFO or socket); refusing to replace it")


_RECORD_MARKS = ((b"dpcore-ledger", "a dpcore ledger (a record of spent budget)"),
                 (b"input_salt", "a ledger's salt file"))


def check_not_a_record(path: str | os.PathLike, label: str = "output") -> None:
    """Refuse an output over an existing ledger or ledger salt file (any run's, not only this
    one's): a ledger is the record of spent budget and a salt opens its input commitments, so
    neither is ever replaced, not even when the caller allows overwriting (``--force``). A file
    is taken for one if it is JSON text (its first byte past a byte-order mark and whitespace
    opens an object or an array: every ledger and salt file, reformatted or not) and its bytes
    hold the ledger's format name or a salt's key anywhere (a reformatted ledger still verifies,
    with its keys in any order), or, up to :data:`_PARSE_BYTES`, it parses (as one document or
    as lines) to a ledger's header or a salt (the same names written with escapes); a file
    that cannot be read to tell is refused too. Other files holding those words (a saved
    synthesizer's pickle, a CSV) can be replaced. A link is not looked through: the rename
    replaces the link only."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        return                          # a link (only it is replaced) or none: check_replaceable
    try:
        with open(path, "rb") as fh:
            if not _json_text(fh):
                return
            fh.seek(0)                  # the marks may lie in what _json_text read
            what = _marked(fh)
            if what is None and st.st_size <= _PARSE_BYTES:
                fh.seek(0)
                what = _parsed_record(fh.read(_PARSE_BYTES + 1))
    except OSError as err:
        raise InvalidArgumentError(f"{label} {os.fspath(path)!r} cannot be read to check that "
                                   f"it is not a ledger ({err.strerror}); refusing to overwrite "
                                   f"it") from None
    if what is not None:
        raise InvalidArgumentError(f"{label} {os.fspath(path)!r} is {what}; refusing to "
                                   f"overwrite it")


#: The largest file :func:`check_not_a_record` parses as JSON (beyond: the marks' bytes only).
_PARSE_BYTES = 64 << 20


def _json_text(fh) -> bool:
    """Whether the file ``fh`` (read from its start) is JSON text: past a UTF-8 byte-order mark
    and whitespace, an object or an array opens."""
    first = True
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            return False
        if first and chunk.startswith(b"\xef\xbb\xbf"):
            chunk = chunk[3:]
        first = False
        head = chunk.lstrip(b" \t\r\n")
        if head:
            return head[:1] in (b"{", b"[")


def _marked(fh) -> str | None:
    """What the first record mark found in ``fh``'s bytes says the file is (None: no mark)."""
    tail = b""
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            return None
        window = tail + chunk
        for mark, what in _RECORD_MARKS:
            if mark in window:
                return what
        tail = window[-16:]


def _parsed_record(data: bytes) -> str | None:
    """What a JSON file (one document, or one per line) is, when a ledger's header or a salt
    is among its objects (top level, or in a top-level list); None when it is neither or
    does not parse."""
    import json
    try:
        text = data.decode("utf-8-sig")
        try:
            docs = [json.loads(text)]
        except ValueError:
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError):
        return None
    for doc in docs:
        for obj in (doc if isinstance(doc, list) else [doc]):
            if isinstance(obj, dict) and obj.get("format") == "dpcore-ledger":
                return _RECORD_MARKS[0][1]
            if isinstance(obj, dict) and "input_salt" in obj:
                return _RECORD_MARKS[1][1]
    return None


def replace_into(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Rename the finished temporary ``tmp`` over ``path`` (checked by
    :func:`check_replaceable` first)."""
    check_replaceable(path)
    os.replace(tmp, path)


def check_not_protected(path: str | os.PathLike, protected: Iterable[tuple[str, object]],
                        label: str = "output") -> None:
    """Refuse an output that names one of ``protected`` ((what, path) pairs; None skipped)."""
    for what, known in protected:
        if known is not None and same_file(path, known):
            raise InvalidArgumentError(f"{label} {os.fspath(path)!r} is {what} "
                                       f"{os.fspath(known)!r}; refusing to overwrite it")
