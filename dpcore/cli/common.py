"""What the dpcore subcommands share: exit codes, the one-line error, and the checks on paths
and budgets made before anything is read or spent."""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

EXIT_OK, EXIT_INPUT, EXIT_PRIVACY, EXIT_INCOMPLETE = 0, 2, 3, 4
MECHANISMS = ("aim", "mst", "nist-mst", "mwem", "independent", "fem", "sepfem", "dqrs",
              "mwem-explicit", "pep", "rap-softmax", "gem", "gem-pub", "privpgd")
# Mechanisms that read a public table (--public).
PUBLIC_MECHANISMS = ("nist-mst", "gem-pub")
DASK_MECHANISMS = ("aim", "mst", "mwem", "independent")   # their reads are marginals
RESULT_FORMAT = "dpcore-result"


class CliError(Exception):
    """An input problem: printed as one line, exit 2 (or ``code``)."""

    def __init__(self, message: str, code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.code = code


def bundled_datasets() -> list[str]:
    from dpcore.datasets import names
    return names()


def bundled(name: str) -> tuple[Path, Path]:
    from dpcore.datasets import paths
    if name not in bundled_datasets():
        raise CliError(f"--dataset must be one of {bundled_datasets()}, got {name!r}")
    return paths(name)


def data_and_schema(args: argparse.Namespace, data_attr: str = "data") -> tuple[Path, Any]:
    from dpcore.schema import Schema
    data = getattr(args, data_attr)
    if args.dataset is not None:
        if data is not None or args.schema is not None:
            raise CliError(f"give either --dataset or --{data_attr.replace('_', '-')} with "
                           f"--schema, not both")
        data_path, schema_path = bundled(args.dataset)
        return data_path, Schema.load(schema_path)
    if data is None or args.schema is None:
        raise CliError(f"give --{data_attr.replace('_', '-')} DATA.csv with --schema S.json, "
                       f"or --dataset NAME")
    return Path(data), Schema.load(args.schema)


def probe_writable(path: str | None, label: str, *, must_not_exist: bool = False,
                    force: bool = False) -> None:
    """Fail before any budget is spent if an output cannot be written, or already exists
    (``must_not_exist``: always refused; otherwise refused unless ``force``)."""
    if path is None:
        return
    from dpcore.errors import InvalidArgumentError
    from dpcore.files import check_not_a_record, check_replaceable
    target = Path(path)
    try:
        check_replaceable(path, label)       # a directory, device, FIFO or socket
    except InvalidArgumentError as err:
        raise CliError(str(err)) from None
    if must_not_exist and target.exists():
        raise CliError(f"{label} {path!r} already exists; refusing to overwrite a record of "
                       f"spent budget (choose a new path)")
    try:
        check_not_a_record(path, label)      # any ledger or salt file, even with --force
    except InvalidArgumentError as err:
        raise CliError(str(err)) from None
    if not force and (target.exists() or target.is_symlink()):
        raise CliError(f"{label} {path!r} already exists; refusing to overwrite it (choose a "
                       f"new path, or pass --force)")
    parent = target.parent
    if not parent.is_dir():
        raise CliError(f"cannot write {label} {path!r}: directory {str(parent)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=parent)
    except OSError as err:
        raise CliError(f"cannot write {label} {path!r}: {err.strerror}") from None
    try:
        os.close(fd)
    finally:
        os.unlink(tmp)


def is_utf8(path: str) -> bool:
    try:
        os.fspath(path).encode("utf-8")        # undecodable bytes arrive as surrogates
        return True
    except UnicodeEncodeError:
        return False


def check_distinct(inputs: Sequence[tuple[str, Any]], outputs: Sequence[tuple[str, Any]]) -> None:
    """No output may be an input or another output (the sensitive input would be replaced)."""
    from dpcore.files import same_file
    outputs = [(label, path) for label, path in outputs if path is not None]
    for i, (label, path) in enumerate(outputs):
        for other, known in list(inputs) + outputs[:i]:
            if known is not None and same_file(path, known):
                raise CliError(f"{label} {str(path)!r} is the same file as {other} "
                               f"{str(known)!r}; refusing to overwrite it")


def check_output_format(path: str) -> None:
    import importlib.util
    from dpcore.encoding import is_parquet
    if is_parquet(path) and not any(
            importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
        raise CliError(f"--out {path!r}: writing Parquet needs pyarrow: "
                       f"pip install 'dpcore[parquet]' (or write a .csv)")


def check_free_space(path: str, rows: int | None, columns: int) -> None:
    """Refuse a run whose output cannot fit on its disk. Only public sizes are used (--rows,
    not the data's row count), and only a lower bound (two bytes a field: one character and a
    separator), so this refuses only hopeless runs; a disk that fills up later fails after the
    charges, which the ledger records (docs/cli.md)."""
    import shutil
    if rows is None:
        return
    need = rows * columns * 2
    free = shutil.disk_usage(Path(path).parent).free
    if need > free:
        raise CliError(f"--out {path!r}: {rows} rows x {columns} columns need at least {need} "
                       f"bytes, but the disk has {free} free")


# Temporaries dpcore's own writers leave if killed (SIGKILL) mid-write: mkstemp names
# (8 characters of [a-z0-9_]) of schema.atomic_write_text / encoding.write_table
# (".NAME.XXXXXXXX.tmp"), the ledger (".ledger-XXXXXXXX.tmp") and probe_writable (".probe").
_STALE = re.compile(r"^\.(?:.+\.[a-z0-9_]{8}\.(?:tmp|probe)|ledger-[a-z0-9_]{8}\.tmp)$")


def stale_temporaries(directory: str | os.PathLike) -> list[Path]:
    """dpcore's own stale temporary files directly inside ``directory`` (regular files only)."""
    folder = Path(directory)
    return sorted(p for p in folder.iterdir()
                  if _STALE.match(p.name) and p.is_file() and not p.is_symlink())


def remove_own_temporaries(paths: Sequence[str | None], since: float) -> None:
    """After a failed or interrupted run: remove the temporaries of this run's outputs (named
    after them, created since the run started) that a writer could not remove itself."""
    for path in filter(None, paths):
        target = Path(path)
        if not target.parent.is_dir():
            continue
        for p in stale_temporaries(target.parent):
            if p.name.startswith(f".{target.name}.") and p.stat().st_mtime >= since:
                p.unlink(missing_ok=True)


def positive(name: str, text: str) -> float:
    """A plain decimal (``1_0``, ``inf``, full-width digits are errors, not 10 or infinity)."""
    from dpcore.encoding import parse_decimal
    from dpcore.errors import InvalidArgumentError
    try:
        return parse_decimal(text, what=name)
    except InvalidArgumentError as err:
        raise CliError(str(err)) from None


def _at_most(text: str, value: float) -> float:
    """``value`` (the nearest float to the decimal ``text``), moved down to the float below
    when it lies above the decimal."""
    if math.isfinite(value) and Fraction(value) > Fraction(Decimal(text)):
        return math.nextafter(value, -math.inf)
    return value


def parse_budget(args: argparse.Namespace) -> tuple[float, float]:
    """--epsilon > 0 and --delta in (0, 1), as plain decimals, each the largest float at most
    the decimal typed: the nearest float can lie above it (0.2 reads as 0.2000000000000000111),
    and a budget built from it, or a promise checked against it, would then allow more than
    was typed. synth, ledger create and verify all read the budget here, so a ledger made
    with a promise verifies against the same promise."""
    epsilon = _at_most(args.epsilon, positive("--epsilon", args.epsilon))
    delta = _at_most(args.delta, positive("--delta", args.delta))
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise CliError(f"--epsilon must be > 0 and finite, got {args.epsilon}")
    if not 0 < delta < 1:
        raise CliError(f"--delta must be in (0, 1), got {args.delta}")
    return epsilon, delta


def atomic_json(path: str | os.PathLike, obj: Any) -> None:
    from dpcore.schema import atomic_write_text
    atomic_write_text(path, json.dumps(obj, indent=1) + "\n")


def progress_bar(args: argparse.Namespace, label: str):
    """A tqdm bar over the share of the budget spent (stderr; off unless a TTY)."""
    if args.quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=100.0, desc=label, unit="% budget", file=sys.stderr, leave=False,
                bar_format="{desc}: {percentage:3.0f}% of budget |{bar}| {elapsed} {postfix}")



def file_sha256(path: str | os.PathLike) -> str:
    from dpcore.counted import file_sha256
    return file_sha256(path)

