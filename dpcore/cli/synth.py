"""``dpcore synth``: plan the whole run before reading the data or opening the ledger (an
invalid run spends nothing), fit on the chosen engine, write the outputs, close the run."""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from dpcore.cli.common import (DASK_MECHANISMS, EXIT_OK, PUBLIC_MECHANISMS, RESULT_FORMAT, CliError,
                               atomic_json, bundled, bundled_datasets, check_distinct,
                               check_free_space, check_output_format, data_and_schema, file_sha256,
                               is_utf8, parse_budget, probe_writable, progress_bar,
                               remove_own_temporaries)
from dpcore.cli.salt import check_salt_file, save_salt


def cmd_synth(args: argparse.Namespace) -> int:
    started_at = time.time()
    try:
        return _synth(args)
    except BaseException:
        # The writers remove their own temporaries; this catches the few instructions between
        # a temporary's creation and its writer's cleanup handler (SIGINT/SIGTERM land there).
        remove_own_temporaries([args.out, args.result], started_at - 2)
        raise


def _synth(args: argparse.Namespace) -> int:
    from dpcore.encoding import is_parquet, read_codes
    from mechanisms.synthesizer import Synthesizer

    epsilon, delta = parse_budget(args)
    if args.repair and not args.continue_ledger:
        raise CliError("--repair applies to --continue (an existing ledger)")
    if args.rows is not None and args.rows < 1:
        raise CliError(f"--rows must be >= 1, got {args.rows}")
    # The plan, part 1: outputs. None may be an input or another output; none is overwritten
    # without --force (the ledger never is, but --continue appends to it); each can be
    # written, in a format we can write.
    if args.dataset is not None and args.dataset in bundled_datasets():
        data_in, schema_in = bundled(args.dataset)
    else:
        data_in, schema_in = args.data, args.schema
    workload_in = args.workload if args.workload not in ("all-1way", "all-2way", "all-3way") \
        and os.path.isfile(args.workload) else None
    from dpcore.files import salt_path, same_file
    for label, path in (("--out", args.out), ("--ledger", args.ledger), ("--result", args.result)):
        if path is not None and not is_utf8(path):
            raise CliError(f"{label} {path!r}: the path is not UTF-8 text, which the ledger "
                           f"records it as; rename it")
    public_in = getattr(args, "public", None)
    if public_in is not None and data_in is not None and same_file(public_in, data_in):
        raise CliError(f"--public {public_in!r} is the same file as --data: public data is read "
                       f"without a charge, so it must not be the sensitive table")
    check_distinct([("--data", data_in), ("--schema", schema_in), ("--workload", workload_in),
                     ("--public", public_in), ("the ledger's salt file", salt_path(args.ledger))],
                    [("--out", args.out), ("--ledger", args.ledger), ("--result", args.result)])
    partitioned = _partitioned_out(args)
    if partitioned:
        _probe_partition_dir(args.out, [("--ledger", args.ledger), ("--result", args.result)])
    else:
        probe_writable(args.out, "--out", force=args.force)
    if args.continue_ledger:
        if not Path(args.ledger).is_file():
            raise CliError(f"--continue: ledger {args.ledger!r} does not exist (nothing to continue)")
    else:
        probe_writable(args.ledger, "--ledger", must_not_exist=True)
    probe_writable(args.result, "--result", force=args.force)
    check_salt_file(args.ledger, args.continue_ledger)
    check_output_format(args.out)
    data_path, schema = data_and_schema(args)
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
                               "continue_ledger": args.continue_ledger,
                               "repair_ledger": args.repair, "noise": args.noise,
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
    check_free_space(args.out, args.rows, len(schema.names))
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
    bar = progress_bar(args, args.mechanism.upper())
    from mechanisms.synthesizer import budget_meter
    advance = budget_meter(bar, budget) if bar is not None else None

    def on_round(record: Any) -> None:
        if bar is not None:
            advance(record)
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
            outputs = {str(args.out): file_sha256(args.out)}
        if args.result is not None:
            atomic_json(args.result, _result_document(args, synth, data_path))
            outputs[str(args.result)] = file_sha256(args.result)
    except BaseException as exc:
        synth.close_run("failed", reason=f"writing the outputs: {type(exc).__name__}")
        raise
    synth.close_run("completed", outputs=outputs)
    try:
        save_salt(args.ledger, synth)
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
    lines = [f"{p.name} {file_sha256(p)}" for p in sorted(Path(path).iterdir())]
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
        if keep_client:     # the workers will write the parts: can they, before any charge?
            from mechanisms.partitioned import check_workers_can_write
            check_workers_can_write(client, args.out)
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

