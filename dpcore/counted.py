"""Count tables from records that are never held whole: one pass over the data counts a batch
of marginals, later reads come from that cache (issue 21).

A counted table stands where a :class:`~dpcore.dataset.Dataset` stands for the
:class:`~dpcore.curator.Curator` (it has ``domain``, ``weights`` and ``marginals``), but holds
count tables, not records. :class:`CountedTable` is the part every such table shares: the
batch, the cache, the pass count and the input digest. A subclass says how one pass counts:

* :class:`FileTable` reads one CSV or Parquet file chunk by chunk in this process
  (:func:`dpcore.encoding.iter_codes`, the reader and the errors of the memory engine's
  :func:`~dpcore.encoding.read_codes`) and sums each chunk's tables from the compiled kernel;
  memory is one chunk plus the tables, whatever the row count.
* :class:`dpcore.distributed.DistributedTable` counts the partitions on a Dask cluster.

Counts add exactly across row chunks (integers below 2^53 in float64), so the tables are the
in-memory tables, bit for bit, and for a fixed seed a mechanism on a counted table charges and
releases what it would on the Dataset.

Batching: :meth:`CountedTable.prefetch` counts, in one pass, every marginal a mechanism can ask
for (:meth:`mechanisms.Synthesizer.batch_cliques`) whose cells fit under a cap; later
:meth:`~CountedTable.marginals` calls are answered from that cache, and a marginal outside it
costs one more pass. The prefetch returns a digest of the input (a file's SHA-256, the ledger's
input commitment), and every later pass must find the same digest. The prefetch releases
nothing and is not charged: the tables stay inside the privacy boundary (the curator that holds
this object), which charges each release before answering it. Because it runs before the
ledger opens, a bad file fails the run with nothing spent.
"""
from __future__ import annotations

import abc
import contextvars
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dpcore.errors import InvalidArgumentError

__all__ = ["CountedTable", "DEFAULT_BATCH_BYTES", "FileTable", "ReadDigest", "batch_bytes",
           "count_file", "digest_for", "file_sha256", "open_input", "read_and_hash"]

#: The largest batch of tables a prefetch counts in one pass (float64 cells): 256 MiB.
#: Adult's all-3way closure is 575 tables, 16 MiB; 100 attributes all-3way would be 14 GiB,
#: and then each marginal is counted when first asked for (one pass each).
DEFAULT_BATCH_BYTES = 256 * 2 ** 20


def batch_bytes(domain: Any, cliques: Sequence[Sequence[str]]) -> int:
    """The bytes (float64 cells) of the distinct tables among ``cliques``: what a prefetch of
    them holds. Public (the domain only)."""
    keys = {tuple(domain.canonical(c)) for c in cliques}
    return 8 * sum(domain.size(c) for c in keys)


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read 1 MiB at a time (inside :func:`read_and_hash`,
    through :func:`open_input`)."""
    digest = hashlib.sha256()
    with open_input(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _identity(path: str | os.PathLike) -> tuple[int, ...]:
    return _stat_identity(os.stat(path))


def _stat_identity(st: os.stat_result) -> tuple[int, ...]:
    # ctime too: a rewrite in place at the same size with its mtime set back (os.utime) keeps
    # the other four, but no one can set ctime back (review 17)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def open_input(path: str | os.PathLike, mode: str = "rb", **kwargs: Any) -> Any:
    """``open(path, mode, **kwargs)`` for a reader of a run's input. Inside
    :func:`read_and_hash` of the same path, the opened file must be the one identified before
    the read (device, inode, size, modification and status-change times, by ``fstat`` of it):
    readers open the path several times, and a file renamed over it for one open and renamed
    back before the hash would otherwise be counted while the commitment is to the other."""
    fh = open(path, mode, **kwargs)
    digest = _DIGEST.get()
    if digest is not None and os.path.abspath(os.fspath(path)) == digest.path:
        if _stat_identity(os.fstat(fh.fileno())) != digest.identity:
            fh.close()
            raise InvalidArgumentError(f"{path}: the file changed while it was read; rerun on "
                                       f"a fixed input")
    return fh


class ReadDigest:
    """The SHA-256 of a file's bytes, fed by the reader as it reads them (see
    :func:`read_and_hash`): valid once a pass fed the whole file, in order. Each pass hashes
    on its own (:meth:`start`), so interleaved passes never mix their bytes; passes that
    disagree, or none that finished, give no digest (the file is then hashed again)."""

    def __init__(self, identity: tuple[int, ...], path: str = "") -> None:
        self.identity = identity
        self.path = path            # absolute: the file :func:`open_input` checks
        self._digests: list[str] = []

    def start(self) -> "_Pass":
        """A new pass from the file's first byte."""
        return _Pass(self)

    def hexdigest(self) -> str | None:
        """The file's SHA-256, or None unless some pass fed every byte of it (and every such
        pass found the same)."""
        return self._digests[0] if len(set(self._digests)) == 1 else None


class _Pass:
    """One reader's pass over the hashed file: its own hash and byte count."""

    def __init__(self, digest: ReadDigest) -> None:
        self._digest, self._sha, self._size = digest, hashlib.sha256(), 0

    def update(self, data: Any) -> None:
        self._sha.update(data)
        self._size += len(data)

    def finish(self) -> None:
        """The pass reached the end of the file: it counts if it read the file's size."""
        if self._size == self._digest.identity[2]:
            self._digest._digests.append(self._sha.hexdigest())


_DIGEST: contextvars.ContextVar[ReadDigest | None] = contextvars.ContextVar("dpcore_read_digest",
                                                                             default=None)


def digest_for(fh: Any) -> "_Pass | None":
    """A pass of the digest :func:`read_and_hash` wants fed with the bytes of the open binary
    file ``fh`` (read from its start), if ``fh`` is the file being hashed; else None."""
    digest = _DIGEST.get()
    if digest is None:
        return None
    st = os.fstat(fh.fileno())
    return digest.start() if (st.st_dev, st.st_ino) == digest.identity[:2] else None


def read_and_hash(path: str | os.PathLike, read: Any) -> tuple[Any, str]:
    """``read()`` (a pass over the file at ``path``) and the file's SHA-256, refusing a file
    that changed meanwhile (its device, inode, size, modification or status-change time differ
    after the hash from before the read): the digest, the run's input commitment, is then that of the
    bytes that were read. No digest in the error (it can reach the public ledger).

    The plain-CSV block reader (:mod:`dpcore.csvblocks`) hashes the bytes as it reads them
    (:func:`digest_for`); when no pass fed the whole file (another reader, a pass stopped
    early), the file is hashed in a second pass."""
    before = _identity(path)
    digest = ReadDigest(before, os.path.abspath(os.fspath(path)))
    token = _DIGEST.set(digest)
    try:
        result = read()
        hexdigest = digest.hexdigest() or file_sha256(path)   # checked by open_input too
    finally:
        _DIGEST.reset(token)
    if _identity(path) != before:
        raise InvalidArgumentError(f"{path}: the file changed while it was read; rerun on a "
                                   f"fixed input")
    return result, hexdigest


class CountedTable(abc.ABC):
    """Count tables over ``measured``'s columns (default: all of ``schema``'s) of records
    encoded with ``schema``; see the module docstring. Subclasses implement :meth:`_count`."""

    weights = None     # records count once each: sensitivity 1, as for an unweighted Dataset
    #: the error for an input that changed between two passes
    input_error: ClassVar[type[Exception]] = InvalidArgumentError

    def __init__(self, schema: Any, *, measured: Any = None,
                 batch_bytes: int = DEFAULT_BATCH_BYTES) -> None:
        if isinstance(batch_bytes, bool) or not isinstance(batch_bytes, (int, np.integer)) \
                or batch_bytes < 0:
            raise InvalidArgumentError(f"batch_bytes must be an integer >= 0, got {batch_bytes!r}")
        self._schema = schema
        measured = measured or schema
        self._domain = measured.domain()
        self._columns = [schema.names.index(n) for n in measured.names]
        self._batch_bytes = int(batch_bytes)
        self._cache: dict[tuple[str, ...], np.ndarray] = {}
        self.passes = 0           # passes over the data so far (public: a count of calls)
        self._digest: str | None = None   # the first pass's input digest (the ledger's)

    @property
    def domain(self):
        return self._domain

    @abc.abstractmethod
    def _count(self, shape: list[int], subsets: list[list[int]]) -> tuple[list, str]:
        """One pass over all the records: the count table of each subset (axes of ``shape``,
        flat or shaped) and the input digest (hex)."""

    def _pass(self, cliques: Sequence[tuple[str, ...]]) -> tuple[list[np.ndarray], str]:
        """One pass: the tables of ``cliques`` (canonical order) and the input digest."""
        subsets = [list(self._domain.axes(c)) for c in cliques]
        tables, whole = self._count(list(self._domain.shape), subsets)
        self.passes += 1
        if self._digest is None:
            self._digest = whole
        elif whole != self._digest:
            # one run, one input: a later pass over a changed input must not mix two datasets.
            # No digest in the message: it can reach the public ledger (a failed run's reason),
            # and an unsalted hash of the data would let anyone test a candidate table.
            raise self.input_error("the input changed between passes over the data; rerun on "
                                   "a fixed input")
        return [np.asarray(t, dtype=np.float64).reshape(self._domain.project(c).shape)
                for t, c in zip(tables, cliques)], whole

    def prefetch(self, cliques: Sequence[Sequence[str]]) -> str:
        """Count ``cliques`` (those that fit under the batch cap, smallest first) in one pass
        and keep them; returns the input digest. Reads data, releases nothing."""
        wanted = []
        for c in cliques:
            key = tuple(self._domain.canonical(c))
            if key not in self._cache and key not in wanted:
                wanted.append(key)
        wanted.sort(key=lambda c: (self._domain.size(c), c))
        batch, cells = [], 0
        for c in wanted:
            cells += self._domain.size(c)
            if cells * 8 > self._batch_bytes:
                break
            batch.append(c)
        tables, digest = self._pass(batch)
        self._cache.update(zip(batch, tables))
        return digest

    def marginals(self, attr_sets) -> list:
        """Count tables (Factors) over each attribute tuple: from the prefetched cache, the
        rest in one more pass."""
        from dpcore.factor import Factor
        keys = [tuple(self._domain.canonical(a)) for a in attr_sets]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            tables, _ = self._pass(missing)
            self._cache.update(zip(missing, tables))
        out = []
        for attrs, key in zip(attr_sets, keys):
            factor = Factor(self._domain.project(key), self._cache[key])
            out.append(factor if tuple(attrs) == key else factor.transpose(tuple(attrs)))
        return out


class FileTable(CountedTable):
    """One CSV or Parquet file, read and counted chunk by chunk in this process.

    ``path``, ``schema``, ``sep``, ``chunk_rows``, ``debug`` and ``engine`` are
    :func:`dpcore.encoding.iter_codes`' (the same reader, rules and errors as the memory
    engine's :func:`~dpcore.encoding.read_codes`). The input digest is the file's SHA-256, the
    memory engine's input commitment. Memory: one chunk of text and codes, plus the batch's
    tables (at most ``batch_bytes``), whatever the file's row count.
    """

    def __init__(self, path: str | os.PathLike, schema: Any, *, measured: Any = None,
                 sep: str = ",", chunk_rows: int | None = None, debug: bool = False,
                 engine: str = "auto", batch_bytes: int = DEFAULT_BATCH_BYTES) -> None:
        from dpcore.encoding import DEFAULT_CHUNK_ROWS, READ_ENGINES
        super().__init__(schema, measured=measured, batch_bytes=batch_bytes)
        if engine not in READ_ENGINES:
            raise InvalidArgumentError(f"engine must be one of {READ_ENGINES}, got {engine!r}")
        self._path = Path(path)
        self._options = {"sep": sep, "debug": debug,
                         "chunk_rows": DEFAULT_CHUNK_ROWS if chunk_rows is None else chunk_rows}
        self._engine = engine

    def __repr__(self) -> str:
        return f"FileTable({str(self._path)!r}, domain={self._domain!r})"

    def _count(self, shape: list[int], subsets: list[list[int]]) -> tuple[list, str]:
        # the engine that read the file is kept: a file whose quote made the block reader
        # restart is read with pandas from the next pass on, not restarted on every pass
        tables, digest, self._engine = count_file(self._path, self._schema, self._columns,
                                                  shape, subsets, engine=self._engine,
                                                  **self._options)
        return tables, digest


def count_file(path: str | os.PathLike, schema: Any, columns: list[int], shape: list[int],
               subsets: list[list[int]], *, engine: str = "auto", content: Any = None,
               **options: Any) -> tuple[list, str, str]:
    """One pass over a file, chunk by chunk (:func:`dpcore.encoding.iter_codes` with
    ``engine`` and ``options``): the summed count tables of ``subsets`` (axes of ``shape``)
    over the codes' ``columns``, the file's SHA-256 (:func:`read_and_hash`: a file changed
    during the pass is refused) and the engine that read it ("pandas" after a restart).
    Memory: one chunk and the tables. What :class:`FileTable` and the Dask engine's workers
    run. ``content``, if given, is fed each chunk's codes (every column) in order
    (``content.update(codes)``), from the start again if the pass restarts
    (``content.restart()``)."""
    (tables, used), digest = read_and_hash(
        path, lambda: _count_chunks(path, schema, columns, shape, subsets, engine, options,
                                    content))
    return tables, digest, used


def _count_chunks(path: Any, schema: Any, columns: list[int], shape: list[int],
                  subsets: list[list[int]], engine: str, options: dict, content: Any
                  ) -> tuple[list, str]:
    from dpcore import _core
    from dpcore.encoding import RestartRead, iter_codes
    whole = list(columns) == list(range(len(schema.names)))
    while True:
        totals: list[np.ndarray] = []
        if content is not None:
            content.restart()
        try:
            for k, codes in enumerate(iter_codes(path, schema, engine=engine, **options)):
                if content is not None:
                    content.update(codes)
                if not whole:
                    codes = np.ascontiguousarray(codes[:, columns])
                part = _core.count_marginals(codes, shape, subsets)
                if k == 0:
                    totals = part
                else:
                    for total, t in zip(totals, part):
                        total += t
            return totals, engine
        except RestartRead:
            # the block reader met a quote past its first chunk: the counts so far are
            # dropped, and the pass starts over with pandas
            engine = "pandas"
