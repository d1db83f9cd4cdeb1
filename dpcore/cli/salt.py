"""The ledger's salt file: the private salts that open each run's input commitment."""
from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any

from dpcore.cli.common import CliError


def _salt_file_problem(fd_or_path: int | str) -> str | None:
    """Why an existing salt file may not receive a salt: it must be a regular file of this
    user that nobody else can read or write (a planted file or link would leak the salt)."""
    st = os.fstat(fd_or_path) if isinstance(fd_or_path, int) else os.lstat(fd_or_path)
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a link, device or FIFO)"
    if st.st_uid != os.geteuid():
        return "belongs to another user"
    if st.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}, not 0600 (others could read it)"
    return None


def check_salt_file(ledger: str, continuing: bool) -> None:
    """Before any charge: a new ledger's salt file must not exist yet; a continued ledger's,
    if it exists, must be private (see :func:`_salt_file_problem`)."""
    from dpcore.files import salt_path
    path = salt_path(ledger)
    if not os.path.lexists(path):
        # the salt is written after the run completes: a directory that cannot take the file
        # (read-only, a shared ledger's) must be found now, not after the budget is spent
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            os.unlink(path)
        except OSError as exc:
            if exc.errno == errno.EEXIST:   # created between the check and the probe
                raise CliError(f"the ledger's salt file {path!r} already exists: another run "
                               f"is starting on this ledger") from exc
            raise CliError(f"cannot create the ledger's salt file {path!r} ({exc.strerror}); "
                           f"the run's salt could not be kept") from exc
        return
    if not continuing:
        raise CliError(f"the ledger's salt file {path!r} already exists; refusing to add a new "
                       f"ledger's salts to it (move it away, or choose a new --ledger)")
    problem = _salt_file_problem(path)
    if problem:
        raise CliError(f"the ledger's salt file {path!r} {problem}; refusing to write a salt "
                       f"into it")
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW))
    except OSError as exc:
        raise CliError(f"cannot write the ledger's salt file {path!r} ({exc.strerror})") from exc


def save_salt(ledger: str, synth: Any) -> None:
    """Keep the salt that opens the run's input commitment in a private file beside the ledger
    (mode 0600; do not publish it: with it, anyone can test a guessed input file). Never
    through a link, never into a file others can read (checked on the open file)."""
    from dpcore.files import salt_path
    path = salt_path(ledger)
    line = json.dumps({"run": synth.ledger.runs - 1, "input_sha256": synth.input_sha256_,
                       "input_salt": synth.input_salt_}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        problem = _salt_file_problem(fd)
        if problem:
            raise CliError(f"the ledger's salt file {path!r} {problem}; the salt was not "
                           f"written (the run's ledger is complete)")
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)

