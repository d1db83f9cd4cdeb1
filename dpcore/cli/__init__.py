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
from dpcore.cli.common import (DASK_MECHANISMS, EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK, EXIT_PRIVACY,
                               MECHANISMS, PUBLIC_MECHANISMS, RESULT_FORMAT, CliError,
                               bundled_datasets, stale_temporaries)
from dpcore.cli.parser import build_parser, main

__all__ = ["CliError", "DASK_MECHANISMS", "EXIT_INCOMPLETE", "EXIT_INPUT", "EXIT_OK",
           "EXIT_PRIVACY", "MECHANISMS", "PUBLIC_MECHANISMS", "RESULT_FORMAT", "build_parser",
           "bundled_datasets", "main", "stale_temporaries"]
