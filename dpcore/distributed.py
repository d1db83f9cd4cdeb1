"""Counting on a Dask cluster: the records stay in the workers, only count tables come back.

A :class:`DistributedTable` stands where a :class:`~dpcore.dataset.Dataset` stands for the
:class:`~dpcore.curator.Curator` (it has ``domain``, ``weights`` and ``marginals``), over data
that never reaches the driver: a list (or glob) of CSV/Parquet files, or a Dask DataFrame of
raw values. Each partition (a file, read chunk by chunk by :func:`dpcore.counted.count_file`,
or a DataFrame partition, by :func:`~dpcore.encoding.encode_frame`) is encoded with the public
schema, as strictly as on one machine, and counted with the compiled kernel inside a worker;
the partial tables are summed in the workers by a tree of additions, and the driver receives
the total tables only. Counts add exactly across row partitions (integers below 2^53 in float64), so
the tables are the one-machine tables, bit for bit.

Batching, the cache and the input digest (SHA-256 over the partitions' own digests, for
the ledger's input commitment) are :class:`dpcore.counted.CountedTable`'s, shared with the
one-machine :class:`~dpcore.counted.FileTable`: one pass before the ledger opens counts every
marginal the mechanism can ask for, so a failed count (a bad value, a worker lost more often
than the scheduler retries) fails the run with nothing spent.

Dask (``pip install 'dpcore[dask]'``) is imported here and nowhere else, lazily.
"""
from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpcore.counted import DEFAULT_BATCH_BYTES, CountedTable, count_file
from dpcore.errors import InvalidArgumentError

__all__ = ["ClusterError", "DistributedTable", "DEFAULT_BATCH_BYTES", "close_client",
           "expand_paths", "local_client", "require_dask"]


class ClusterError(InvalidArgumentError):
    """A pass over the data failed on the cluster (not in the data): nothing was counted."""


def require_dask():
    """The dask module, or an InvalidArgumentError saying how to install the extra."""
    try:
        import dask
        import distributed  # noqa: F401  (the engine needs the distributed scheduler)
    except ImportError:
        raise InvalidArgumentError("the Dask engine needs dask: pip install 'dpcore[dask]'") from None
    return dask


_EXTENSIONS = (".csv", ".parquet", ".pq")


def expand_paths(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The files of a path, a glob, a directory (its .csv, or its .parquet/.pq files, in any
    letter case, not hidden ones, as a glob) or a list, sorted (the order fixes nothing but
    the digest's). A name that is an existing file is that file, never a pattern. Each record
    must be counted once: two names of one file (a repeat, a symbolic or hard link) are
    refused, and so are files of both formats, or two files that differ only in their
    extension (the same table written twice would count twice); copies under other names are
    found by their content when counted (:class:`DistributedTable`)."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if os.path.isdir(text):
            found = [os.path.join(text, name) for name in os.listdir(text)
                     if not name.startswith(".")
                     and os.path.splitext(name)[1].lower() in _EXTENSIONS]
        elif os.path.isfile(text):
            found = [text]
        else:
            found = glob.glob(text)
    else:
        found = [os.fspath(p) for p in source]
    files = sorted(p for p in found if os.path.isfile(p))
    if not files:
        raise InvalidArgumentError(f"no data files match {source!r}")
    from dpcore.encoding import is_parquet
    if len({is_parquet(p) for p in files}) > 1:
        raise InvalidArgumentError(
            f"{source!r} names both CSV and Parquet files; name files of one format (the same "
            f"table in two formats would count twice)")
    seen: dict[tuple[int, int], str] = {}
    stems: dict[tuple[str, str], str] = {}
    for path in files:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            raise InvalidArgumentError(f"{seen[key]!r} and {path!r} are the same file; each "
                                       f"record must be counted once")
        seen[key] = path
        stem, ext = os.path.splitext(os.path.basename(path))
        if ext.lower() not in _EXTENSIONS:
            continue
        key = (os.path.realpath(os.path.dirname(path) or "."), stem.lower())
        other = stems.setdefault(key, path)
        if other != path:
            raise InvalidArgumentError(f"{other!r} and {path!r} differ only in their "
                                       f"extension (.csv, .parquet, .pq): the same table "
                                       f"written twice would count twice; name one of them")
    return files


def local_client(workers: int | None = None, *, processes: bool = True):
    """A ``distributed.Client`` on a new ``LocalCluster`` sized to the machine (one
    single-threaded worker per core), for runs without a scheduler address."""
    require_dask()
    from distributed import Client, LocalCluster
    workers = workers or os.cpu_count() or 1
    # Everything on loopback: the dashboard (unauthenticated) serves task times and worker
    # logs (which files, columns and rows failed), which must not reach the network.
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                           host="127.0.0.1", dashboard_address="127.0.0.1:0")
    return Client(cluster)


def close_client(client: Any, *, cluster: bool = True) -> None:
    """Close ``client`` and, with ``cluster`` (for a cluster this process started: a
    LocalCluster), the cluster it runs on."""
    owned = getattr(client, "cluster", None) if cluster else None
    client.close()
    if owned is not None:
        owned.close()


# ---------------------------------------------------------------- worker side (pure functions)
# A task that raises is logged by the worker with its arguments (distributed before 2024.11
# printed them: a partition's raw rows, or exact count tables), so these functions never
# raise: a failure is returned as a _Failure and raised on the driver.
class _Failure:
    """A part's failure: our typed error (its message names no value unless debug asked),
    or only the class name of any other (its message may quote the data)."""

    def __init__(self, exc: Exception, where: str) -> None:
        from dpcore.errors import DpcoreError
        self.error = exc if isinstance(exc, DpcoreError) else None
        self.name, self.where = type(exc).__name__, where

    def raise_(self) -> None:
        if self.error is not None:
            raise self.error
        raise ClusterError(f"counting {self.where} failed in a worker ({self.name}; its "
                           f"message is withheld: it may quote the data)")


class _Content:
    """The SHA-256 of a part's codes over every schema column, rows in order, in the schema's
    code dtype: equal for a copy of the part whatever format or line endings held it (and,
    rarely, for different records that encode alike row for row)."""

    def __init__(self, dtype: Any) -> None:
        self._dtype = dtype
        self.restart()

    def restart(self) -> None:
        self._sha = hashlib.sha256()

    def update(self, codes: np.ndarray) -> None:
        self._sha.update(np.ascontiguousarray(codes, dtype=self._dtype).tobytes())

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


_EMPTY = hashlib.sha256().hexdigest()     # the content digest of a part without rows


def _file_part(path: str, schema: Any, columns: list[int], shape: list[int],
               subsets: list[list[int]], sep: str) -> tuple | _Failure:
    """Read, encode and count one file in a worker, chunk by chunk (memory: one chunk and
    the tables): (tables, the file's SHA-256, its codes' SHA-256)."""
    try:
        content = _Content(schema.code_dtype())
        tables, digest, _ = count_file(path, schema, columns, shape, subsets, sep=sep,
                                       content=content)
        return tables, digest, content.hexdigest()
    except Exception as exc:
        return _Failure(exc, f"file {path!r}")


def _frame_part(frame: Any, schema: Any, columns: list[int], shape: list[int],
                subsets: list[list[int]], index: int) -> tuple | _Failure:
    """Encode and count DataFrame partition ``index``: (tables, the codes' SHA-256 twice)."""
    try:
        from dpcore import _core
        from dpcore.encoding import EncodingError, encode_frame
        try:
            every = encode_frame(frame, schema)
        except EncodingError as err:    # its row counts from the partition's first row
            raise EncodingError(f"partition {index}, {err}", column=err.column, row=err.row,
                                value=err.value) from None
        content = _Content(schema.code_dtype())
        content.update(every)
        codes = np.ascontiguousarray(every[:, columns])
        return _core.count_marginals(codes, shape, subsets), content.hexdigest(), \
            content.hexdigest()
    except Exception as exc:
        return _Failure(exc, f"partition {index}")


def _add(a: tuple | _Failure, b: tuple | _Failure) -> tuple | _Failure:
    """Sum two partial results: tables cell by cell, digests concatenated in order."""
    if isinstance(a, _Failure) or isinstance(b, _Failure):
        return a if isinstance(a, _Failure) else b
    try:
        return [x + y for x, y in zip(a[0], b[0])], a[1] + b[1], a[2] + b[2]
    except Exception as exc:
        return _Failure(exc, "the sum of two parts")


def _lift(part: tuple | _Failure) -> tuple | _Failure:
    return part if isinstance(part, _Failure) else (part[0], [part[1]], [part[2]])


# ---------------------------------------------------------------- driver side
class DistributedTable(CountedTable):
    """Records on a Dask cluster, counted there (see the module docstring).

    ``source``: a glob, a directory or a list of CSV/Parquet files (each read by a worker,
    which must see the same paths), or a Dask DataFrame of raw values with the schema's
    columns. ``schema``: the public schema the data is encoded with; ``measured``: the
    schema of the columns the curator holds (default: all of them). ``client``: the
    ``distributed.Client`` to run on (default: the current one; with no client at all, Dask's
    local scheduler counts in this process, which then reads the raw rows itself).
    """

    input_error = ClusterError

    def __init__(self, source: Any, schema: Any, *, measured: Any = None, client: Any = None,
                 sep: str = ",", batch_bytes: int = DEFAULT_BATCH_BYTES) -> None:
        self._dask = require_dask()
        super().__init__(schema, measured=measured, batch_bytes=batch_bytes)
        self._client = client
        self._sep = sep
        if hasattr(source, "to_delayed"):
            self._files: list[str] | None = None
            self._frame = source
        else:
            self._files = expand_paths(source)
            self._frame = None

    @property
    def files(self) -> list[str]:
        """The input files (empty for a Dask DataFrame)."""
        return list(self._files or [])

    @property
    def partitions(self) -> int:
        return len(self._files) if self._files is not None else self._frame.npartitions

    def __repr__(self) -> str:
        return f"DistributedTable(partitions={self.partitions}, domain={self._domain!r})"

    def _count(self, shape: list[int], subsets: list[list[int]]) -> tuple[list, str]:
        """One pass over every partition, summed in the workers by a tree of additions."""
        from dask import delayed
        if self._files is not None:
            parts = [delayed(_file_part)(p, self._schema, self._columns, shape, subsets,
                                         self._sep) for p in self._files]
        else:
            parts = [delayed(_frame_part)(f, self._schema, self._columns, shape, subsets, k)
                     for k, f in enumerate(self._frame.to_delayed())]
        level = [delayed(_lift)(p) for p in parts]
        while len(level) > 1:       # a tree of additions, in the workers
            level = [delayed(_add)(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        try:
            if self._client is not None:
                result = self._client.compute(level[0]).result()
            else:
                result, = self._dask.compute(level[0])
        except Exception as exc:    # a lost worker (KilledWorker), a cancelled task, ...
            raise ClusterError(f"counting on the cluster failed ({type(exc).__name__}): "
                               f"{str(exc)[:200]}") from None
        if isinstance(result, _Failure):
            result.raise_()         # a bad value or file: the worker's own typed error
        tables, digests, contents = result
        # Two parts with the same encoded values in the same order are most likely a copy
        # of one table (in either format, with other line endings), which would count every
        # record twice against a charge for once; found in the first pass, before any charge.
        # Empty parts hold no record to count twice.
        names = self._files or [f"partition {k}" for k in range(len(contents))]
        first: dict[str, str] = {}
        for name, digest in zip(names, contents):
            if digest == _EMPTY:
                continue
            if digest in first:
                raise InvalidArgumentError(
                    f"{first[digest]!r} and {name!r} hold the same encoded values in the same "
                    f"order, as a copy of one table would; each record must be counted once "
                    f"(if they are different records, put them in one file)")
            first[digest] = name
        return tables, hashlib.sha256("\n".join(digests).encode()).hexdigest()
