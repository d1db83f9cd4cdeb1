"""The argument parser and the entry point: every error is one line and an exit code."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any, Sequence

from dpcore.cli.commands import (cmd_clean, cmd_evaluate, cmd_ledger_create, cmd_proofs,
                                 cmd_schema_infer, cmd_verify)
from dpcore.cli.common import (EXIT_INPUT, EXIT_OK, EXIT_PRIVACY, MECHANISMS, CliError,
                               bundled_datasets)
from dpcore.cli.synth import cmd_synth


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
    s.add_argument("--repair", action="store_true",
                   help="with --continue: continue a ledger whose file ends without its trailer "
                        "(a crash mid-write, or a cut), discarding its partial last line and "
                        "recording that in the ledger; check it against your last published "
                        "head first (dpcore verify --head)")
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
    s.set_defaults(func=cmd_synth)

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
    v.set_defaults(func=cmd_verify)

    lg = sub.add_parser("ledger", help="ledger tools")
    lsub = lg.add_subparsers(dest="ledger_command", required=True, parser_class=_Parser)
    lc = lsub.add_parser("create", help="create an empty ledger with a lifetime (epsilon, delta) "
                         "budget for several runs (dpcore synth --continue)")
    lc.add_argument("path", help="the ledger file to create (must not exist)")
    lc.add_argument("--epsilon", required=True, help="lifetime epsilon > 0")
    lc.add_argument("--delta", required=True, help="lifetime delta in (0, 1)")
    lc.set_defaults(func=cmd_ledger_create)

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
    e.set_defaults(func=cmd_evaluate)

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
    inf.set_defaults(func=cmd_schema_infer)

    cl = sub.add_parser("clean", help="list (and with --yes remove) stale temporary files a "
                        "killed dpcore left in a directory")
    cl.add_argument("directory", help="the folder to look in")
    cl.add_argument("--yes", action="store_true", help="remove them without asking")
    cl.set_defaults(func=cmd_clean)

    pr = sub.add_parser("proofs", help="run the privacy proof checks and print the table")
    pr.set_defaults(func=cmd_proofs)
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
