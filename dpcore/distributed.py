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


_EXTENSIONS = {"csv": "csv", "parquet": "parquet", "pq": "parquet"}


def expand_paths(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The files of a path, a glob, a directory (its .csv, or its .parquet/.pq files, in any
    letter case) or a list, sorted (the order fixes nothing but the digest's). A name that is
    an existing file is that file, never a pattern. Each record must be counted once: two
    names of one file (a repeat, a symbolic or hard link) are refused, and so is a directory
    holding both CSV and Parquet files (the same table in two formats counts twice)."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if os.path.isdir(text):
            found = [os.path.join(text, name) for name in os.listdir(text)
                     if name.rpartition(".")[2].lower() in _EXTENSIONS]
            formats = {_EXTENSIONS[p.rpartition(".")[2].lower()] for p in found}
            if len(formats) > 1:
                raise InvalidArgumentError(
                    f"directory {text!r} holds both CSV and Parquet files; name the ones to "
                    f"read with a glob (the same table in two formats would count twice)")
        elif os.path.isfile(text):
            found = [text]
        else:
            found = glob.glob(text)
    else:
        found = [os.fspath(p) for p in source]
    files = sorted(p for p in found if os.path.isfile(p))
    if not files:
        raise InvalidArgumentError(f"no data files match {source!r}")
    seen: dict[tuple[int, int], str] = {}
    for path in files:
        st = os.stat(path)
        first = seen.setdefault((st.st_dev, st.st_ino), path)
        if first is not path:
            raise InvalidArgumentError(f"{first!r} and {path!r} are the same file; each "
                                       f"record must be counted once")
    return files


def local_client(workers: int | None = None, *, processes: bool = True):
    """A ``distributed.Client`` on a new ``LocalCluster`` sized to the machine (one
    single-threaded worker per core), for runs without a scheduler address."""
    require_dask()
    from distributed import Client, LocalCluster
    workers = workers or os.cpu_count() or 1
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                           dashboard_address=":0")
    return Client(cluster)


def close_client(client: Any, *, cluster: bool = True) -> None:
    """Close ``client`` and, with ``cluster`` (for a cluster this process started: a
    LocalCluster), the cluster it runs on."""
    owned = getattr(client, "cluster", None) if cluster else None
    client.close()
    if owned is not None:
        owned.close()


# ---------------------------------------------------------------- worker side (pure functions)
def _count_codes(codes: np.ndarray, shape: list[int], subsets: list[list[int]]) -> list:
    from dpcore import _core
    return _core.count_marginals(codes, shape, subsets)


def _file_part(path: str, schema: Any, columns: list[int], shape: list[int],
               subsets: list[list[int]], sep: str) -> tuple[list, str]:
    """Read, encode and count one file in a worker, chunk by chunk (memory: one chunk and
    the tables): (tables, the file's SHA-256)."""
    tables, digest, _ = count_file(path, schema, columns, shape, subsets, sep=sep)
    return tables, digest


def _frame_part(frame: Any, schema: Any, columns: list[int], shape: list[int],
                subsets: list[list[int]]) -> tuple[list, str]:
    """Encode and count one DataFrame partition: (tables, the codes' SHA-256)."""
    from dpcore.encoding import encode_frame
    codes = np.ascontiguousarray(encode_frame(frame, schema)[:, columns])
    digest = hashlib.sha256(f"{codes.dtype.str}{codes.shape}".encode())
    digest.update(codes.tobytes())
    return _count_codes(codes, shape, subsets), digest.hexdigest()


def _add(a: tuple[list, list], b: tuple[list, list]) -> tuple[list, list]:
    """Sum two partial results: tables cell by cell, digests concatenated in order."""
    return [x + y for x, y in zip(a[0], b[0])], a[1] + b[1]


def _lift(part: tuple[list, str]) -> tuple[list, list]:
    return part[0], [part[1]]


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
            parts = [delayed(_frame_part)(f, self._schema, self._columns, shape, subsets)
                     for f in self._frame.to_delayed()]
        level = [delayed(_lift)(p) for p in parts]
        while len(level) > 1:       # a tree of additions, in the workers
            level = [delayed(_add)(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        from dpcore.errors import DpcoreError
        try:
            if self._client is not None:
                tables, digests = self._client.compute(level[0]).result()
            else:
                (tables, digests), = self._dask.compute(level[0])
        except DpcoreError:
            raise                   # a bad value or file: the worker's own error, as is
        except Exception as exc:    # a lost worker (KilledWorker), a cancelled task, ...
            raise ClusterError(f"counting on the cluster failed ({type(exc).__name__}): "
                               f"{str(exc)[:200]}") from None
        if self._files is not None and len(set(digests)) < len(digests):
            # two files with the same bytes are a copy: every record in them would count
            # twice against a charge for once (found in the first pass, before any charge)
            first: dict[str, str] = {}
            for path, digest in zip(self._files, digests):
                if digest in first:
                    raise InvalidArgumentError(f"{first[digest]!r} and {path!r} hold the same "
                                               f"bytes; each record must be counted once")
                first[digest] = path
        return tables, hashlib.sha256("\n".join(digests).encode()).hexdigest()
