"""The other subcommands: verify, ledger create, evaluate, schema infer, clean, proofs."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from dpcore.cli.common import (EXIT_INCOMPLETE, EXIT_OK, EXIT_PRIVACY, RESULT_FORMAT, CliError,
                               check_distinct, data_and_schema, parse_budget, probe_writable,
                               stale_temporaries)


def _head_of(path: Path) -> str | None:
    """The ledger file's own head hash (what to publish), None when it cannot be read."""
    from dpcore.accounting.ledger import Ledger
    try:
        return Ledger.load(path).head_hash
    except Exception:       # a ledger that does not load has no head to publish
        return None


def cmd_verify(args: argparse.Namespace) -> int:
    from dpcore.accounting import verify_ledger
    path = Path(args.ledger)
    if not path.is_file():
        raise CliError(f"ledger {args.ledger!r}: " + ("not a regular file" if path.exists()
                                                      else "no such file"))
    if (args.epsilon is None) != (args.delta is None):
        raise CliError("give both --epsilon and --delta (the promise to check), or neither")
    promise = {}
    if args.epsilon is not None:
        epsilon, delta = parse_budget(args)
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
                          "reasons": list(report.reasons),
                          "run_summaries": [r.as_dict() for r in report.run_summaries]},
                         indent=1))
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


def cmd_ledger_create(args: argparse.Namespace) -> int:
    """An empty ledger with a lifetime budget, for several runs charged with --continue."""
    from dpcore.accounting import PrivacyFilter
    epsilon, delta = parse_budget(args)
    probe_writable(args.path, "ledger", must_not_exist=True)
    f = PrivacyFilter.from_approx_dp(epsilon, delta, ledger_path=args.path)
    f.close()
    print(f"dpcore: created ledger {args.path} with a lifetime budget of ({epsilon:g}, "
          f"{delta:g})-DP, rho = {float(f.budget):.6g}; charge runs to it with "
          f"dpcore synth --ledger {args.path} --continue", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------------ evaluate
def cmd_evaluate(args: argparse.Namespace) -> int:
    from dpcore.constraints import unconstrained, violations
    from dpcore.encoding import read_codes
    from dpcore.evaluation import evaluate
    from dpcore.fidelity import compare, train_synthetic_test_real

    real_path, schema = data_and_schema(args, "real")
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
        from dpcore.encoding import parquet_error
        try:
            import pyarrow as pa
            failures: tuple = (pa.ArrowException, OSError)
        except ImportError:
            failures = (OSError,)
        try:
            return pd.read_parquet(path)
        except failures as err:
            raise CliError(parquet_error(path, err)) from None
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


def cmd_schema_infer(args: argparse.Namespace) -> int:
    from dpcore.encoding import infer_schema, iter_table_chunks
    bounds, cats = _parse_bounds(args.bounds), _parse_categories(args.categories)
    both = sorted(set(bounds) & set(cats))
    if both:
        raise CliError(f"column {both[0]!r} has both --bounds and --categories")
    if args.out is not None:
        check_distinct([("DATA", args.data)], [("--out", args.out)])
        probe_writable(args.out, "--out", force=args.force)
    from dpcore.encoding import is_parquet, sniff_delimiter
    sep = args.delimiter if args.delimiter is not None or is_parquet(args.data) \
        else sniff_delimiter(args.data)
    sep = sep or ","
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
def cmd_clean(args: argparse.Namespace) -> int:
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
def cmd_proofs(args: argparse.Namespace) -> int:
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

