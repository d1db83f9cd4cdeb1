"""A scikit-learn-style front end: ``AIM(epsilon=1, delta=1e-9).fit(df, schema=s).sample(n)``.

Each synthesizer wraps one mechanism. ``fit`` encodes the DataFrame under a public
:class:`~dpcore.schema.Schema`, spends the whole (ε, δ) budget through a
:class:`~dpcore.Curator` and keeps the result; ``sample`` draws any number of rows from the
fitted model and decodes them, which is post-processing and costs no budget.

>>> import pandas as pd
>>> df = pd.DataFrame({"sex": ["F", "M"] * 50, "smoker": ["no", "no", "yes", "no"] * 25})
>>> schema = {"columns": {"sex": {"type": "categorical", "categories": ["F", "M"]},
...                       "smoker": {"type": "categorical", "categories": ["no", "yes"]}}}
>>> synth = Synthesizer.create("mst", epsilon=1.0, delta=1e-6).fit(df, schema=schema)
>>> sample = synth.sample(10, seed=0)
>>> list(sample.columns), len(sample)
(['sex', 'smoker'], 10)
>>> report = synth.verify()
>>> report.ok, float(synth.ledger.spent) <= float(synth.ledger.budget)
(True, True)
"""
from __future__ import annotations

import abc
import inspect
import os
from fractions import Fraction
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from dpcore.accounting import approx_dp_to_zcdp
from dpcore.constraints import (derived_rules, expand, forbidden_rows, forbidden_rules,
                                measured_schema, structural_zeros, unconstrained, zero_cliques,
                                zero_masks)
from dpcore.encoding import DEFAULT_CHUNK_ROWS, decode_codes, encode_frame, is_parquet
from dpcore.errors import DpcoreTypeError, InvalidArgumentError
from dpcore.evaluation import WorkloadSpec, parse_workload
from dpcore.schema import Schema

from .plan import Plan
from .result import MechanismResult, RoundRecord

SchemaLike = Union[Schema, Mapping[str, Any], str, "os.PathLike[str]"]

__all__ = ["AIM", "FEM", "MST", "MWEM", "MWEMHistogram", "NISTMST", "PEP", "Independent",
           "PrivPGD", "Synthesizer"]

# "discrete": the exact discrete Gaussian on counts (default; no floating point in the noise);
# "gaussian": continuous float noise (same zCDP cost, but floats leak through their low bits).
NOISES = ("discrete", "gaussian")
# delta when only epsilon is given: fixed, so it never depends on the data (a rule such as
# 1/n^2 would read the record count, which is private). 1e-9 is below 1/n for any table of
# fewer than a billion records, and is the value of the AIM and MST papers' experiments.
DEFAULT_DELTA = 1e-9


def as_schema(schema: SchemaLike | None) -> Schema:
    """A Schema from a Schema, a dict (schema or mbi domain) or a JSON file path."""
    if schema is None:
        raise InvalidArgumentError(
            "schema is required: pass the public schema (a dpcore schema or a {column: size} "
            "domain). dpcore.encoding.infer_schema drafts one, but reading the data to build a "
            "schema is not private")
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, Mapping):
        return Schema.from_dict(schema)
    return Schema.load(schema)


def _public_reason(exc: BaseException) -> str:
    """A failed run's reason for the public ledger. An error reading the records (a later
    pass over an input that changed) names a row and column, with ``--debug`` a value: facts
    of the data, not released under DP, so only its kind is recorded."""
    from dpcore.encoding import EncodingError
    if isinstance(exc, EncodingError):
        return f"{type(exc).__name__}: the input failed its schema on a later pass (the " \
               f"details are withheld from the ledger)"
    return f"{type(exc).__name__}: {exc}"


def _check_seed(seed: Any) -> None:
    """A sample seed is an integer in [0, 2^64) (the model's sampler, MST's decompression
    and the rejection sampler all take it): DpcoreTypeError for another type,
    InvalidArgumentError outside the range (as the model's sampler says)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise DpcoreTypeError(f"seed must be an integer or None, got {type(seed).__name__}")
    if not 0 <= seed < 2 ** 64:
        raise InvalidArgumentError(f"seed must be in [0, 2**64), got {seed}")


def _kept_workload(workload: Any) -> Any:
    """A workload spec as kept by a synthesizer: a name or a file path as given, anything else
    (an iterator of marginals too) as a list, so planning and the ledger see the same one."""
    if isinstance(workload, (str, os.PathLike)):
        return workload
    try:
        return list(workload)
    except TypeError:
        raise DpcoreTypeError(f"workload must be a spec name, a file path or an iterable of "
                              f"marginals, got {type(workload).__name__}") from None


def _workload_label(workload: Any) -> str:
    """The workload as the ledger's run opening records it."""
    if isinstance(workload, (str, os.PathLike)):
        return os.fspath(workload)
    return f"{len(workload)} marginals"


def _check_text(name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise DpcoreTypeError(f"{name} must be a str, got {type(value).__name__}")


def _path_argument(name: str, path: Any) -> str:
    """``path`` as a str: a str or an os.PathLike of one (not bytes, not a file descriptor)."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise DpcoreTypeError(f"{name} must be a path (str or os.PathLike), got "
                              f"{type(path).__name__}")
    return path


def budget_meter(bar: Any, budget: Fraction) -> Callable[[RoundRecord], None]:
    """A round callback moving ``bar`` (a tqdm bar of total 100) to the exact share of
    ``budget`` the rounds have charged, at most 100 (float increments overshot, and tqdm
    warned "clamping frac")."""
    spent = [Fraction(0)]

    def advance(record: RoundRecord) -> None:
        spent[0] += Fraction(record.rho)
        bar.update(min(100.0, float(spent[0] / budget) * 100) - bar.n)
    return advance


def _options(klass: type) -> tuple[set[str], list[str]]:
    """The keyword options ``klass(...)`` takes (its ``__init__`` and the bases' it passes
    ``**kwargs`` on to) and the required ones (no default)."""
    accepted: set[str] = set()
    required: list[str] = []
    for base in klass.__mro__:
        init = base.__dict__.get("__init__")
        if init is None:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]     # past self
        for p in params:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                accepted.add(p.name)
                if p.default is p.empty and p.name not in required:
                    required.append(p.name)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return accepted, required


class Synthesizer(abc.ABC):
    """Base class: holds the budget, runs the mechanism, samples and decodes.

    ``epsilon``, ``delta``: the (ε, δ)-DP guarantee (``delta`` defaults to 1e-9, a fixed value
    that never looks at the data); the budget is the largest ρ-zCDP that implies it
    (Canonne-Kamath-Steinke conversion, see ``dpcore.accounting``). ``seed`` makes a run
    reproducible (noise and sampling); without it each release is keyed from the OS CSPRNG,
    which is what a real release must use. ``ledger_path``: where the filter appends the ledger
    at every charge (must not exist yet, unless ``continue_ledger=True`` charges this run to an
    existing ledger's lifetime budget; ``repair_ledger=True`` also continues one whose file
    ends without its trailer, recording the repair: see
    :meth:`dpcore.accounting.PrivacyFilter.resume`). ``noise``: "discrete" (the exact discrete Gaussian,
    default) or "gaussian" (float). ``progress``: a tqdm bar during ``fit``.
    """

    name: ClassVar[str] = ""
    # True: the mechanism reads derived columns from the data and measures marginals holding
    # them as coarsenings of their parents (mechanisms.coarsen); False: it never sees them.
    measures_derived: ClassVar[bool] = False
    # True: the mechanism reads the data through marginals only (a counted table will do:
    # fit_file, fit_distributed); False: it needs the records themselves
    reads_marginals_only: ClassVar[bool] = False
    # True: the mechanism fits its model with the forbidden rules as structural zeros (each
    # rule's columns a model clique, sized by the plan); False: rejection sampling only
    uses_zeros: ClassVar[bool] = False
    # The released model's family, for the exact conditioned draw that replaces a failed
    # rejection (mechanisms.conditioned): "product" (1-way cliques, or a mixture of products:
    # the rules' own tree, sized in the plan), "histogram" (one clique over the whole domain),
    # None (record mixtures, which filter records, or models fit with the zeros)
    conditioned_model: ClassVar[str | None] = None
    # True: the mechanism's records come from an optimisation oracle that keeps the forbidden
    # rules as constraints (FEM, sepFEM, DQRS: every record it releases is allowed)
    oracle_keeps_rules: ClassVar[bool] = False
    _registry: ClassVar[dict[str, type["Synthesizer"]]] = {}

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *, seed: int | None = None,
                 ledger_path: str | os.PathLike | None = None, continue_ledger: bool = False,
                 repair_ledger: bool = False, noise: str = "discrete",
                 progress: bool = True) -> None:
        if isinstance(epsilon, (np.integer, np.floating)):     # numpy scalars as Python's
            epsilon = epsilon.item()
        if isinstance(delta, (np.integer, np.floating)):
            delta = delta.item()
        for label, value, ok in (("epsilon", epsilon, lambda v: v > 0),
                                 ("delta", delta, lambda v: 0 < v < 1)):
            if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
                raise DpcoreTypeError(f"{label} must be a number (int, float or Fraction), got "
                                      f"{type(value).__name__}")
            if not (np.isfinite(float(value)) and ok(value)):
                rule = "> 0 and finite" if label == "epsilon" else "in (0, 1)"
                raise InvalidArgumentError(f"{label} must be {rule}, got {value!r}")
        if noise not in NOISES:
            raise InvalidArgumentError(f"noise must be one of {NOISES}, got {noise!r}")
        if not isinstance(continue_ledger, bool):
            raise InvalidArgumentError(f"continue_ledger must be True or False, got {continue_ledger!r}")
        if continue_ledger and ledger_path is None:
            raise InvalidArgumentError("continue_ledger=True needs the ledger_path to continue")
        if not isinstance(repair_ledger, bool):
            raise InvalidArgumentError(f"repair_ledger must be True or False, got {repair_ledger!r}")
        if repair_ledger and not continue_ledger:
            raise InvalidArgumentError("repair_ledger=True applies to continue_ledger=True")
        self.repair_ledger = repair_ledger
        self.epsilon, self.delta, self.seed = epsilon, delta, seed
        self.ledger_path, self.continue_ledger, self.noise = ledger_path, continue_ledger, noise
        self.schema_: Schema | None = None
        self.result_: MechanismResult | None = None
        self.input_salt_: str | None = None
        self.progress = bool(progress)
        self._filter: Any = None
        self._ledger: Any = None
        self._samples: np.random.Generator | None = None
        self._own_table: np.ndarray | None = None     # the fit's table, constraints applied
        self.rejection_rate_: float | None = None      # share of draws rejected, last sample

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            Synthesizer._registry[cls.name] = cls

    @classmethod
    def create(cls, name: str, **kwargs: Any) -> "Synthesizer":
        """A synthesizer by name (``sorted(Synthesizer._registry)``: "aim", "mst", ...) with
        its options as keywords; an unknown name, an option the mechanism does not take or a
        required one missing is an InvalidArgumentError naming it."""
        klass = cls._registry.get(name.lower()) if isinstance(name, str) else None
        if klass is None:
            raise InvalidArgumentError(f"mechanism must be one of {sorted(cls._registry)}, "
                                       f"got {name!r}")
        accepted, required = _options(klass)
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise InvalidArgumentError(f"{name} takes no option {unknown[0]!r}; its options: "
                                       f"{sorted(accepted)}")
        missing = [p for p in required if p not in kwargs]
        if missing:
            raise InvalidArgumentError(f"{name} needs the option {missing[0]!r}")
        return klass(**kwargs)

    # ------------------------------------------------------------------ fitting
    def fit(self, data: pd.DataFrame, schema: SchemaLike | None = None, *,
            callback: Callable[[RoundRecord], None] | None = None,
            rows: int | None = None) -> "Synthesizer":
        """Encode ``data`` under ``schema`` and run the mechanism, spending the whole budget."""
        if not isinstance(data, pd.DataFrame):
            raise InvalidArgumentError(f"data must be a pandas DataFrame, got "
                                       f"{type(data).__name__}")
        self._remember_schema(schema)
        s = as_schema(schema)
        bar = self._progress_bar()
        if bar is not None:
            budget = Fraction(approx_dp_to_zcdp(self.epsilon, self.delta))
            user_callback = callback
            advance = budget_meter(bar, budget)

            def callback(record: RoundRecord) -> None:  # noqa: F811 - wraps the user's
                advance(record)
                if user_callback is not None:
                    user_callback(record)
        try:
            return self.fit_codes(encode_frame(data, s), s, callback=callback, rows=rows)
        finally:
            if bar is not None:
                bar.close()

    def fit_sample(self, data: pd.DataFrame, schema: SchemaLike | None = None, *,
                   n: int | None = None) -> pd.DataFrame:
        """``fit(data, schema)`` then ``sample(n)`` (smartnoise-synth's one-call form)."""
        return self.fit(data, schema).sample(n)

    def _progress_bar(self) -> Any:
        if not self.progress:
            return None
        from tqdm.auto import tqdm
        return tqdm(total=100.0, desc=f"{self.name.upper()} budget spent", unit="%",
                    bar_format="{desc}: {percentage:3.0f}% |{bar}| {elapsed}", leave=False)

    def fit_codes(self, codes: np.ndarray, schema: Schema, *,
                  callback: Callable[[RoundRecord], None] | None = None,
                  rows: int | None = None, keep_open: bool = False,
                  input_sha256: str | None = None) -> "Synthesizer":
        """Run on an already encoded ``N x d`` code array (what the CLI uses for big files).
        ``rows``: size of the result's synthetic table (default: the model's noisy total).
        The run is recorded in the ledger between an opening and a closing entry;
        ``keep_open=True`` leaves it open for the caller to close (with its outputs' hashes)
        through :meth:`close_run`. ``input_sha256``: the input file's hash (default: the
        codes'), committed to in the opening entry."""
        from dpcore import Dataset

        if self.result_ is not None:
            raise InvalidArgumentError("this synthesizer is already fitted (its budget is "
                                       "spent); create a new one")
        plan = self.plan(schema, rows=rows)  # before the filter: a refused plan spends nothing
        # the model omits derived columns (regenerated from their parents); the data the
        # curator holds keeps them only for a mechanism that measures them as coarsenings
        data_schema = self._data_schema(schema)
        if data_schema is not schema:
            codes = codes[:, [schema.names.index(n) for n in data_schema.names]]
        dataset = Dataset(codes, data_schema.domain())
        if input_sha256 is None:
            input_sha256 = _codes_sha256(codes)
        return self._fit_dataset(dataset, schema, plan, input_sha256, callback=callback,
                                 keep_open=keep_open)

    def fit_distributed(self, source: Any, schema: SchemaLike, *, client: Any = None,
                        sep: str = ",", batch_bytes: int | None = None,
                        callback: Callable[[RoundRecord], None] | None = None,
                        rows: int | None = None, keep_open: bool = False) -> "Synthesizer":
        """Run on data held by a Dask cluster (``pip install 'dpcore[dask]'``): ``source`` is
        a glob, directory or list of CSV/Parquet files the workers can read, or a Dask
        DataFrame of raw values. Workers encode and count; the driver receives count tables
        only (:class:`dpcore.distributed.DistributedTable`). Every marginal the mechanism can
        ask for (:meth:`batch_cliques`) is counted in one pass *before* the ledger is opened:
        a failed count (bad data, a worker lost more often than the scheduler retries)
        raises with no ledger entry and nothing spent. Marginals outside that batch (over
        the size cap) are counted when asked for, after their charge; a failure there closes
        the run as failed after the charges made so far, like any failed fit. For a fixed
        seed the ledger's charges, the model and the synthetic rows are those of
        :meth:`fit_codes` on the same records; the input commitment is to the files' SHA-256
        (or the partitions' codes) rather than to one file's."""
        if self.result_ is not None:
            raise InvalidArgumentError("this synthesizer is already fitted (its budget is "
                                       "spent); create a new one")
        if not self.reads_marginals_only:
            raise InvalidArgumentError(f"{self.name} reads records, not only marginals: fit it "
                                       f"on the codes (fit_codes) instead of fit_distributed")
        from dpcore.distributed import DEFAULT_BATCH_BYTES, DistributedTable

        self._remember_schema(schema)
        schema = as_schema(schema)
        plan = self.plan(schema, rows=rows)
        data_schema = self._data_schema(schema)
        table = DistributedTable(source, schema, measured=data_schema, client=client, sep=sep,
                                 batch_bytes=DEFAULT_BATCH_BYTES if batch_bytes is None
                                 else batch_bytes)
        digest = table.prefetch(self.batch_cliques(data_schema.domain(), plan))
        self._input_paths = table.files         # never outputs of this synthesizer
        return self._fit_dataset(table, schema, plan, digest, callback=callback,
                                 keep_open=keep_open)

    def fit_file(self, path: str | os.PathLike, schema: SchemaLike, *, sep: str = ",",
                 chunk_rows: int | None = None, debug: bool = False, engine: str = "auto",
                 batch_bytes: int | None = None,
                 callback: Callable[[RoundRecord], None] | None = None,
                 rows: int | None = None, keep_open: bool = False) -> "Synthesizer":
        """Run on one CSV/Parquet file read chunk by chunk in this process, never held whole
        (:class:`dpcore.counted.FileTable`): memory grows with the model and the chunk, not
        with the row count. Every marginal the mechanism can ask for (:meth:`batch_cliques`,
        up to ``batch_bytes`` of tables, default 256 MiB) is counted in one pass *before* the
        ledger is opened, so a bad file (a bad value, a ragged row: the errors of
        :func:`dpcore.encoding.read_codes`, which takes the same ``sep``, ``chunk_rows``,
        ``debug`` and ``engine``) raises with no ledger entry and nothing spent. A marginal
        outside the batch costs one more pass, after its charge. For a fixed seed the ledger's
        charges, the model and the synthetic rows are those of :meth:`fit_codes` on the
        file's codes with the file's SHA-256 as ``input_sha256`` (the CLI's memory engine).
        ``data_passes_`` then holds the passes made over the file. Mechanisms that read
        records rather than marginals (``reads_marginals_only`` False) are refused."""
        from dpcore.counted import DEFAULT_BATCH_BYTES, FileTable

        if self.result_ is not None:
            raise InvalidArgumentError("this synthesizer is already fitted (its budget is "
                                       "spent); create a new one")
        if not self.reads_marginals_only:
            raise InvalidArgumentError(f"{self.name} reads records, not only marginals: fit it "
                                       f"on the codes (fit_codes) instead of fit_file")
        self._remember_schema(schema)
        schema = as_schema(schema)
        plan = self.plan(schema, rows=rows)   # a refused plan reads nothing, spends nothing
        data_schema = self._data_schema(schema)
        table = FileTable(path, schema, measured=data_schema, sep=sep, chunk_rows=chunk_rows,
                          debug=debug, engine=engine,
                          batch_bytes=DEFAULT_BATCH_BYTES if batch_bytes is None else batch_bytes)
        digest = table.prefetch(self.batch_cliques(data_schema.domain(), plan))
        self._input_path = os.fspath(path)      # never an output of this synthesizer
        try:
            return self._fit_dataset(table, schema, plan, digest, callback=callback,
                                     keep_open=keep_open)
        finally:
            # the count only: the table itself (exact counts) must not outlive the fit
            self.data_passes_ = table.passes

    def batch_fits(self, schema: SchemaLike, *, rows: int | None = None,
                   batch_bytes: int | None = None) -> bool:
        """Whether every marginal this mechanism can ask for fits in one batch of
        ``batch_bytes`` (default 256 MiB), so :meth:`fit_file` reads the file exactly once.
        Public information only (the schema and the options)."""
        from dpcore.counted import DEFAULT_BATCH_BYTES, batch_bytes as needed
        schema = as_schema(schema)
        domain = self._data_schema(schema).domain()
        cap = DEFAULT_BATCH_BYTES if batch_bytes is None else batch_bytes
        return needed(domain, self.batch_cliques(domain, self.plan(schema, rows=rows))) <= cap

    def batch_cliques(self, domain: Any, plan: Plan) -> list[tuple[str, ...]]:
        """The marginals this mechanism can read, counted up front by the Dask engine: here
        every 1-way and 2-way marginal (MST's selection reads all pairs)."""
        import itertools
        return [(a,) for a in domain.attrs] + list(itertools.combinations(domain.attrs, 2))

    def _fit_dataset(self, dataset: Any, schema: Schema, plan: Plan, input_sha256: str, *,
                     callback: Any, keep_open: bool) -> "Synthesizer":
        """Open the run, let the mechanism loose on a curator over ``dataset``, close it."""
        from dpcore import Curator
        from dpcore.accounting import PrivacyFilter, approx_dp_to_zcdp

        from .plan import cell_cap

        measured = measured_schema(schema)
        data_schema = self._data_schema(schema)
        rho = approx_dp_to_zcdp(self.epsilon, self.delta)
        # forbidden cells held at zero mass inside estimation by the mechanisms that take them:
        # the masks are public, so they are built (and sized) before the ledger opens, and a
        # rule too large to hold refuses the run with nothing recorded (audit 14, item 6)
        zeros = structural_zeros(schema, max_cells=cell_cap()) \
            if self.uses_zeros and schema.constraints else []
        rule_masks = [m for _, m in zero_masks(schema)] \
            if self.oracle_keeps_rules and schema.constraints else []
        if self.continue_ledger:
            privacy_filter = PrivacyFilter.resume(self.ledger_path, repair=getattr(self, "repair_ledger", False))
        else:
            privacy_filter = PrivacyFilter.from_approx_dp(self.epsilon, self.delta,
                                                          ledger_path=self.ledger_path)
        try:
            privacy_filter.open_run(rho, self._run_info(schema, input_sha256,
                                                        data_schema.domain_dict()))
        except BaseException:
            privacy_filter.close()
            raise
        self._filter = privacy_filter
        self.schema_, self.measured_schema_ = schema, measured
        self._zeros, self._rule_masks = zeros, rule_masks
        try:
            curator = Curator(dataset, privacy_filter, seed=self.seed)
            self.result_ = self._run(curator, plan, callback=callback)
        except BaseException as exc:
            self.close_run("failed", reason=_public_reason(exc))
            raise
        if not keep_open:
            self.close_run("completed")
        return self

    def close_run(self, status: str = "completed", *, reason: str | None = None,
                  outputs: Mapping[str, str] | None = None) -> None:
        """Write the run's closing entry (``outputs``: file -> SHA-256) and release the ledger.
        ``fit`` does this itself unless called with ``keep_open=True``."""
        f = self._filter
        if f is None or f.ledger.open_run is None:
            return
        try:
            f.close_run(status, reason=reason, outputs=outputs)
        finally:
            f.close()
            self._ledger = f.ledger

    def _run_info(self, schema: Schema, input_sha256: str, domain: dict[str, int]) -> dict:
        """The opening entry: what runs, on which public schema and domain, and a hiding
        commitment to the input. A plain SHA-256 of sensitive records would let anyone holding
        a candidate table test membership; sha256(salt || sha256(input)) with a secret random
        salt reveals nothing without the salt, which stays with the data owner
        (``input_salt_``) and opens the commitment later."""
        import hashlib
        import json
        import secrets
        from dpcore import __version__
        salt = secrets.token_hex(32)
        self.input_salt_, self.input_sha256_ = salt, input_sha256
        schema_text = json.dumps(schema.to_dict(), sort_keys=True, separators=(",", ":"))
        return {"mechanism": self.name, "parameters": self._parameters(),
                "seed_fixed": self.seed is not None, "noise": self.noise,
                "schema_sha256": hashlib.sha256(schema_text.encode("utf-8")).hexdigest(),
                "input_commitment": hashlib.sha256(bytes.fromhex(salt) + bytes.fromhex(
                    input_sha256)).hexdigest(),
                "domain": domain, "dpcore": __version__}

    def _parameters(self) -> dict[str, Any]:
        return {"epsilon": float(self.epsilon), "delta": float(self.delta)}

    def plan(self, schema: SchemaLike, *, rows: int | None = None) -> Plan:
        """Check that a fit on ``schema`` is feasible, from public information only (the
        domain, the budget and the options; see :mod:`mechanisms.plan`). Raises
        :class:`InvalidArgumentError` naming the argument and the rule; spends nothing."""
        from dpcore.accounting import approx_dp_to_zcdp
        s = as_schema(schema)
        domain = self._data_schema(s).domain()
        rho = approx_dp_to_zcdp(self.epsilon, self.delta)  # the budget from_approx_dp gives
        try:
            return self._plan(domain, rho, rows=rows, seed=self.seed, **self._rule_options(s))
        except InvalidArgumentError as err:
            raise self._derived_hint(err, s) from None

    def _derived_hint(self, err: InvalidArgumentError, schema: Schema) -> InvalidArgumentError:
        """``err`` with the reason when it names a derived column this mechanism never sees
        (its options are checked against the measured domain, where such a column is unknown)."""
        if self.measures_derived:
            return err
        for rule in derived_rules(schema):
            if repr(rule.column) in str(err):
                return InvalidArgumentError(
                    f"{err} ({rule.column!r} is derived from {rule.parent!r} by rule "
                    f"{rule.name!r}; {self.name} does not measure derived columns: name "
                    f"{rule.parent!r} instead, or use aim, which measures them)")
        return err

    def _rule_options(self, schema: Schema) -> dict[str, Any]:
        """What the planner must size for the schema's rules: ``{"fixed": cliques}`` for a
        mechanism fitting structural zeros (each rule clique within the cell cap, checked
        here naming the rule); empty otherwise, once the rules' junction tree is shown to fit
        the exact conditioned draw that replaces a failed rejection
        (:func:`mechanisms.conditioned.check_conditioned_fits`). A rule that forbids every
        cell of its measured columns is refused here for every mechanism."""
        from .plan import cell_cap
        if not forbidden_rules(schema):
            return {}
        if not self.uses_zeros:     # still refuse a rule forbidding every cell, before any charge
            from .conditioned import check_conditioned_fits
            zero_cliques(schema)
            if self.conditioned_model is not None:
                check_conditioned_fits(self._data_schema(schema).domain(),
                                       [m for _, m in zero_masks(schema)],
                                       whole_domain=self.conditioned_model == "histogram")
            return {}
        fixed = zero_cliques(schema, max_cells=cell_cap())
        return {"fixed": fixed} if fixed else {}

    @abc.abstractmethod
    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        """This synthesizer's planner (mechanisms.plan)."""

    @abc.abstractmethod
    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        """Run this synthesizer's mechanism on the curator as planned (spends the whole budget)."""

    def _fitted(self) -> MechanismResult:
        if self.result_ is None:
            raise InvalidArgumentError("call fit() before using the fitted synthesizer")
        return self.result_

    # ------------------------------------------------------------------ results
    @property
    def result(self) -> MechanismResult:
        """The mechanism's :class:`~mechanisms.result.MechanismResult`."""
        return self._fitted()

    @property
    def model(self) -> Any:
        """The fitted :class:`~dpcore.inference.GraphicalModel` (public)."""
        return self._fitted().model

    @property
    def ledger(self) -> Any:
        """The privacy ledger of the fit (every charge, exact ρ), with the run's closing entry."""
        self._fitted()
        return self._ledger if self._ledger is not None else self._filter.ledger

    # ------------------------------------------------------------------ persistence
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if state.get("_filter") is not None:           # an open file and its lock stay here
            state["_ledger"] = self.ledger
        state["_filter"] = None
        state.pop("_input_path", None)                 # local paths, not part of the fit
        state.pop("_input_paths", None)
        state.pop("_schema_path", None)
        # timings of the fit measure reads of the sensitive data (a pass over the file takes
        # longer the more rows it holds): not part of a saved synthesizer
        if state.get("result_") is not None:
            state["result_"] = state["result_"].without_timings()
        # The salt and the plain hash of the input open the ledger's input commitment (anyone
        # holding them can test a guessed table): they stay with the run (the CLI's salt
        # file), never in a saved synthesizer.
        state["input_salt_"] = state["input_sha256_"] = None
        return state

    def _remember_schema(self, schema: Any) -> None:
        """A schema given as a file is an input: never an output of this synthesizer."""
        if isinstance(schema, (str, os.PathLike)):
            self._schema_path = os.fspath(schema)

    def _check_output(self, path: str | os.PathLike, name: str = "path") -> str:
        """An output of this synthesizer is a path (str or os.PathLike), never its ledger, the
        ledger's salt file, a file it read (the data of ``fit_file``, a schema or workload
        given as a file) and never a device (see :mod:`dpcore.files`). Returns it as a str."""
        from dpcore.files import check_not_a_record, check_not_protected, check_replaceable, salt_path
        path = _path_argument(name, path)
        ledger = self.ledger_path
        workload = getattr(self, "workload", None)
        check_not_protected(path, [
            ("this fit's ledger", ledger),
            ("the ledger's salt file", None if ledger is None else salt_path(ledger)),
            ("the file this synthesizer was fitted on", getattr(self, "_input_path", None)),
            *(("a file this synthesizer was fitted on", p)
              for p in getattr(self, "_input_paths", ())),
            ("the schema file this synthesizer was fitted with", getattr(self, "_schema_path", None)),
            ("the workload file", os.fspath(workload) if isinstance(workload, (str, os.PathLike))
             and os.path.isfile(workload) else None)])
        check_replaceable(path)
        check_not_a_record(path)
        return path

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted synthesizer (model, schema, ledger) to ``path``, atomically. It is a
        pickle: :meth:`load` only files you wrote yourself."""
        import pickle
        from dpcore.schema import atomic_write_bytes
        self._fitted()
        path = self._check_output(path)
        atomic_write_bytes(path, pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Synthesizer":
        """Read a synthesizer written by :meth:`save` (a pickle: trusted files only)."""
        import pickle
        path = _path_argument("path", path)    # never an int: open() takes one as a descriptor
        try:
            fh = open(path, "rb")
        except OSError as err:
            raise InvalidArgumentError(f"cannot read {path!r}: {err.strerror or err}") from None
        with fh:
            try:
                obj = pickle.load(fh)
            except (pickle.UnpicklingError, EOFError, AttributeError, ImportError,
                    IndexError, TypeError, ValueError) as err:
                raise InvalidArgumentError(f"{os.fspath(path)!r} is not a synthesizer written "
                                           f"by save() ({type(err).__name__})") from None
        if not isinstance(obj, cls):
            raise InvalidArgumentError(f"{os.fspath(path)!r} holds a {type(obj).__name__}, "
                                       f"not a {cls.__name__}")
        return obj

    def verify(self, *, allow_fixed_seed: bool = False) -> Any:
        """Run the independent ledger verifier on this fit's ledger. A fit with a fixed seed
        fails it (its noise is reproducible) unless ``allow_fixed_seed``: tests and demos,
        where only the accounting is checked."""
        from dpcore.accounting import verify_ledger
        return verify_ledger(self.ledger, allow_fixed_seed=allow_fixed_seed)

    def sample_codes(self, n: int | None = None, *, seed: int | None = None) -> np.ndarray:
        """``n`` synthetic rows as codes (default: the mechanism's own synthetic table).
        Without ``seed``, successive calls draw new rows (a fixed synthesizer seed fixes the
        sequence). Derived columns are regenerated from their parents, and no row falls in a
        forbidden cell: rows that do are rejected and redrawn (:meth:`_draw_allowed`)."""
        result = self._fitted()
        if n is None:
            records = np.asarray(result.synthetic.records)
            if not self.schema_.constraints:
                return records
            if self._own_table is None:
                full = expand(records, self.schema_)
                bad = forbidden_rows(full, self.schema_)
                if bad.any():   # the fit's own table: redraw its forbidden rows the same way
                    redraw_seed = None if self.seed is None else [self.seed, 2]
                    full[bad] = self._draw_allowed(int(bad.sum()), redraw_seed)
                self._own_table = full
            return self._own_table.copy()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InvalidArgumentError(f"n must be an integer >= 1, got {n!r}")
        from .plan import cell_cap
        if int(n) * len(self.schema_) > cell_cap():    # held whole: write() streams more
            raise InvalidArgumentError(
                f"n must be <= {cell_cap() // len(self.schema_)} for {len(self.schema_)} "
                f"columns (a table held in memory; write() or sample_chunks() stream more "
                f"rows), got {n}")
        if seed is None:
            seed = self._next_sample_seed()
        _check_seed(seed)
        if not self.schema_.constraints:
            return self._draw(int(n), seed)
        return self._draw_allowed(int(n), seed)

    def _data_schema(self, schema: Schema) -> Schema:
        """The columns the curator holds: the measured ones, plus the derived ones (with no
        rules) for a mechanism that measures them."""
        if self.measures_derived and derived_rules(schema):
            return unconstrained(schema)
        return measured_schema(schema)

    def _derived_option(self) -> dict[str, Any]:
        """``{"derived": {child: (parent, table)}}`` when the curator holds derived columns."""
        rules = derived_rules(self.schema_) if self.measures_derived else []
        return {"derived": {r.column: (r.parent, r.table) for r in rules}} if rules else {}

    def _zero_option(self) -> dict[str, Any]:
        """``{"zeros": ...}`` for a mechanism that fits its model with structural zeros (AIM,
        MWEM, MST), empty without forbidden rules (the call is then the unconstrained one)."""
        zeros = getattr(self, "_zeros", None)
        return {"zeros": zeros} if zeros else {}

    def _rule_option(self) -> dict[str, Any]:
        """``{"forbidden": ...}`` (per rule, column -> mask over the measured codes) for a
        mechanism whose oracle keeps the rules, empty without forbidden rules."""
        masks = getattr(self, "_rule_masks", None)
        return {"forbidden": masks} if masks else {}

    def _measured(self) -> Schema:
        return getattr(self, "measured_schema_", None) or self.schema_

    def _draw(self, n: int, seed: Any) -> np.ndarray:
        """``n`` rows from the model, on the measured columns. MST's model lives on the
        compressed domain (Alg. 4): its rows are mapped back block by block
        (:func:`mechanisms.partitioned.draw_rows`)."""
        from .partitioned import draw_rows
        result = self._fitted()
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        return draw_rows(result.model, result.extras.get("compression") or None,
                         self._measured().domain(), n, seed)

    def _draw_allowed(self, n: int, seed: Any) -> np.ndarray:
        """``n`` rows of every column from the model conditioned on the allowed cells.

        Rejection: draw, regenerate derived columns, drop rows in a forbidden cell, draw again
        until ``n`` are kept. The kept rows follow the model's law conditioned on the allowed
        set (the model draws by randomized rounding, so per-cell counts have that law's
        expectations with less variance than i.i.d. draws); the expected number of draws is
        ``n / (1 - q)`` with q the model's mass on forbidden cells. AIM, MST and MWEM fit
        their model with the forbidden cells as structural zeros (q = 0: nothing is rejected,
        except where MST's compression merged allowed and forbidden values); rejection is the
        fallback for the other mechanisms. Rejection is post-processing of the
        released model (no budget; proofs/structural_constraints.py). Refuses when the model
        puts more than 99.9 % of its mass on forbidden cells; ``rejection_rate_`` keeps the
        share of draws rejected by the last call."""
        rng = np.random.default_rng(seed)
        kept: list[np.ndarray] = []
        have = drawn = allowed = 0
        while have < n:
            want = n - have
            rate = allowed / drawn if drawn else 1.0
            batch = min(int(want / max(rate, 1e-3) * 1.1) + 16, 50 * n + 10_000)
            full = expand(self._draw(batch, int(rng.integers(2 ** 63))), self.schema_)
            ok = full[~forbidden_rows(full, self.schema_)]
            ok = ok[rng.permutation(len(ok))]   # truncating a rounded (ordered) batch would bias
            kept.append(ok[:want])
            have += min(len(ok), want)
            drawn, allowed = drawn + batch, allowed + len(ok)
            if have < n and drawn >= 10_000 and allowed < 1e-3 * drawn:
                self.rejection_rate_ = 1.0 - allowed / drawn
                rows = self._draw_conditioned(n, int(rng.integers(2 ** 63)))
                if rows is not None:
                    return rows
                names = ", ".join(r.name for r in forbidden_rules(self.schema_))
                raise InvalidArgumentError(
                    f"the fitted model puts more than 99.9% of its mass on cells forbidden by "
                    f"the schema constraints ({names}), and its law conditioned on the allowed "
                    f"cells cannot be drawn exactly (a table over the rules' columns and the "
                    f"model parts joining them exceeds the cell cap, or none of its records is "
                    f"allowed): cannot sample allowed rows")
        self.rejection_rate_ = 1.0 - allowed / drawn
        return np.concatenate(kept)

    def _draw_conditioned(self, n: int, seed: Any) -> np.ndarray | None:
        """The fallback when rejection fails: ``n`` rows of every column drawn exactly from the
        model conditioned on the allowed cells (:mod:`mechanisms.conditioned`: graphical models,
        including the histogram families' and MST's compressed one, product mixtures and
        mixtures of records), or None where that is not available (a tree, or MST's block
        table, above :func:`~mechanisms.conditioned.conditioned_cells`; a mixture of records
        with no allowed record)."""
        from .conditioned import conditioned_cells, conditioned_draw
        result = self._fitted()
        masks = [m for _, m in zero_masks(self.schema_)]
        rows = conditioned_draw(result.model, masks, self._draw, list(self._measured().names),
                                n, seed, conditioned_cells(),
                                result.extras.get("compression") or None)
        if rows is None:
            return None
        full = expand(rows, self.schema_)
        if forbidden_rows(full, self.schema_).any():    # the masks are the rules: cannot happen
            raise AssertionError("conditioned sampling drew a forbidden row")
        return full

    def _next_sample_seed(self) -> int:
        """One generator for every sample() without an explicit seed: a fixed synthesizer seed
        fixes the sequence of samples, and each call still returns new rows."""
        if self._samples is None:
            self._samples = np.random.default_rng(None if self.seed is None else [self.seed, 1])
        return int(self._samples.integers(2 ** 63))

    def sample(self, n: int | None = None, *, seed: int | None = None) -> pd.DataFrame:
        """``n`` decoded synthetic rows (post-processing: no budget is spent)."""
        if seed is None and n is not None:
            seed = self._next_sample_seed()
        codes = self.sample_codes(n, seed=seed)
        assert self.schema_ is not None
        if self.schema_.encoded and not self.schema_.constraints:
            return pd.DataFrame(codes.astype(np.int64), columns=list(self.schema_.names))
        return decode_codes(codes, self.schema_, seed=seed if seed is not None else self.seed)

    def sample_chunks(self, n: int | None = None, *, seed: int | None = None,
                      chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """:meth:`sample` in DataFrames of at most ``chunk_rows`` rows, decoded one at a time:
        their concatenation is what ``sample(n, seed=seed)`` returns, whatever the chunk size
        (decoding skips to each chunk's own uniform draws, :func:`dpcore.encoding.decode_codes`).
        A graphical model without schema rules draws ``n`` rows a sampling block at a time
        (:data:`dpcore.junction_tree.SAMPLE_BLOCK` rows), so memory does not grow with ``n``;
        otherwise the codes are drawn whole, compactly. A synthesizer whose sample()
        transforms whole tables (NIST-MST's reverse transform) yields it as one chunk."""
        return self._chunks(n, seed, chunk_rows, categorical=False)

    def _chunks(self, n: int | None, seed: int | None, chunk_rows: int, *,
                categorical: bool) -> Iterator[pd.DataFrame]:
        self._check_chunks(n, seed, chunk_rows)
        return self._chunk_frames(n, seed, int(chunk_rows), categorical)

    @staticmethod
    def _check_chunks(n: int | None, seed: int | None, chunk_rows: int) -> None:
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) \
                or chunk_rows < 1:
            raise InvalidArgumentError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                              or n < 1):
            raise InvalidArgumentError(f"n must be an integer >= 1, got {n!r}")
        if seed is not None:
            _check_seed(seed)

    def _chunk_codes(self, n: int | None, seed: int | None
                     ) -> tuple[Iterator[np.ndarray], int | None, int]:
        """The codes :meth:`_chunk_frames` decodes, in chunks (a sampling block at a time
        where it draws so), with the seed and the row count it decodes them with: for a
        schema without rules, and a synthesizer whose sample() is this class's."""
        if seed is None and n is not None:
            seed = self._next_sample_seed()
        sampler = self._part_sampler(int(n), int(seed)) if n is not None else None
        if sampler is not None:
            from dpcore.junction_tree import SAMPLE_BLOCK
            from .partitioned import draw_rows
            blocks = (draw_rows(sampler.model, sampler.mapping, sampler.domain,
                                min(SAMPLE_BLOCK, int(n) - start), sampler.seed,
                                first_block=start // SAMPLE_BLOCK)
                      for start in range(0, int(n), SAMPLE_BLOCK))
            return blocks, int(seed), int(n)
        codes = self.sample_codes(n, seed=seed)
        # chunks of rows, as _chunk_frames slices them (a table of no rows: none)
        return iter([codes] if len(codes) else []), \
            seed if seed is not None else self.seed, len(codes)

    def _chunk_frames(self, n: int | None, seed: int | None, chunk_rows: int,
                      categorical: bool) -> Iterator[pd.DataFrame]:
        if type(self).sample is not Synthesizer.sample:
            yield self.sample(n, seed=seed)
            return
        if seed is None and n is not None:
            seed = self._next_sample_seed()
        sampler = self._part_sampler(int(n), int(seed)) if n is not None else None
        if sampler is not None:            # a block at a time (as write_partitioned's parts)
            from dpcore.junction_tree import SAMPLE_BLOCK
            for start in range(0, int(n), SAMPLE_BLOCK):
                yield from sampler.frames(start, min(SAMPLE_BLOCK, int(n) - start), chunk_rows,
                                          categorical=categorical)
            return
        codes = self.sample_codes(n, seed=seed)
        assert self.schema_ is not None
        plain = self.schema_.encoded and not self.schema_.constraints
        decode_seed = seed if seed is not None else self.seed
        for start in range(0, len(codes), chunk_rows):
            part = codes[start:start + chunk_rows]
            if plain:
                yield pd.DataFrame(part.astype(np.int64), columns=list(self.schema_.names))
            else:
                yield decode_codes(part, self.schema_, seed=decode_seed, start=start,
                                   total=len(codes), categorical=categorical)

    def _part_sampler(self, n: int, seed: int) -> Any:
        """The :class:`~mechanisms.partitioned.PartSampler` of ``n`` rows for ``seed``, or None
        where rows are not drawn block by block from a graphical model (schema rules, or a
        mechanism with its own sampler)."""
        from dpcore.inference.model import GraphicalModel
        from .partitioned import PartSampler
        result = self._fitted()
        schema = self.schema_
        if type(self).sample is not Synthesizer.sample or schema.constraints \
                or not isinstance(result.model, GraphicalModel):
            return None
        return PartSampler(model=result.model, mapping=result.extras.get("compression") or None,
                           domain=self._measured().domain(), schema=schema, seed=seed,
                           total=n, plain=bool(schema.encoded))

    def write(self, path: str | os.PathLike, n: int | None = None, *, seed: int | None = None,
              sep: str = ",", missing_token: str | None = None,
              chunk_rows: int = DEFAULT_CHUNK_ROWS) -> int:
        """Write :meth:`sample` to a CSV (or Parquet) file chunk by chunk and atomically
        (a temporary file beside ``path``, renamed at the end): the bytes of
        ``write_table(sample(n, seed=seed), path)`` without ever holding the decoded table
        (nor, see :meth:`sample_chunks`, the codes of ``n`` rows).
        ``missing_token`` defaults to the schema's first missing value. Returns the rows."""
        from dpcore.encoding import write_table
        schema = self.schema_
        if schema is None:
            self._fitted()
        path = self._check_output(path)
        if path.endswith(("/", os.sep)):       # the CLI's DIR/: a partitioned dataset
            raise InvalidArgumentError(f"path {path!r} ends with a separator (a directory): "
                                       f"write() writes one file; write_partitioned() a directory")
        if missing_token is None:
            missing_token = schema.missing_values[0] if schema.missing_values else ""
        _check_text("missing_token", missing_token)
        _check_text("sep", sep)
        csv = not is_parquet(path)
        plan = None
        if csv and type(self).sample is Synthesizer.sample and not schema.constraints:
            from dpcore.codecsv import csv_plan
            self._check_chunks(n, seed, chunk_rows)      # first, as _chunks checks them
            plan = csv_plan(schema, missing_token, sep)
        if plan is None:
            # categories, not a Python string a cell: the CSV writer and the Parquet writer
            # (as plain text columns) take them as they are
            return write_table(self._chunks(n, seed, chunk_rows, categorical=True), path,
                               missing_token=missing_token, sep=sep)
        # decoded and formatted in one compiled pass (dpcore.codecsv): the same bytes
        from dpcore.codecsv import write_codes_csv
        from dpcore.encoding import temporary_output
        with temporary_output(path) as tmp:
            chunks, decode_seed, total = self._chunk_codes(n, seed)
            with open(tmp, "wb") as fh:
                return write_codes_csv(plan, chunks, fh, seed=decode_seed, total=total)

    def write_partitioned(self, directory: str | os.PathLike, n: int | None = None, *,
                          seed: int | None = None, client: Any = None,
                          partition_rows: int | None = None, format: str = "csv",
                          sep: str = ",", missing_token: str | None = None) -> int:
        """Write ``n`` synthetic rows as a partitioned dataset, ``directory/part-00000.csv``
        (or ``.parquet``) ..., each partition drawn, decoded and written by a Dask worker
        (``client``; default: a LocalCluster sized to this machine). The workers receive the
        model and the public schema, never the data (:mod:`mechanisms.partitioned`). The
        parts hold, in order, the rows of ``write(path, n, seed=seed)`` (tested).
        ``n`` defaults to the size of the fit's own synthetic table, but the rows are a new
        sample (as ``write(path, n)``), not that table. ``partition_rows``: a multiple of the
        sampling block (2^20 rows; default 4 blocks). Atomic: a temporary directory renamed
        at the end. Returns the rows written."""
        from dpcore.junction_tree import SAMPLE_BLOCK
        from .partitioned import write_partitions
        directory = _path_argument("directory", directory)
        result = self._fitted()
        schema = self.schema_
        if self._part_sampler(1, 0) is None:
            raise InvalidArgumentError(
                f"{type(self).__name__} cannot write partitions on a cluster (its sample is "
                f"not drawn block by block from a graphical model without schema rules); "
                f"use write()")
        if n is None:
            n = len(result.synthetic.records)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InvalidArgumentError(f"n must be an integer >= 1, got {n!r}")
        if seed is None:
            seed = self._next_sample_seed()
        _check_seed(seed)
        if missing_token is None:
            missing_token = schema.missing_values[0] if schema.missing_values else ""
        _check_text("missing_token", missing_token)
        _check_text("sep", sep)
        sampler = self._part_sampler(int(n), int(seed))
        own = client is None
        if own:
            from dpcore.distributed import local_client
            client = local_client()
        try:
            return write_partitions(sampler, directory, client=client,
                                    partition_rows=4 * SAMPLE_BLOCK if partition_rows is None
                                    else partition_rows,
                                    fmt=format, missing_token=missing_token, sep=sep)
        finally:
            if own:
                from dpcore.distributed import close_client
                close_client(client)

    def confidence_bounds(self) -> pd.DataFrame:
        """AIM's per-marginal confidence bounds (AIM paper Sec. 5) as a DataFrame with columns
        attrs, bound (L1 error in counts), level, supported; other mechanisms have none."""
        bounds = self._fitted().confidence_bounds
        if bounds is None:
            raise InvalidArgumentError(f"{type(self).__name__} provides no confidence bounds "
                                       f"(only AIM does)")
        rows = [{"attrs": tuple(b.clique), "bound": float(b.bound), "level": float(b.level),
                 "supported": bool(b.supported)} for b in bounds.values()]
        return pd.DataFrame(rows, columns=["attrs", "bound", "level", "supported"])


class _WorkloadSynthesizer(Synthesizer):
    reads_marginals_only = True

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *,
                 workload: WorkloadSpec = "all-3way",
                 max_model_size: float | None = None, rounds: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(epsilon, delta, **kwargs)
        self.workload, self.max_model_size, self.rounds = _kept_workload(workload), max_model_size, rounds

    def _parameters(self) -> dict[str, Any]:
        spec = _workload_label(self.workload)
        return {**super()._parameters(), "workload": spec, "rounds": self.rounds,
                "max_model_size": self.max_model_size}

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any,
              **rules: Any) -> Plan:
        from .plan import PLANNERS
        workload = self.workload
        if isinstance(workload, (str, os.PathLike)):
            workload = parse_workload(workload, list(domain.attrs))
        options: dict[str, Any] = {"workload": workload, "rounds": self.rounds}
        if self.max_model_size is not None:
            options["max_model_size"] = self.max_model_size
        return PLANNERS[self.name](domain, rho, rows=rows, seed=seed, **options, **rules)


    def batch_cliques(self, domain: Any, plan: Plan) -> list[tuple[str, ...]]:
        """The downward closure of the workload: AIM's and MWEM's candidates (AIM Sec. 4)."""
        from .workload import downward_closure
        return list(downward_closure([tuple(c) for c, _ in plan.options["workload"]]))


class AIM(_WorkloadSynthesizer):
    """AIM (McKenna et al. 2022), workload-adaptive; the recommended default.

    ``workload``: "all-2way", "all-3way", a JSON file or a list of marginals (column-name
    tuples, optionally ``(attrs, weight)``). ``max_model_size``: MB cap on the junction tree
    (default 80). ``rounds``: AIM's T (default 16 x columns; at least the column count).
    """

    name = "aim"
    measures_derived = True
    uses_zeros = True

    def _rule_options(self, schema: Schema) -> dict[str, Any]:
        """As the base class, and the derived columns AIM fits on their parents."""
        options = super()._rule_options(schema)
        rules = derived_rules(schema)
        if rules:
            options["derived"] = {r.column: (r.parent, r.table) for r in rules}
        return options

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .aim import aim
        return aim(curator, synthetic_rows=plan.rows, seed=plan.seed, callback=callback,
                   discrete=self.noise == "discrete", **plan.options, **self._zero_option(),
                   **self._derived_option())


class MWEM(_WorkloadSynthesizer):
    """MWEM+PGM (AIM paper Alg. 1). ``rounds`` defaults to 10."""

    name = "mwem"
    uses_zeros = True

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .mwem import mwem
        return mwem(curator, synthetic_rows=plan.rows, seed=plan.seed, callback=callback,
                    discrete=self.noise == "discrete", **plan.options, **self._zero_option())


class MST(Synthesizer):
    """MST (McKenna, Miklau, Sheldon 2021): 1-way marginals plus a private maximum spanning
    tree of pairs; fast and strong on 2-way statistics."""

    name = "mst"
    reads_marginals_only = True
    uses_zeros = True

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any,
              fixed: Any = ()) -> Plan:
        from .plan import plan_mst
        return plan_mst(domain, rho, rows=rows, seed=seed, fixed=fixed)

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .mst import mst
        return mst(curator, synthetic_rows=plan.rows, seed=plan.seed, callback=callback,
                   discrete=self.noise == "discrete", **self._zero_option())


class Independent(Synthesizer):
    """Every 1-way marginal, columns sampled independently: the baseline."""

    name = "independent"
    reads_marginals_only = True
    conditioned_model = "product"

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        from .plan import plan_independent
        return plan_independent(domain, rho, rows=rows, seed=seed)

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .independent import independent
        return independent(curator, synthetic_rows=plan.rows, seed=plan.seed,
                           callback=callback, discrete=self.noise == "discrete")


class NISTMST(Synthesizer):
    """NIST-MST (McKenna, Miklau, Sheldon 2021, Alg. 2): MST whose pairs and triples are chosen
    from a public (provisional) table (Alg. 5, no budget spent on selection), after Alg. 3's
    transform of wide integer columns, also chosen from that table; sampling reverses it
    (Alg. 9), so samples are in the original schema.

    ``public``: a DataFrame with the schema's columns. It must be public (e.g. an earlier
    release or a provisional table): it is read freely and no budget covers it.
    ``transform``: None (default: none), "auto", a list of columns, ``{column: "grid" |
    "split" | spec}`` (see :meth:`mechanisms.transform.Transform.from_public`). Off by default:
    on national2019 "auto" widened three columns to 500-5800 values and raised the 2-way error
    from 0.154 to 0.300 at eps = 1 (bench/results/nist_mst.md); it helps where exact raw
    values (multiples of 100, top codes) matter more than binned marginals.
    ``calibration``: "zcdp" (default; the budget split 1/3 + 2/3 between the 1-way and the
    selected marginals) or "nist" (Eq. 5.1's closed-form sigma from epsilon and delta).
    After :meth:`fit`, ``transform_`` is the transform, ``schema_`` the transformed schema
    (which :meth:`sample_codes` uses) and ``transform_.original`` the given one.
    """

    name = "nist-mst"

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *, public: pd.DataFrame,
                 transform: Any = None, calibration: str = "zcdp", **kwargs: Any) -> None:
        super().__init__(epsilon, delta, **kwargs)
        if not isinstance(public, pd.DataFrame):
            raise InvalidArgumentError(f"public must be a pandas DataFrame of public records, "
                                       f"got {type(public).__name__}")
        if calibration not in ("zcdp", "nist"):
            raise InvalidArgumentError(f"calibration must be 'zcdp' or 'nist', got "
                                       f"{calibration!r}")
        self.public, self.transform, self.calibration = public, transform, calibration
        self.transform_: Any = None
        self._public_codes: np.ndarray | None = None

    def prepare(self, schema: SchemaLike | None) -> Any:
        """The transform for ``schema``, chosen from the public table (and the public table
        encoded under it); reads no sensitive data. The CLI encodes the sensitive file with
        ``prepare(schema).apply`` and ``.schema`` before :meth:`fit_codes`."""
        from .transform import Transform
        s = as_schema(schema)
        if self.transform_ is None or self.transform_.original != s:
            t = (Transform(s, {}) if self.transform is None else
                 Transform.from_public(self.public, s, self.transform))
            try:
                codes = encode_frame(t.apply(self.public, where="public data"), t.schema)
            except InvalidArgumentError as err:
                raise InvalidArgumentError(f"public data: {err}") from None
            self.transform_, self._public_codes = t, codes
        return self.transform_

    def fit(self, data: pd.DataFrame, schema: SchemaLike | None = None, **kwargs: Any
            ) -> "Synthesizer":
        if not isinstance(data, pd.DataFrame):
            raise InvalidArgumentError(f"data must be a pandas DataFrame, got "
                                       f"{type(data).__name__}")
        t = self.prepare(schema)
        return super().fit(t.apply(data), t.schema, **kwargs)

    def fit_codes(self, codes: np.ndarray, schema: Schema, **kwargs: Any) -> "Synthesizer":
        """As :meth:`Synthesizer.fit_codes`, with ``codes`` encoded under the *transformed*
        schema ``prepare(original).schema`` (or under a schema no column of which is
        transformed)."""
        if self.transform_ is None or schema != self.transform_.schema:
            t = self.prepare(schema)
            if t.maps:
                raise InvalidArgumentError(
                    f"nist-mst transforms column(s) {sorted(t.maps)}: encode the data with "
                    f"prepare(schema).apply and pass prepare(schema).schema to fit_codes")
        return super().fit_codes(codes, schema, **kwargs)

    def _parameters(self) -> dict[str, Any]:
        return {**super()._parameters(), "calibration": self.calibration,
                "transform": self.transform_.to_dict() if self.transform_ is not None else {}}

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        from .plan import plan_mst
        return plan_mst(domain, rho, rows=rows, seed=seed)   # public selection asks no more

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from dpcore import Dataset
        from .mst import mst
        # the curator holds the measured columns (a derived column is regenerated after)
        names = list(self.transform_.schema.names)
        public = Dataset(self._public_codes[:, [names.index(a) for a in curator.domain.attrs]],
                         curator.domain)
        return mst(curator, public=public, calibration=self.calibration, epsilon=self.epsilon,
                   delta=self.delta, synthetic_rows=plan.rows, seed=plan.seed,
                   callback=callback, discrete=self.noise == "discrete")

    def sample(self, n: int | None = None, *, seed: int | None = None) -> pd.DataFrame:
        """``n`` synthetic rows in the original schema: decoded, then Alg. 9's reverse
        transform (post-processing: no budget is spent)."""
        if seed is None and n is not None:
            seed = self._next_sample_seed()
        frame = super().sample(n, seed=seed)
        base = seed if seed is not None else self.seed
        # a stream apart from the decoder's, which draws from the same seed
        return self.transform_.reverse(frame, seed=None if base is None else [int(base), 2])


class FEM(Synthesizer):
    """FEM (Vietri et al. 2020): exponential-mechanism query selection and a follow-the-
    perturbed-leader data player on a MILP oracle (``mechanisms.fem``).

    ``workload``: as for AIM. ``rounds``: T (default: as many rounds of eps0 = 0.01 as the
    budget pays for). ``samples``: oracle calls a round (s, default 20). ``eta``: the
    perturbation's mean. ``total``: a public record count (else a noisy count costs
    ``total_share`` of the budget). ``keep``: "all" or "later-half" of the samples.
    ``time_limit``: seconds per oracle call.
    """

    name = "fem"
    perturbation = "exponential"
    oracle_keeps_rules = True

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *,
                 workload: WorkloadSpec = "all-3way", rounds: int | None = None,
                 samples: int = 20, eta: float = 2.0, total: float | None = None,
                 total_share: float = 0.05, keep: str = "all", time_limit: float = 10.0,
                 **kwargs: Any) -> None:
        super().__init__(epsilon, delta, **kwargs)
        self.workload, self.rounds, self.samples, self.eta = _kept_workload(workload), rounds, samples, eta
        self.total, self.total_share, self.keep, self.time_limit = total, total_share, keep, time_limit

    def _parameters(self) -> dict[str, Any]:
        spec = _workload_label(self.workload)
        return {**super()._parameters(), "workload": spec, "rounds": self.rounds,
                "samples": self.samples, "eta": self.eta, "total": self.total,
                "total_share": self.total_share, "keep": self.keep, "time_limit": self.time_limit}

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        from .plan import plan_fem
        workload = self.workload
        if isinstance(workload, (str, os.PathLike)):
            workload = parse_workload(workload, list(domain.attrs))
        return plan_fem(domain, rho, workload=workload, rounds=self.rounds, samples=self.samples,
                        eta=self.eta, total=self.total, total_share=self.total_share,
                        keep=self.keep, time_limit=self.time_limit, rows=rows, seed=seed)

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .fem import fem
        return fem(curator, synthetic_rows=plan.rows, seed=plan.seed, callback=callback,
                   perturbation=self.perturbation, **self._rule_option(), **plan.options)


class DQRS(Synthesizer):
    """DQRS (Vietri et al. 2020, Alg. 4): DualQuery with rejection sampling on FEM's MILP
    oracle (``mechanisms.dqrs``). ``samples``: s, queries sampled a round (default 30);
    ``eta``: the MW rate (default 0.3; bench/results/fem.md); ``rounds``: a cap on T (default: as many rounds as the
    budget pays for); ``total``, ``total_share``, ``time_limit``: as for :class:`FEM`.
    """

    name = "dqrs"
    oracle_keeps_rules = True

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *,
                 workload: WorkloadSpec = "all-3way", rounds: int | None = None,
                 samples: int = 30, eta: float = 0.3, total: float | None = None,
                 total_share: float = 0.05, time_limit: float = 10.0, **kwargs: Any) -> None:
        super().__init__(epsilon, delta, **kwargs)
        self.workload, self.rounds, self.samples, self.eta = _kept_workload(workload), rounds, samples, eta
        self.total, self.total_share, self.time_limit = total, total_share, time_limit

    def _parameters(self) -> dict[str, Any]:
        spec = _workload_label(self.workload)
        return {**super()._parameters(), "workload": spec, "rounds": self.rounds,
                "samples": self.samples, "eta": self.eta, "total": self.total,
                "total_share": self.total_share, "time_limit": self.time_limit}

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        from .plan import plan_dqrs
        workload = self.workload
        if isinstance(workload, (str, os.PathLike)):
            workload = parse_workload(workload, list(domain.attrs))
        return plan_dqrs(domain, rho, workload=workload, rounds=self.rounds, samples=self.samples,
                         eta=self.eta, total=self.total, total_share=self.total_share,
                         time_limit=self.time_limit, rows=rows, seed=seed)

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .dqrs import dqrs
        return dqrs(curator, synthetic_rows=plan.rows, seed=plan.seed, callback=callback,
                    **self._rule_option(), **plan.options)


class SepFEM(FEM):
    """sepFEM (Vietri et al. 2020, Alg. 3): FEM with the Separator-FTPL data player — Lap(η)
    weights on the one-hot features (a separator set) instead of the Exp(η) linear term; the
    same options, selection and privacy as :class:`FEM` (``mechanisms.fem``)."""

    name = "sepfem"
    perturbation = "separator"


class PrivPGD(Synthesizer):
    """PrivPGD (Donhauser et al. 2024): particle gradient descent on sliced Wasserstein losses
    to privatised 2-way marginals (``mechanisms.privpgd``; C++ kernels in
    ``dpcore.sliced_wasserstein``).

    ``workload``: the marginals whose attribute pairs are measured (default all 2-way).
    ``particles`` (m, the paper's 100k), ``epochs`` (1000), ``lr`` (0.1): the descent;
    ``projections`` (10 directions a marginal a step), ``batch`` (5 marginals a step),
    ``keep`` (0.2: the paper drops 80% of gradient entries), ``step_size``/``gamma`` (the
    learning rate x 0.75 every ``step_size`` epochs; default ``epochs // 20``: the paper's 50
    at its 1000 epochs, the same 20 decays on shorter runs). ``projection``: "consistent"
    (default: shared attributes made to agree, then the simplex), "simplex" or "clip".
    ``total_share``: the share of the budget on the noisy record count. ``protect``: a
    statistic the synthetic data should not reproduce (the paper's domain regulariser,
    ``mechanisms.privpgd.ProtectedQuery`` or a mapping of its fields: ``weights``,
    ``threshold``, ``strength``, ``sharpness``, ``share``; needs the in-memory engine).
    """

    name = "privpgd"

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *,
                 workload: WorkloadSpec = "all-2way", particles: int = 100_000,
                 epochs: int = 1000, lr: float = 0.1, projections: int = 10, batch: int = 5,
                 keep: float = 0.2, step_size: int | None = None, gamma: float = 0.75,
                 total_share: float = 0.01, projection: str = "consistent", protect: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(epsilon, delta, **kwargs)
        self.workload, self.particles, self.epochs, self.lr = _kept_workload(workload), particles, epochs, lr
        self.projections, self.batch, self.keep = projections, batch, keep
        self.step_size, self.gamma = step_size, gamma
        self.total_share, self.projection, self.protect = total_share, projection, protect

    def _options(self) -> dict[str, Any]:
        return {"particles": self.particles, "epochs": self.epochs, "lr": self.lr,
                "projections": self.projections, "batch": self.batch, "keep": self.keep,
                "step_size": self.step_size, "gamma": self.gamma,
                "total_share": self.total_share, "projection": self.projection,
                "protect": self.protect}

    def _parameters(self) -> dict[str, Any]:
        from .privpgd import ProtectedQuery
        spec = _workload_label(self.workload)
        options = self._options()
        if options["protect"] is not None:      # the ledger's run opening: plain JSON
            options["protect"] = ProtectedQuery.of(options["protect"]).to_dict()
        return {**super()._parameters(), "workload": spec, **options}

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        from .plan import plan_privpgd
        workload = self.workload
        if isinstance(workload, (str, os.PathLike)):
            workload = parse_workload(workload, list(domain.attrs))
        return plan_privpgd(domain, rho, workload=workload, rows=rows, seed=seed,
                            **self._options())

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .privpgd import privpgd
        bar = None
        if self.progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=plan.options["epochs"], desc="PRIVPGD epochs", unit="epoch",
                       leave=False)

        def progress(epoch: int, epochs: int, loss: float) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3g}", refresh=False)

        try:
            return privpgd(curator, synthetic_rows=plan.rows, seed=plan.seed, callback=callback,
                           progress=progress if bar is not None else None,
                           discrete=self.noise == "discrete", **plan.options)
        finally:
            if bar is not None:
                bar.close()


class _AdaptiveSynthesizer(Synthesizer):
    """Adaptive Measurements (Liu, Vietri & Wu, Alg. 1; ``mechanisms.adaptive``) with one
    family. ``workload``: as for AIM. ``rounds``: T. ``per_round``: k marginals selected and
    measured each round (default 1; RAP-softmax and GEM 10). ``alpha``: the share of each round's
    budget on selection (Theorem 1's split, in (0, 1)). ``options``: the family's own settings
    (e.g. ``{"steps": 300}``; see its class).
    """

    family: ClassVar[str] = ""

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *,
                 workload: WorkloadSpec = "all-3way", rounds: int | None = None,
                 per_round: int | None = None, alpha: float = 0.5,
                 options: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(epsilon, delta, **kwargs)
        self.workload, self.rounds = _kept_workload(workload), rounds
        self.per_round, self.alpha = per_round, alpha
        self.options = dict(options or {})

    def _parameters(self) -> dict[str, Any]:
        spec = _workload_label(self.workload)
        return {**super()._parameters(), "workload": spec, "rounds": self.rounds,
                "per_round": self.per_round, "alpha": self.alpha,
                "options": {k: repr(v) for k, v in sorted(self.options.items())}}

    def _plan(self, domain: Any, rho: Any, *, rows: int | None, seed: Any) -> Plan:
        from .plan import plan_adaptive
        workload = self.workload
        if isinstance(workload, (str, os.PathLike)):
            workload = parse_workload(workload, list(domain.attrs))
        plan = plan_adaptive(domain, rho, family=self.family, workload=workload,
                             rounds=self.rounds, per_round=self.per_round, alpha=self.alpha,
                             rows=rows, seed=seed)
        family = self._make_family()   # the family's settings are checked before any charge
        if hasattr(family, "largest_table"):
            from .plan import check_family_table
            check_family_table(family.largest_table(domain, [c for c, _ in plan.options[
                "workload"]]), self.name)
        return plan

    def _make_family(self) -> Any:
        from .adaptive import MWEMUpdate, PEPUpdate
        from .rap import RAPSoftmax
        make = {"mwem": MWEMUpdate, "pep": PEPUpdate, "rap-softmax": RAPSoftmax}[self.family]
        try:
            return make(**self.options)
        except TypeError as err:
            raise InvalidArgumentError(f"options for {self.name}: {err}") from None

    def _run(self, curator: Any, plan: Plan, *, callback: Any) -> MechanismResult:
        from .adaptive import adaptive_measurements
        return adaptive_measurements(curator, family=self._make_family(),
                                     synthetic_rows=plan.rows, seed=plan.seed,
                                     callback=callback, discrete=self.noise == "discrete",
                                     **plan.options)


class MWEMHistogram(_AdaptiveSynthesizer):
    """MWEM (Hardt, Ligett & McSherry 2012) as the paper runs it: explicit histogram (at most
    2^25 cells, refused before any charge), whole-marginal selections, reuse of past
    measurements, last iterate. ``rounds`` defaults to 200."""

    name = "mwem-explicit"
    family = "mwem"
    conditioned_model = "histogram"


class PEP(_AdaptiveSynthesizer):
    """PEP, Private Entropy Projection (Liu, Vietri & Wu, Alg. 4 as the update): the
    maximum-entropy histogram matching the noisy marginals (at most 2^25 cells). ``rounds``
    defaults to 50."""

    name = "pep"
    family = "pep"
    conditioned_model = "histogram"


class RAPSoftmaxSynthesizer(_AdaptiveSynthesizer):
    """RAP-softmax (the paper's App. A.3 baseline): 1000 relaxed rows, a softmax per attribute,
    squared loss (``mechanisms.rap``). ``rounds`` defaults to 5, ``per_round`` to 10."""

    name = "rap-softmax"
    family = "rap-softmax"
    conditioned_model = "product"


class GEMSynthesizer(_AdaptiveSynthesizer):
    """GEM (Liu, Vietri & Wu, Alg. 2-3): a generator network of B = 1000 product
    distributions (``mechanisms.gem``; needs ``pip install "dpcore[deep]"``). ``rounds``
    defaults to 5, ``per_round`` to 10."""

    name = "gem"
    family = "gem"
    conditioned_model = "product"

    def _make_family(self) -> Any:
        from .gem import GEM
        try:
            return GEM(**self.options)
        except TypeError as err:
            raise InvalidArgumentError(f"options for {self.name}: {err}") from None


class GEMPub(GEMSynthesizer):
    """GEM-Pub (Sec. 6): GEM whose generator is first trained on a public table's workload
    answers. ``public``: a DataFrame with the schema's columns, public (no budget covers it)."""

    name = "gem-pub"
    family = "gem-pub"

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *, public: pd.DataFrame,
                 **kwargs: Any) -> None:
        if not isinstance(public, pd.DataFrame):
            raise InvalidArgumentError(f"public must be a pandas DataFrame of public records, "
                                       f"got {type(public).__name__}")
        super().__init__(epsilon, delta, **kwargs)
        self.public = public
        self._public: Any = None        # the public table encoded under the measured schema

    def plan(self, schema: SchemaLike, *, rows: int | None = None) -> Plan:
        """As :meth:`Synthesizer.plan`, and the public table must encode under ``schema``."""
        from dpcore import Dataset
        measured = measured_schema(as_schema(schema))
        missing = [c for c in measured.names if c not in self.public.columns]
        if missing:
            raise InvalidArgumentError(f"public data lacks column(s) {missing} of the schema")
        try:
            codes = encode_frame(self.public[list(measured.names)], measured)
        except (ValueError, TypeError) as err:
            raise InvalidArgumentError(f"public data: {err}") from None
        self._public = Dataset(codes, measured.domain())
        return super().plan(schema, rows=rows)

    def _make_family(self) -> Any:
        from .gem import GEM
        try:
            return GEM(public=self._public, **self.options)
        except TypeError as err:
            raise InvalidArgumentError(f"options for {self.name}: {err}") from None

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "_public": None}


def _codes_sha256(codes: np.ndarray) -> str:
    import hashlib
    digest = hashlib.sha256(f"{codes.dtype.str}{codes.shape}".encode())
    digest.update(np.ascontiguousarray(codes).tobytes())
    return digest.hexdigest()


def synthesizer_names() -> Sequence[str]:
    return sorted(Synthesizer._registry)
