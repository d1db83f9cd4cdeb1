"""The ``dpcore`` command: synth, verify, evaluate, schema infer, proofs.

Exit codes: 0 success; 2 usage or input error (one line naming the problem, no traceback);
3 privacy refusal (the filter refused a charge) or a ledger that does not verify; 4 a ledger
whose every check holds but whose last run was cut off (no closing entry): incomplete.
Every output file is written to a temporary file and renamed into place, so a failed run
leaves no partial CSV. The ledger is the exception by design: the privacy filter saves it
(atomically) after every charge, so budget spent by a run that later fails stays on record.
``synth`` plans the whole run (mechanisms.plan, the output paths and formats) before it reads
the data or creates the ledger: an invalid run spends nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import stat
import sys
import tempfile
import time
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


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each option's default (flags and options without one show none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text or \
                action.default == []:
            return text
        return text + " (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line on stderr, exit 2 (argparse's code too)
        for action in self._actions:   # "required: schema_command" -> name the subcommands
            if isinstance(action, argparse._SubParsersAction) and f"required: {action.dest}" in message:
                message = f"{self.prog} needs a subcommand: {', '.join(action.choices)}"
        self.exit(EXIT_INPUT, f"dpcore: error: {message} (see {self.prog} --help)\n")


# ------------------------------------------------------------------------ shared helpers
def bundled_datasets() -> list[str]:
    from dpcore.datasets import names
    return names()


def _bundled(name: str) -> tuple[Path, Path]:
    from dpcore.datasets import paths
    if name not in bundled_datasets():
        raise CliError(f"--dataset must be one of {bundled_datasets()}, got {name!r}")
    return paths(name)


def _data_and_schema(args: argparse.Namespace, data_attr: str = "data") -> tuple[Path, Any]:
    from dpcore.schema import Schema
    data = getattr(args, data_attr)
    if args.dataset is not None:
        if data is not None or args.schema is not None:
            raise CliError(f"give either --dataset or --{data_attr.replace('_', '-')} with "
                           f"--schema, not both")
        data_path, schema_path = _bundled(args.dataset)
        return data_path, Schema.load(schema_path)
    if data is None or args.schema is None:
        raise CliError(f"give --{data_attr.replace('_', '-')} DATA.csv with --schema S.json, "
                       f"or --dataset NAME")
    return Path(data), Schema.load(args.schema)


def _probe_writable(path: str | None, label: str, *, must_not_exist: bool = False,
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


def _is_utf8(path: str) -> bool:
    try:
        os.fspath(path).encode("utf-8")        # undecodable bytes arrive as surrogates
        return True
    except UnicodeEncodeError:
        return False


def _check_distinct(inputs: Sequence[tuple[str, Any]], outputs: Sequence[tuple[str, Any]]) -> None:
    """No output may be an input or another output (the sensitive input would be replaced)."""
    from dpcore.files import same_file
    outputs = [(label, path) for label, path in outputs if path is not None]
    for i, (label, path) in enumerate(outputs):
        for other, known in list(inputs) + outputs[:i]:
            if known is not None and same_file(path, known):
                raise CliError(f"{label} {str(path)!r} is the same file as {other} "
                               f"{str(known)!r}; refusing to overwrite it")


def _check_output_format(path: str) -> None:
    import importlib.util
    from dpcore.encoding import is_parquet
    if is_parquet(path) and not any(
            importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
        raise CliError(f"--out {path!r}: writing Parquet needs pyarrow: "
                       f"pip install 'dpcore[parquet]' (or write a .csv)")


def _check_free_space(path: str, rows: int | None, columns: int) -> None:
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
# (".NAME.XXXXXXXX.tmp"), the ledger (".ledger-XXXXXXXX.tmp") and _probe_writable (".probe").
_STALE = re.compile(r"^\.(?:.+\.[a-z0-9_]{8}\.(?:tmp|probe)|ledger-[a-z0-9_]{8}\.tmp)$")


def stale_temporaries(directory: str | os.PathLike) -> list[Path]:
    """dpcore's own stale temporary files directly inside ``directory`` (regular files only)."""
    folder = Path(directory)
    return sorted(p for p in folder.iterdir()
                  if _STALE.match(p.name) and p.is_file() and not p.is_symlink())


def _remove_own_temporaries(paths: Sequence[str | None], since: float) -> None:
    """After a failed or interrupted run: remove the temporaries of this run's outputs (named
    after them, created since the run started) that a writer could not remove itself."""
    for path in filter(None, paths):
        target = Path(path)
        if not target.parent.is_dir():
            continue
        for p in stale_temporaries(target.parent):
            if p.name.startswith(f".{target.name}.") and p.stat().st_mtime >= since:
                p.unlink(missing_ok=True)


def _positive(name: str, text: str) -> float:
    """A plain decimal (``1_0``, ``inf``, full-width digits are errors, not 10 or infinity)."""
    from dpcore.encoding import parse_decimal
    from dpcore.errors import InvalidArgumentError
    try:
        return parse_decimal(text, what=name)
    except InvalidArgumentError as err:
        raise CliError(str(err)) from None


def _budget(args: argparse.Namespace) -> tuple[float, float]:
    """--epsilon > 0 and --delta in (0, 1), as plain decimals."""
    epsilon = _positive("--epsilon", args.epsilon)
    delta = _positive("--delta", args.delta)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise CliError(f"--epsilon must be > 0 and finite, got {args.epsilon}")
    if not 0 < delta < 1:
        raise CliError(f"--delta must be in (0, 1), got {args.delta}")
    return epsilon, delta


def _atomic_json(path: str | os.PathLike, obj: Any) -> None:
    from dpcore.schema import atomic_write_text
    atomic_write_text(path, json.dumps(obj, indent=1) + "\n")


def _progress(args: argparse.Namespace, label: str):
    """A tqdm bar over the share of the budget spent (stderr; off unless a TTY)."""
    if args.quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=100.0, desc=label, unit="% budget", file=sys.stderr, leave=False,
                bar_format="{desc}: {percentage:3.0f}% of budget |{bar}| {elapsed} {postfix}")


# ------------------------------------------------------------------------ synth
def _cmd_synth(args: argparse.Namespace) -> int:
    started_at = time.time()
    try:
        return _synth(args)
    except BaseException:
        # The writers remove their own temporaries; this catches the few instructions between
        # a temporary's creation and its writer's cleanup handler (SIGINT/SIGTERM land there).
        _remove_own_temporaries([args.out, args.result], started_at - 2)
        raise


def _synth(args: argparse.Namespace) -> int:
    from dpcore.encoding import is_parquet, read_codes
    from mechanisms.synthesizer import Synthesizer

    epsilon, delta = _budget(args)
    if args.rows is not None and args.rows < 1:
        raise CliError(f"--rows must be >= 1, got {args.rows}")
    # The plan, part 1: outputs. None may be an input or another output; none is overwritten
    # without --force (the ledger never is, but --continue appends to it); each can be
    # written, in a format we can write.
    if args.dataset is not None and args.dataset in bundled_datasets():
        data_in, schema_in = _bundled(args.dataset)
    else:
        data_in, schema_in = args.data, args.schema
    workload_in = args.workload if args.workload not in ("all-1way", "all-2way", "all-3way") \
        and os.path.isfile(args.workload) else None
    from dpcore.files import salt_path, same_file
    for label, path in (("--out", args.out), ("--ledger", args.ledger), ("--result", args.result)):
        if path is not None and not _is_utf8(path):
            raise CliError(f"{label} {path!r}: the path is not UTF-8 text, which the ledger "
                           f"records it as; rename it")
    public_in = getattr(args, "public", None)
    if public_in is not None and data_in is not None and same_file(public_in, data_in):
        raise CliError(f"--public {public_in!r} is the same file as --data: public data is read "
                       f"without a charge, so it must not be the sensitive table")
    _check_distinct([("--data", data_in), ("--schema", schema_in), ("--workload", workload_in),
                     ("--public", public_in), ("the ledger's salt file", salt_path(args.ledger))],
                    [("--out", args.out), ("--ledger", args.ledger), ("--result", args.result)])
    partitioned = _partitioned_out(args)
    if partitioned:
        _probe_partition_dir(args.out, [("--ledger", args.ledger), ("--result", args.result)])
    else:
        _probe_writable(args.out, "--out", force=args.force)
    if args.continue_ledger:
        if not Path(args.ledger).is_file():
            raise CliError(f"--continue: ledger {args.ledger!r} does not exist (nothing to continue)")
    else:
        _probe_writable(args.ledger, "--ledger", must_not_exist=True)
    _probe_writable(args.result, "--result", force=args.force)
    _check_salt_file(args.ledger, args.continue_ledger)
    _check_output_format(args.out)
    data_path, schema = _data_and_schema(args)
    if partitioned and schema.constraints:
        # refused here, before any charge: the workers draw blocks independently, and a rule
        # is kept by rejecting whole records in sequence (Synthesizer.write_partitioned)
        raise CliError(f"--out {args.out!r} (a partitioned dataset) cannot hold a schema with "
                       f"rules ({len(schema.constraints)} here); name a file to write one table")
    if args.engine in ("dask", "stream") and args.mechanism not in DASK_MECHANISMS:
        raise CliError(f"--engine {args.engine} runs {', '.join(DASK_MECHANISMS)}, not "
                       f"{args.mechanism}")
    if args.scheduler is not None and args.engine != "dask":
        raise CliError("--scheduler applies to --engine dask")
    options: dict[str, Any] = {"seed": args.seed, "ledger_path": args.ledger,
                               "continue_ledger": args.continue_ledger, "noise": args.noise,
                               # a mechanism's own bar (PrivPGD's epochs) as the CLI's: a TTY
                               "progress": not args.quiet and sys.stderr.isatty()}
    if args.mechanism in ("aim", "mwem"):
        options.update(workload=args.workload, max_model_size=args.max_model_size,
                       rounds=args.rounds)
    elif args.mechanism in ("fem", "sepfem", "dqrs", "mwem-explicit", "pep", "rap-softmax", "gem",
                            "gem-pub"):
        if args.max_model_size is not None:
            raise CliError(f"--max-model-size applies to aim and mwem, not {args.mechanism}")
        options.update(workload=args.workload, rounds=args.rounds)
        if args.mechanism in ("fem", "sepfem", "dqrs"):
            options.pop("noise")      # these measure nothing: they only select
    elif args.mechanism == "privpgd":
        if args.max_model_size is not None or args.rounds:
            raise CliError("--max-model-size and --rounds do not apply to privpgd")
        options.update(workload=args.workload)
        options.update({k: v for k, v in (("particles", args.particles), ("epochs", args.epochs),
                                          ("lr", args.lr)) if v is not None})
        if args.protect is not None:
            options["protect"] = _read_protect(args.protect)
    elif args.workload != "all-3way" or args.max_model_size is not None or args.rounds:
        raise CliError(f"--workload, --max-model-size and --rounds apply to the workload "
                       f"mechanisms, not {args.mechanism}")
    if args.mechanism != "privpgd" and (args.particles, args.epochs, args.lr,
                                        args.protect) != (None,) * 4:
        raise CliError(f"--particles, --epochs, --lr and --protect apply to privpgd, not "
                       f"{args.mechanism}")
    if (args.public is not None) != (args.mechanism in PUBLIC_MECHANISMS):
        raise CliError("--public PUBLIC.csv is required by --mechanism nist-mst (its public "
                       "provisional data) and gem-pub (its pretraining table), and applies to "
                       "no other mechanism")
    if args.public is not None:
        options["public"] = _read_public(args.public, args.delimiter)
    synth = Synthesizer.create(args.mechanism, epsilon=epsilon, delta=delta, **options)
    # Part 2: the mechanism's own plan (sizes, rounds, model cap, rows, seed), from public
    # information only, before the data is read; fit_codes plans again before its first charge.
    synth.plan(schema, rows=args.rows)
    _check_free_space(args.out, args.rows, len(schema.names))
    engine = _resolve_engine(args, synth, schema)

    if args.seed is not None and not args.quiet:
        print("dpcore: note: --seed fixes the noise; use it for tests and demos, never for a "
              "real release", file=sys.stderr)
    started = time.perf_counter()
    from dpcore.counted import read_and_hash
    digest = None      # the input commitment: the SHA-256 of the bytes read (the file unchanged)
    if args.mechanism == "nist-mst":
        transform = synth.prepare(schema)      # from the public data only; reads no records
        codes, digest = read_and_hash(
            data_path, lambda: _read_transformed(data_path, transform, args.delimiter))
        schema = transform.schema
    elif engine in ("dask", "stream"):
        codes = None   # read chunk by chunk and counted (in the workers, or here) by the fit
    else:
        codes, digest = read_and_hash(data_path, lambda: read_codes(
            data_path, schema, sep=args.delimiter, debug=args.debug))
    from dpcore.accounting import approx_dp_to_zcdp
    budget = Fraction(approx_dp_to_zcdp(epsilon, delta))  # what this run may spend
    bar = _progress(args, args.mechanism.upper())

    def on_round(record: Any) -> None:
        if bar is not None:
            bar.update(float(Fraction(record.rho) / budget) * 100)
            bar.set_postfix_str(f"round {record.index + 1} {'x'.join(record.clique)}")

    try:
        if engine == "dask":
            client = _fit_on_cluster(args, synth, data_path, schema, on_round,
                                     keep_client=partitioned)
        elif engine == "stream":
            synth.fit_file(data_path, schema, sep=args.delimiter, debug=args.debug,
                           callback=on_round, rows=args.rows, keep_open=True)
        else:
            synth.fit_codes(codes, schema, callback=on_round, rows=args.rows, keep_open=True,
                            input_sha256=digest)
    finally:
        if bar is not None:
            bar.close()
    codes = None   # the records are no longer needed: the output phase gets their memory
    try:
        # the mechanism's own synthetic table, decoded and written chunk by chunk
        missing = schema.missing_values[0] if schema.missing_values else ""
        if partitioned:     # the workers draw and write the parts (the model goes to them)
            try:
                rows = synth.write_partitioned(
                    args.out, args.rows, client=client, missing_token=missing,
                    sep=args.delimiter, format="parquet" if is_parquet(args.out) else "csv")
            finally:
                _close_client(client, args)
            outputs = {str(args.out): _dir_sha256(args.out)}
        else:
            rows = synth.write(args.out, missing_token=missing, sep=args.delimiter)
            outputs = {str(args.out): _file_sha256(args.out)}
        if args.result is not None:
            _atomic_json(args.result, _result_document(args, synth, data_path))
            outputs[str(args.result)] = _file_sha256(args.result)
    except BaseException as exc:
        synth.close_run("failed", reason=f"writing the outputs: {type(exc).__name__}")
        raise
    synth.close_run("completed", outputs=outputs)
    try:
        _save_salt(args.ledger, synth)
    except (OSError, CliError) as exc:
        # the run is complete and recorded: exit 0 (an error would invite a second run and a
        # second spend), but say loudly what is lost
        print(f"dpcore: warning: the run completed and its ledger is closed, but its salt was "
              f"not saved ({exc}): this run's input commitment cannot be opened", file=sys.stderr)
    elapsed = time.perf_counter() - started
    if not args.quiet:
        _print_summary(args, synth, rows, elapsed)
    return EXIT_OK


def _resolve_engine(args: argparse.Namespace, synth: Any, schema: Any) -> str:
    """``--engine auto``: stream when the mechanism reads marginals only and every marginal it
    can ask for fits in one counted batch (one pass over the file, memory bounded whatever
    the row count), else memory (the codes held whole; nist-mst's transform, mechanisms that
    read records, batches over the cap that would cost a pass per marginal)."""
    if args.engine != "auto":
        return args.engine
    if args.mechanism in DASK_MECHANISMS and synth.reads_marginals_only \
            and synth.batch_fits(schema, rows=args.rows):
        return "stream"
    return "memory"


def _partitioned_out(args: argparse.Namespace) -> bool:
    """``--out DIR/`` (a trailing slash): a partitioned dataset, written by the Dask workers."""
    if not str(args.out).endswith(("/", os.sep)):
        return False
    if args.engine != "dask":
        raise CliError(f"--out {args.out!r} (a directory: a partitioned dataset) needs "
                       f"--engine dask; name a file to write one table")
    if args.mechanism not in DASK_MECHANISMS or args.public is not None:
        raise CliError(f"--out DIR/ applies to {', '.join(DASK_MECHANISMS)}")
    return True


def _probe_partition_dir(path: str, others: Sequence[tuple[str, Any]] = ()) -> None:
    """A partitioned output goes to a new (or empty) directory whose parent exists; an
    existing one is never overwritten (not even with --force: it holds many files). No other
    output (``others``: label, path) may lie inside it: the parts are written into an empty
    directory, so the run would fail after spending its budget."""
    target = Path(path)
    inside = os.path.realpath(target)
    for label, other in others:
        if other is not None and os.path.realpath(other).startswith(inside.rstrip(os.sep) + os.sep):
            raise CliError(f"{label} {str(other)!r} lies inside --out {path!r}; the partitioned "
                           f"dataset needs the directory to itself (write {label} elsewhere)")
    if target.is_symlink():
        # the parts are renamed into place at the end: a directory is never renamed over a
        # link, so this run would fail after spending its budget
        raise CliError(f"--out {path!r} is a symbolic link; name the directory itself (a new "
                       f"or empty one)")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise CliError(f"--out {path!r} exists and is not an empty directory; refusing to "
                       f"overwrite it, even with --force (choose a new path)")
    if not target.parent.is_dir():
        raise CliError(f"cannot write --out {path!r}: directory {str(target.parent)!r} does "
                       f"not exist")
    if not os.access(target.parent, os.W_OK):
        raise CliError(f"cannot write --out {path!r}: directory {str(target.parent)!r} is not "
                       f"writable")


def _dir_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of the sorted parts' names and SHA-256s (a partitioned output's digest)."""
    import hashlib
    lines = [f"{p.name} {_file_sha256(p)}" for p in sorted(Path(path).iterdir())]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _close_client(client: Any, args: argparse.Namespace) -> None:
    """Close the client, and the LocalCluster when this run started it (no --scheduler)."""
    from dpcore.distributed import close_client
    close_client(client, cluster=args.scheduler is None)


def _fit_on_cluster(args: argparse.Namespace, synth: Any, data: Path, schema: Any,
                    on_round: Any, keep_client: bool = False) -> Any:
    """Fit with the Dask engine: on the cluster at --scheduler, else on a LocalCluster sized
    to this machine, closed afterwards unless ``keep_client`` (then returned, for the
    partitioned output)."""
    from dpcore.distributed import expand_paths, local_client
    from dpcore.files import same_file
    files = expand_paths(str(data))  # no matching file: an input error before anything starts
    for label, path in (("--out", args.out), ("--ledger", args.ledger), ("--result", args.result)):
        if path is not None and any(same_file(path, f) for f in files):
            raise CliError(f"{label} {str(path)!r} is one of the --data files; refusing to "
                           f"overwrite it")
    if args.scheduler is not None:
        from dpcore.distributed import require_dask
        require_dask()
        from distributed import Client
        client = Client(args.scheduler)
    else:
        client = local_client()
    try:
        synth.fit_distributed(str(data), schema, client=client, sep=args.delimiter,
                              callback=on_round, rows=args.rows, keep_open=True)
    except BaseException:
        _close_client(client, args)
        raise
    if not keep_client:
        _close_client(client, args)
        return None
    return client


def _read_protect(path: str) -> dict:
    """--protect FILE: a JSON object of mechanisms.privpgd.ProtectedQuery's fields (checked
    with the plan, before any charge)."""
    import json
    try:
        with open(path, encoding="utf-8") as fh:
            spec = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"--protect {path!r}: cannot read a JSON object ({exc})") from exc
    if not isinstance(spec, dict):
        raise CliError(f"--protect {path!r}: must hold a JSON object (weights, threshold, ...), "
                       f"got {type(spec).__name__}")
    return spec


def _read_public(path: str, sep: str) -> Any:
    """The public table for nist-mst or gem-pub, as raw strings (encoded later under the same
    schema)."""
    import pandas as pd
    from dpcore.encoding import iter_table_chunks
    return pd.concat(list(iter_table_chunks(path, sep=sep)), ignore_index=True)


def _read_transformed(path: Path, transform: Any, sep: str) -> Any:
    """Read the sensitive table chunk by chunk through nist-mst's public transform (Alg. 3)."""
    import numpy as np
    from dpcore.encoding import EncodingError, encode_frame, iter_table_chunks
    parts, rows = [], 0
    for chunk in iter_table_chunks(path, sep=sep):
        try:
            parts.append(encode_frame(transform.apply(chunk, where=str(path), row_offset=rows),
                                      transform.schema,
                                      row_offset=rows))
        except EncodingError as err:
            raise EncodingError(f"{path}: {err}") from None
        rows += len(chunk)
    if rows == 0:
        raise EncodingError(f"{path}: the table has a header but no data rows")
    return np.concatenate(parts)


def _file_sha256(path: str | os.PathLike) -> str:
    from dpcore.counted import file_sha256
    return file_sha256(path)


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


def _check_salt_file(ledger: str, continuing: bool) -> None:
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


def _save_salt(ledger: str, synth: Any) -> None:
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


def _result_document(args: argparse.Namespace, synth: Any, data_path: Path) -> dict[str, Any]:
    """What the run released (public): no record count, no timings (both depend on the data)."""
    result, ledger = synth.result, synth.ledger
    doc: dict[str, Any] = {
        "format": RESULT_FORMAT, "version": 1, "mechanism": args.mechanism,
        "epsilon": synth.epsilon, "delta": synth.delta,
        "rho_budget": str(ledger.budget), "rho_spent": str(ledger.spent),
        "data": str(data_path), "out": str(args.out), "ledger": str(args.ledger),
        "rows": len(result.synthetic), "rounds": len(result.rounds),
        "measured": [{"index": r.index, "kind": r.kind, "attrs": list(r.clique),
                      "sigma": r.sigma, "epsilon": r.epsilon, "rho": str(r.rho)}
                     for r in result.rounds],
    }
    bounds = result.confidence_bounds
    if bounds:
        doc["confidence_bounds"] = [
            {"attrs": list(b.clique), "bound": b.bound if math.isfinite(b.bound) else None,
             "level": b.level, "supported": b.supported} for b in bounds.values()]
    return doc


def _print_summary(args: argparse.Namespace, synth: Any, rows: int, elapsed: float) -> None:
    from dpcore.accounting import zcdp_to_approx_dp
    ledger = synth.ledger
    opening = [e for e in ledger.entries if e.kind == "open"][-1]
    spent = Fraction(ledger.spent - opening.rho_total)          # this run's charges
    eps = float(zcdp_to_approx_dp(spent, synth.delta)) if spent > 0 else 0.0
    records = synth.result.rounds
    measured = sum("measure" in r.kind for r in records)
    selected = sum("select" in r.kind for r in records)
    lifetime = "" if not args.continue_ledger else (
        f"; the ledger has spent rho = {float(ledger.spent):.6g} of its lifetime "
        f"{float(ledger.budget):.6g}")
    print(f"dpcore: {args.mechanism.upper()} finished in {elapsed:.1f} s: {len(records)} steps "
          f"({measured} noisy measurements, {selected} private selections); spent "
          f"rho = {float(spent):.6g} = ({eps:.4g}, {synth.delta:g})-DP{lifetime}; wrote {rows} "
          f"rows to {args.out}, ledger to {args.ledger}", file=sys.stderr)
    print(f"dpcore: ledger head {ledger.head_hash}: publish it; `dpcore verify --head` then "
          f"fails any rewrite of what the ledger held at this point", file=sys.stderr)


# ------------------------------------------------------------------------ verify
def _head_of(path: Path) -> str | None:
    """The ledger file's own head hash (what to publish), None when it cannot be read."""
    from dpcore.accounting.ledger import Ledger
    try:
        return Ledger.load(path).head_hash
    except Exception:       # a ledger that does not load has no head to publish
        return None


def _cmd_verify(args: argparse.Namespace) -> int:
    from dpcore.accounting import verify_ledger
    path = Path(args.ledger)
    if not path.is_file():
        raise CliError(f"ledger {args.ledger!r}: " + ("not a regular file" if path.exists()
                                                      else "no such file"))
    if (args.epsilon is None) != (args.delta is None):
        raise CliError("give both --epsilon and --delta (the promise to check), or neither")
    promise = {}
    if args.epsilon is not None:
        epsilon, delta = _budget(args)
        promise = {"epsilon": epsilon, "delta": delta}
    report = verify_ledger(path, **promise, head=args.head,
                           allow_fixed_seed=args.allow_fixed_seed)
    if args.json:
        print(json.dumps({"ok": bool(report.ok), "status": report.status,
                          "entries": report.entries, "runs": report.runs,
                          "rho_spent": None if report.rho_spent is None else str(report.rho_spent),
                          "rho_budget": None if report.rho_budget is None
                          else str(report.rho_budget),
                          "epsilon": report.epsilon if report.epsilon is not None
                          and math.isfinite(report.epsilon) else None,
                          "delta": report.delta, "head_hash": _head_of(path),
                          "promise": report.promise, "notes": list(report.notes),
                          "reasons": list(report.reasons)}, indent=1))
    else:
        print(report.summary())
    if report.status == "fail":
        more = f" (and {len(report.reasons) - 1} more)" if len(report.reasons) > 1 else ""
        raise CliError(f"ledger {args.ledger!r} does NOT verify: {report.reasons[0]}{more}",
                       EXIT_PRIVACY)
    if report.status == "incomplete":
        print(f"dpcore: ledger {args.ledger!r} is INCOMPLETE: {report.notes[0]}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def _cmd_ledger_create(args: argparse.Namespace) -> int:
    """An empty ledger with a lifetime budget, for several runs charged with --continue."""
    from dpcore.accounting import PrivacyFilter
    epsilon, delta = _budget(args)
    _probe_writable(args.path, "ledger", must_not_exist=True)
    f = PrivacyFilter.from_approx_dp(epsilon, delta, ledger_path=args.path)
    f.close()
    print(f"dpcore: created ledger {args.path} with a lifetime budget of ({epsilon:g}, "
          f"{delta:g})-DP, rho = {float(f.budget):.6g}; charge runs to it with "
          f"dpcore synth --ledger {args.path} --continue", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------------ evaluate
def _cmd_evaluate(args: argparse.Namespace) -> int:
    from dpcore.constraints import unconstrained, violations
    from dpcore.encoding import read_codes
    from dpcore.evaluation import evaluate
    from dpcore.fidelity import compare, train_synthetic_test_real

    real_path, schema = _data_and_schema(args, "real")
    if args.report is not None:
        report_dir = Path(args.report)
        if report_dir.exists() and not report_dir.is_dir():
            raise CliError(f"--report {args.report!r} exists and is not a directory")
        if not report_dir.parent.is_dir():
            raise CliError(f"--report {args.report!r}: parent directory does not exist")
    if args.target is not None and args.target not in schema.names:
        raise CliError(f"--target must be a schema column, got {args.target!r}")
    result_doc = _load_result(args.result) if args.result is not None else None
    real = read_codes(real_path, schema, sep=args.delimiter, debug=args.debug)
    # the synthetic table is read without the constraints: breaking them is counted, not fatal
    synth_schema = _clipping(unconstrained(schema)) if args.clip else unconstrained(schema)
    synth = read_codes(args.synth, synth_schema, sep=args.delimiter, debug=args.debug)
    broken = violations(synth, schema) if schema.constraints else None
    evaluation = evaluate(real, synth, schema.domain_dict(), args.workload)
    fidelity = None
    if not schema.encoded:
        fidelity = compare(_raw_frame(real_path, args.delimiter),
                           _raw_frame(args.synth, args.delimiter), schema)
    tstr = None
    if args.target is not None:
        tstr = train_synthetic_test_real(real, synth, schema, args.target)
    transport = None
    if args.transport:
        from dpcore.evaluation import transport_metrics
        transport = transport_metrics(real, synth, schema.domain_dict())
    if args.json:
        doc = {"warning": "NOT PRIVATE: computed from the real data; do not publish",
               **evaluation.to_dict()}
        if fidelity is not None:
            doc["raw"] = fidelity.to_dict()
        if tstr is not None:
            doc["tstr"] = tstr
        if transport is not None:
            doc["transport"] = transport.to_dict()
        if broken is not None:
            doc["violations"] = broken
        print(json.dumps(doc, indent=1))
    else:
        print(f"workload error {evaluation.workload_error:.4f} (AIM Definition 2, mean L1 of "
              f"normalised marginals, in [0, 2]) over {len(evaluation.marginals)} marginals; "
              f"real {evaluation.rows_real} rows, synthetic {evaluation.rows_synthetic} rows")
        worst = sorted(evaluation.marginals, key=lambda m: -m.error)[:10]
        print("worst marginals:")
        for m in worst:
            print(f"  {m.error:.4f}  {' x '.join(m.attrs)}")
        if fidelity is not None and fidelity.columns:
            print("numeric columns (real -> synthetic): mean; median; point masses")
            for c in fidelity.columns:
                masses = ", ".join(f"{v:g}: {r:.1%} -> {q:.1%}" for v, r, q in c.point_masses)
                print(f"  {c.name}: {c.mean[0]:.4g} -> {c.mean[1]:.4g}; {c.quantiles[2][0]:.4g} "
                      f"-> {c.quantiles[2][1]:.4g}{'; ' + masses if masses else ''}")
            if len(fidelity.correlation_names) >= 2:      # a gap needs a pair of columns
                print(f"largest correlation gap: {fidelity.max_correlation_gap:.3f}")
            else:
                print("largest correlation gap: n/a (fewer than two numeric columns)")
        if tstr is not None:
            a, b = tstr["train_synthetic"], tstr["train_real"]
            print(f"train on synthetic, test on real ({args.target}): accuracy "
                  f"{a['accuracy']:.3f} (trained on real: {b['accuracy']:.3f})")
        if transport is not None:
            print("PrivPGD paper metrics (embedding (c + 1/2) / k): " + ", ".join(
                f"{k} {v:.4g}" for k, v in transport.to_dict().items()))
        if broken is not None:
            print("schema constraints: synthetic rows breaking each rule")
            for v in broken:
                print(f"  {v['rows']:>8} ({v['share']:.2%})  {v['type']} {v['rule']}")
    if args.report is not None:
        from dpcore.report import write_report
        index = write_report(args.report, real, synth, schema, evaluation, result_doc,
                             fidelity=fidelity, tstr=tstr, violations=broken)
        if not args.json:
            print(f"report: {index}")
    return EXIT_OK


def _clipping(schema: Any) -> Any:
    """The schema with every numeric column clipping out-of-bounds values (other tools' outputs
    may stray past the public bounds; the real data must not, so only --synth is read so)."""
    import dataclasses
    from dpcore.schema import NumericColumn, Schema
    columns = [dataclasses.replace(c, out_of_bounds="clip") if isinstance(c, NumericColumn) else c
               for c in schema.columns]
    return Schema(columns, missing_values=schema.missing_values, warning=schema.warning)


def _raw_frame(path: str | os.PathLike, sep: str) -> Any:
    import pandas as pd
    if str(path).lower().endswith((".parquet", ".pq")):
        return pd.read_parquet(path)
    return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_filter=False)


def _load_result(path: str) -> dict[str, Any]:
    from dpcore.jsonio import load_path
    doc = load_path(path, what=f"--result {path!r}")   # strict: one-line error, exit 2
    if not isinstance(doc, dict) or doc.get("format") != RESULT_FORMAT:
        raise CliError(f"--result {path!r} is not a dpcore result file (written by "
                       f"dpcore synth --result)")
    return doc


# ------------------------------------------------------------------------ schema infer
def _parse_bounds(items: Sequence[str]) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for item in items:
        name, _, rng = item.partition("=")
        lo, sep, hi = rng.partition(":")
        if not name or not sep:
            raise CliError(f"--bounds must look like COLUMN=LOWER:UPPER, got {item!r}")
        try:
            pair = tuple(int(x) if x.strip().lstrip("-").isdigit() else float(x)
                         for x in (lo, hi))
        except ValueError:
            raise CliError(f"--bounds {item!r}: bounds must be numbers") from None
        if not pair[0] < pair[1]:
            raise CliError(f"--bounds {item!r}: LOWER must be < UPPER")
        out[name] = pair  # type: ignore[assignment]
    return out


def _parse_categories(items: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, cats = item.partition("=")
        labels = cats.split(",")
        if not name or not sep or not cats or len(set(labels)) != len(labels):
            raise CliError(f"--categories must look like COLUMN=a,b,c (distinct labels), "
                           f"got {item!r}")
        out[name] = labels
    return out


def _cmd_schema_infer(args: argparse.Namespace) -> int:
    from dpcore.encoding import infer_schema, iter_table_chunks
    bounds, cats = _parse_bounds(args.bounds), _parse_categories(args.categories)
    both = sorted(set(bounds) & set(cats))
    if both:
        raise CliError(f"column {both[0]!r} has both --bounds and --categories")
    if args.out is not None:
        _check_distinct([("DATA", args.data)], [("--out", args.out)])
        _probe_writable(args.out, "--out", force=args.force)
    from dpcore.encoding import sniff_delimiter
    sep = args.delimiter if args.delimiter is not None else sniff_delimiter(args.data)
    schema = infer_schema(iter_table_chunks(args.data, sep=sep), bounds=bounds,
                          categories=cats, bins=args.bins, missing_values=args.missing_values)
    if schema.warning:
        print(f"dpcore: WARNING: {schema.warning}", file=sys.stderr)
    if args.out is None:
        print(json.dumps(schema.to_dict(), indent=1))
    else:
        schema.save(args.out)
        print(f"dpcore: wrote draft schema {args.out}", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------------ clean
def _cmd_clean(args: argparse.Namespace) -> int:
    """List dpcore's own stale temporaries in a directory; remove them after confirmation (a
    TTY prompt) or with --yes. Only names of dpcore's writers match (see ``_STALE``); a dpcore
    still running in that directory would lose its temporary, so run this when none is."""
    if not Path(args.directory).is_dir():
        raise CliError(f"{args.directory!r} is not a directory")
    stale = stale_temporaries(args.directory)
    if not stale:
        print(f"dpcore: no stale temporary files in {args.directory}", file=sys.stderr)
        return EXIT_OK
    for p in stale:
        print(p)
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"dpcore: {len(stale)} stale temporary file(s); run again with --yes to "
                  f"remove them", file=sys.stderr)
            return EXIT_OK
        answer = input(f"remove these {len(stale)} file(s)? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("dpcore: nothing removed", file=sys.stderr)
            return EXIT_OK
    for p in stale:
        p.unlink(missing_ok=True)
    print(f"dpcore: removed {len(stale)} stale temporary file(s)", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------------ proofs
def _cmd_proofs(args: argparse.Namespace) -> int:
    try:
        import proofs
    except ImportError:
        raise CliError("the proofs package is not installed") from None
    results = proofs.run_all()
    print(proofs.format_table(results))
    failed = [r.name for r in results if not r.ok]
    if failed:
        raise CliError(f"{len(failed)} of {len(results)} privacy proofs failed: "
                       f"{', '.join(failed)}", EXIT_PRIVACY)
    return EXIT_OK


# ------------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dpcore", description="Differentially private synthetic data with a "
                "verifiable privacy ledger.")
    from dpcore import __version__
    p.add_argument("--version", action="version", version=f"dpcore {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("synth", help="fit a mechanism and write synthetic data + ledger")
    s.add_argument("--mechanism", choices=MECHANISMS, default="aim",
                   help="aim: recommended; mst: fast, the published MST; mwem: "
                        "MWEM+PGM; independent: the baseline; nist-mst: NIST-MST with "
                        "--public; fem, sepfem, dqrs: FEM, sepFEM, DQRS (MILP oracle); mwem-explicit, pep: Adaptive "
                        "Measurements on an explicit histogram (small domains); rap-softmax, "
                        "gem, gem-pub (with --public): on a mixture of product distributions "
                        "(gem needs pip install 'dpcore[deep]'); privpgd: particle gradient "
                        "descent on 2-way marginals (PrivPGD)")
    s.add_argument("--data", help="CSV (or .parquet) of sensitive records")
    s.add_argument("--schema", help="public schema JSON, or an mbi-style {column: size} domain")
    s.add_argument("--dataset", help=f"a bundled dataset instead of --data/--schema "
                   f"({', '.join(bundled_datasets())})")
    s.add_argument("--public", help="public provisional data (CSV or .parquet, same schema) for "
                   "--mechanism nist-mst (it picks the marginals and the transform of wide "
                   "integer columns) and gem-pub (the generator is pretrained on it); no budget "
                   "covers it (default: none)")
    s.add_argument("--epsilon", required=True, help="(epsilon, delta)-DP budget: epsilon > 0")
    s.add_argument("--delta", required=True, help="delta in (0, 1), e.g. 1e-9")
    s.add_argument("--workload", default="all-3way",
                   help="all-2way, all-3way (default) or a JSON file of marginals (aim, mwem)")
    s.add_argument("--rows", type=int, help="synthetic rows (default: the model's noisy record "
                   "count, at most 10^7)")
    s.add_argument("--seed", type=int, help="fix noise and sampling (testing only; default: "
                   "OS entropy)")
    s.add_argument("--max-model-size", type=float, help="junction-tree cap in MB (aim, mwem; "
                   "default: aim 80, mwem 8192)")
    s.add_argument("--rounds", type=int, help="rounds: AIM's T (default 16 x columns) or MWEM's "
                   "count (default 10)")
    s.add_argument("--particles", type=int, help="privpgd: particles m (default 100000)")
    s.add_argument("--epochs", type=int, help="privpgd: epochs (default 1000)")
    s.add_argument("--lr", type=float, help="privpgd: initial learning rate (default 0.1)")
    s.add_argument("--protect", metavar="FILE", help="privpgd: a statistic the synthetic data "
                   "must not reproduce (the paper's Sec. 4.4 regulariser), a JSON object "
                   '{"weights": {column: theta}, "threshold": b, "strength": lambda, '
                   '"sharpness": s, "share": budget share}; in-memory engine only')
    s.add_argument("--delimiter", default=",", help="CSV delimiter")
    s.add_argument("--engine", choices=("auto", "memory", "stream", "dask"), default="auto",
                   help="auto (default): stream when the mechanism can, else memory; "
                        "memory: read --data here into one code array (memory grows with the "
                        "rows); stream: read --data here chunk by chunk and count every "
                        "marginal the mechanism can ask for in one pass (aim, mst, mwem, "
                        "independent; memory grows with the model, not the rows; a batch "
                        "over 256 MiB costs a pass per further marginal); dask: --data is a "
                        "glob or directory of CSV/Parquet files that Dask workers read and "
                        "count (aim, mst, mwem, independent; pip install 'dpcore[dask]')")
    s.add_argument("--scheduler", help="with --engine dask: the address of a running Dask "
                   "scheduler (default: a LocalCluster sized to this machine)")
    s.add_argument("--out", required=True, help="synthetic CSV (or .parquet) to write; with "
                   "--engine dask, DIR/ (a trailing slash) writes a partitioned dataset "
                   "DIR/part-00000.csv ... (DIR.parquet/: Parquet parts), drawn by the workers")
    s.add_argument("--ledger", required=True,
                   help="ledger to write (must not exist, unless --continue)")
    s.add_argument("--continue", dest="continue_ledger", action="store_true",
                   help="charge this run to an existing ledger, within its lifetime budget")
    s.add_argument("--noise", choices=("discrete", "gaussian"), default="discrete",
                   help="measurement noise: the exact discrete Gaussian (default) or float "
                        "Gaussian (same cost; floats can leak through low-order bits)")
    s.add_argument("--result", help="also write a result JSON (rounds, AIM's confidence bounds; "
                   "default: none)")
    s.add_argument("--force", action="store_true",
                   help="overwrite an existing --out / --result (never an input, never a ledger)")
    s.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    s.add_argument("--debug", action="store_true", help="show the offending value in data "
                   "errors (they are sensitive: by default messages name column, row and rule)")
    s.set_defaults(func=_cmd_synth)

    v = sub.add_parser("verify", help="verify a ledger independently (exit 0 only if valid)")
    v.add_argument("ledger", help="the ledger file")
    v.add_argument("--epsilon", help="the promised epsilon (default: the ledger's own, reported "
                   "as taken from the file)")
    v.add_argument("--delta", help="the promised delta (give with --epsilon)")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.add_argument("--head", help="a head hash published after a run (dpcore synth prints it): "
                   "fail unless the ledger still holds it, i.e. only grew since")
    v.add_argument("--allow-fixed-seed", action="store_true", help="check the accounting of "
                   "runs made with --seed (tests, demos) instead of failing them: their noise "
                   "is reproducible, so they are not private releases")
    v.set_defaults(func=_cmd_verify)

    lg = sub.add_parser("ledger", help="ledger tools")
    lsub = lg.add_subparsers(dest="ledger_command", required=True, parser_class=_Parser)
    lc = lsub.add_parser("create", help="create an empty ledger with a lifetime (epsilon, delta) "
                         "budget for several runs (dpcore synth --continue)")
    lc.add_argument("path", help="the ledger file to create (must not exist)")
    lc.add_argument("--epsilon", required=True, help="lifetime epsilon > 0")
    lc.add_argument("--delta", required=True, help="lifetime delta in (0, 1)")
    lc.set_defaults(func=_cmd_ledger_create)

    e = sub.add_parser("evaluate", help="workload error of synthetic vs real data (not private)")
    e.add_argument("--real", help="the real CSV (or use --dataset)")
    e.add_argument("--synth", required=True, help="the synthetic CSV")
    e.add_argument("--schema", help="the public schema JSON of both tables")
    e.add_argument("--dataset", help="bundled dataset: its data as --real and its schema")
    e.add_argument("--workload", default="all-3way",
                   help="all-2way, all-3way or a JSON file of marginals")
    e.add_argument("--delimiter", default=",", help="CSV delimiter")
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.add_argument("--report", help="directory for the HTML + PNG report")
    e.add_argument("--result", help="result JSON from dpcore synth --result (AIM bounds)")
    e.add_argument("--transport", action="store_true", help="also the PrivPGD paper's metrics: "
                   "2-way TV, covariance, counting and threshold queries, SW1")
    e.add_argument("--target", help="a column to predict: train on synthetic, test on real "
                   "(needs scikit-learn: pip install 'dpcore[eval]')")
    e.add_argument("--debug", action="store_true", help="show the offending value in data "
                   "errors (sensitive; default: column, row and rule only)")
    e.add_argument("--clip", action="store_true", help="clip the synthetic table's out-of-bounds "
                   "numeric values to the schema's bounds (for other tools' outputs)")
    e.set_defaults(func=_cmd_evaluate)

    sc = sub.add_parser("schema", help="schema tools")
    ssub = sc.add_subparsers(dest="schema_command", required=True, parser_class=_Parser)
    inf = ssub.add_parser("infer", help="draft a schema from data (NOT private)")
    inf.add_argument("data", help="the CSV (or .parquet) to draft from")
    inf.add_argument("--out", help="write here instead of stdout")
    inf.add_argument("--bounds", action="append", default=[], metavar="COL=LO:HI",
                     help="public bounds of a numeric column (integer if both are)")
    inf.add_argument("--categories", action="append", default=[], metavar="COL=a,b,c",
                     help="public categories of a column")
    inf.add_argument("--bins", type=int, default=32, help="bins per numeric column")
    inf.add_argument("--missing-values", action="append", default=None, metavar="TOKEN",
                     help="a token meaning missing (repeatable; default: empty field)")
    inf.add_argument("--delimiter", help="CSV delimiter (default: sniffed from the first lines)")
    inf.add_argument("--force", action="store_true", help="overwrite an existing --out")
    inf.set_defaults(func=_cmd_schema_infer)

    cl = sub.add_parser("clean", help="list (and with --yes remove) stale temporary files a "
                        "killed dpcore left in a directory")
    cl.add_argument("directory", help="the folder to look in")
    cl.add_argument("--yes", action="store_true", help="remove them without asking")
    cl.set_defaults(func=_cmd_clean)

    pr = sub.add_parser("proofs", help="run the privacy proof checks and print the table")
    pr.set_defaults(func=_cmd_proofs)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # e.g. `dpcore evaluate ... | head`: stop quietly, like cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


class _Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so every writer's cleanup handler runs."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def _main(argv: Sequence[str] | None) -> int:
    try:  # only the main thread may install handlers; elsewhere SIGTERM keeps its default
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:
        return _run(argv)
    try:
        return _run(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _memory_advice(args: argparse.Namespace) -> str:
    """What to try after a MemoryError: only options the command's mechanism takes (audit 14:
    the advice named --max-model-size for mechanisms without it)."""
    mechanism = getattr(args, "mechanism", None)
    if mechanism in ("aim", "mwem"):
        return "try a smaller --max-model-size or --workload, or coarsen the schema"
    if mechanism == "privpgd":
        return "try fewer --particles or a smaller --workload, or coarsen the schema"
    if mechanism in ("fem", "sepfem", "dqrs", "mwem-explicit", "pep", "rap-softmax", "gem",
                     "gem-pub"):
        return "try a smaller --workload, or coarsen the schema"
    if mechanism is not None:
        return "coarsen the schema (fewer categories or bins) or write fewer --rows"
    return "the input or the schema needs more memory than this machine has"


def _run(argv: Sequence[str] | None) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = build_parser().parse_args(argv)
    if getattr(args, "missing_values", "unset") is None:
        args.missing_values = [""]
    from dpcore.errors import DpcoreError
    try:
        if getattr(args, "delimiter", None) is not None:
            from dpcore.encoding import check_delimiter
            args.delimiter = check_delimiter(args.delimiter)
        return args.func(args)
    except CliError as err:
        print(f"dpcore: error: {err}", file=sys.stderr)
        return err.code
    except DpcoreError as err:
        code = EXIT_PRIVACY if type(err).__name__ in ("BudgetExceededError",) else EXIT_INPUT
        kind = "privacy refusal" if code == EXIT_PRIVACY else "error"
        print(f"dpcore: {kind}: {err}", file=sys.stderr)
        return code
    except BrokenPipeError:
        raise
    except MemoryError as err:
        print(f"dpcore: error: out of memory ({err or 'MemoryError'}); "
              f"{_memory_advice(args)}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:  # e.g. disk full while writing; the atomic writers left nothing
        print(f"dpcore: error: {err}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("dpcore: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("dpcore: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(main())
