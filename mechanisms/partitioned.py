"""Synthetic output on a Dask cluster: the workers draw, decode and write partitions in parallel.

Sampling is post-processing of the released model, so it may run anywhere: the driver sends
each worker a :class:`PartSampler` — the fitted model (noisy tables), MST's compression map,
the public schema and the sample seed; no records, no ledger — and the worker writes its
partition of a dataset directory, ``part-00000.csv`` (or ``.parquet``) and so on.

The rows are those of the single-machine writer (tested): ``write_partitioned(dir, n,
seed=s)`` holds, part after part, the rows of ``write(path, n, seed=s)``. The model draws
rows in blocks of :data:`dpcore.junction_tree.SAMPLE_BLOCK` (2^20) rows, block ``i`` from
its own stream ``block_seed(s, i)``, so a partition of whole blocks is drawn on its own;
decoding's uniform draws skip to the partition's first row (``decode_codes(start=...)``);
MST's compression is undone block by block (:func:`draw_rows`). Partitions are therefore
whole blocks (``partition_rows`` a multiple of SAMPLE_BLOCK; the last may be shorter).

Atomic: the parts are written into a temporary directory beside the target, renamed to
the target when every part is written; a failed part removes it. Workers must see the
driver's paths (a shared file system), as for the input.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pandas as pd

from dpcore.encoding import DEFAULT_CHUNK_ROWS, decode_codes, is_parquet, write_table
from dpcore.errors import InvalidArgumentError
from dpcore.files import replace_into

__all__ = ["PartSampler", "check_workers_can_write", "draw_rows", "write_partitions"]

FORMATS = ("csv", "parquet")


def _block_size() -> int:
    from dpcore import junction_tree
    return junction_tree.SAMPLE_BLOCK     # read at call time (tests make it small)


def draw_rows(model: Any, mapping: Any, domain: Any, n: int, seed: int,
              first_block: int = 0) -> np.ndarray:
    """``n`` rows of codes from blocks ``first_block, first_block + 1, ...`` of the model's
    stream for ``seed`` (every block but the last full). Without a compression map this is
    ``model.synthetic_data`` itself; with one (MST), each block is decompressed with its
    own seed, so any run of blocks is drawn alone. Post-processing: no data, no budget."""
    from dpcore.junction_tree import block_seed
    block = _block_size()
    if mapping is None:
        if first_block == 0:
            return np.asarray(model.synthetic_data(n, seed=seed).records)
        parts = [np.asarray(model.synthetic_data(min(block, n - s),
                                                 seed=block_seed(seed, first_block + k)).records)
                 for k, s in enumerate(range(0, n, block))]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    from .mst import decompress
    out = None
    for k, start in enumerate(range(0, max(n, 1), block)):
        rows = min(block, n - start)
        s = block_seed(seed, first_block + k)
        part = np.asarray(decompress(model.synthetic_data(rows, seed=s), domain, mapping,
                                     s).records)
        if out is None:
            out = np.empty((n, part.shape[1]), dtype=part.dtype)
        out[start:start + rows] = part
    return out


@dataclass(frozen=True)
class PartSampler:
    """What a worker needs to draw rows ``start .. start + rows`` of a sample of ``total``
    rows: the model and public facts only (pickled to the workers)."""
    model: Any
    mapping: Any
    domain: Any          # the measured domain (the model's, before decompression)
    schema: Any          # the public schema the rows are decoded with
    seed: int
    total: int
    plain: bool          # codes are the values (an encoded schema): no decoding

    def frames(self, start: int, rows: int, chunk_rows: int = DEFAULT_CHUNK_ROWS,
               categorical: bool = False) -> Iterator[pd.DataFrame]:
        """Rows ``start .. start + rows`` (``start`` on a block), decoded in DataFrames of at
        most ``chunk_rows`` rows (``categorical``: see :func:`decode_codes`)."""
        block = _block_size()
        if start % block:
            raise InvalidArgumentError(f"a partition starts on a block of {block} rows, "
                                       f"not at row {start}")
        codes = draw_rows(self.model, self.mapping, self.domain, rows, self.seed,
                          first_block=start // block)
        names = list(self.schema.names)
        for s in range(0, rows, chunk_rows):
            part = codes[s:s + chunk_rows]
            if self.plain:
                yield pd.DataFrame(part.astype(np.int64), columns=names)
            else:
                yield decode_codes(part, self.schema, seed=self.seed, start=start + s,
                                   total=self.total, categorical=categorical)


def _write_part(sampler: PartSampler, start: int, rows: int, path: str, missing_token: str,
                sep: str) -> tuple[str, int]:
    """In a worker: draw, decode and write one partition; (its file name, its rows)."""
    csv = not is_parquet(path)
    plan = None
    if csv:
        from dpcore.codecsv import csv_plan
        plan = csv_plan(sampler.schema, missing_token, sep)
    if plan is not None:             # decoded and formatted in one compiled pass: same bytes
        from dpcore.codecsv import write_codes_csv
        from dpcore.encoding import temporary_output
        codes = draw_rows(sampler.model, sampler.mapping, sampler.domain, rows, sampler.seed,
                          first_block=start // _block_size())
        with temporary_output(path) as tmp, open(tmp, "wb") as fh:
            written = write_codes_csv(plan, [codes], fh, seed=sampler.seed, total=sampler.total,
                                      start=start)
        return os.path.basename(path), written
    # Parquet parts take their column types from the public schema: the same in every part
    written = write_table(sampler.frames(start, rows, categorical=True), path,
                          missing_token=missing_token, sep=sep,
                          schema=None if csv else sampler.schema)
    return os.path.basename(path), written


def _can_write(probe: str, token: str) -> str | None:
    """In a worker: None if it sees the driver's directory ``probe`` (its token file holds
    ``token``) and can create and remove a file in it, else why not."""
    try:
        with open(os.path.join(probe, "token"), encoding="utf-8") as fh:
            if fh.read() != token:
                return "it sees another directory at that path"
        fd, name = tempfile.mkstemp(prefix="part-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def check_workers_can_write(client: Any, directory: str | os.PathLike) -> None:
    """Refuse, before a fit spends anything, a partitioned output that some worker of
    ``client`` cannot write. The parts go to a directory the driver makes beside
    ``directory`` (mode 0700, its owner), written by the workers: so the probe is such a
    directory, and each worker must find the driver's token in it (the same mount, not a
    local directory at the same path) and write a file there (the same user, or rights)."""
    import secrets
    parent = os.path.dirname(os.path.abspath(os.fspath(directory)))
    probe = tempfile.mkdtemp(prefix=f".{os.path.basename(os.fspath(directory))}.", suffix=".probe",
                             dir=parent)
    try:
        token = secrets.token_hex(16)
        with open(os.path.join(probe, "token"), "w", encoding="utf-8") as fh:
            fh.write(token)
        for worker, problem in sorted(client.run(_can_write, probe, token).items()):
            if problem is not None:
                raise InvalidArgumentError(
                    f"worker {worker} cannot write the parts beside {os.fspath(directory)!r} "
                    f"({problem}); the workers write them into a directory the driver makes, "
                    f"so they must see the driver's files and may write there")
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def write_partitions(sampler: PartSampler, directory: str | os.PathLike, *, client: Any,
                     partition_rows: int, fmt: str = "csv", missing_token: str = "",
                     sep: str = ",") -> int:
    """Write the sample as ``directory/part-NNNNN.<fmt>``, one task per partition of
    ``partition_rows`` rows on ``client`` (a ``distributed.Client``), atomically (see the
    module docstring). ``directory`` must not exist yet (or be empty). Returns the rows."""
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {FORMATS}, got {fmt!r}")
    block = _block_size()
    if isinstance(partition_rows, bool) or not isinstance(partition_rows, (int, np.integer)) \
            or partition_rows < block or partition_rows % block:
        raise InvalidArgumentError(f"partition_rows must be a positive multiple of the "
                                   f"sampling block ({block} rows), got {partition_rows!r}")
    target = os.path.abspath(os.fspath(directory))
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise InvalidArgumentError(f"cannot write {target!r}: directory {parent!r} does not "
                                   f"exist")
    if os.path.islink(target):
        raise InvalidArgumentError(f"{target!r} is a symbolic link; name the directory itself")
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise InvalidArgumentError(f"{target!r} exists and is not an empty directory; "
                                   f"refusing to overwrite it")
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=parent)
    futures: list = []
    try:
        starts = list(range(0, sampler.total, int(partition_rows)))
        # the model crosses the network once a worker, not once a partition
        shared = client.scatter(sampler, broadcast=True, hash=False) if len(starts) > 1 \
            else sampler
        futures = [client.submit(_write_part, shared, s, min(partition_rows, sampler.total - s),
                                 os.path.join(tmp, f"part-{k:05d}.{fmt}"), missing_token, sep,
                                 pure=False)
                   for k, s in enumerate(starts)]
        results = client.gather(futures)
        written = sum(rows for _, rows in results)
        if written != sampler.total:
            raise InvalidArgumentError(f"the partitions hold {written} rows, not "
                                       f"{sampler.total}")
        # a worker killed while writing a part leaves its temporary file (the part was then
        # written again elsewhere): only the parts are published
        parts = {name for name, _ in results}
        for name in os.listdir(tmp):
            if name not in parts:
                leftover = os.path.join(tmp, name)
                if os.path.isdir(leftover) and not os.path.islink(leftover):
                    shutil.rmtree(leftover)
                else:
                    os.unlink(leftover)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)          # mkdtemp's 0o700 is for the writing only
        if os.path.isdir(target):
            os.rmdir(target)            # empty (checked above)
        replace_into(tmp, target)
    except BaseException:
        # stop the other parts first: a worker still writing would refill the directory
        if futures:
            from distributed import wait
            client.cancel(futures)
            try:
                wait(futures)
            except Exception:      # noqa: BLE001 - cancelled futures report as errors
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return written
