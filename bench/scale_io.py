"""Scale, I/O alone (issue 21): CPU and peak RSS of one output or input step, in this process.

    python bench/scale_io.py write-parquet stream|whole N OUT.parquet   # Synthesizer.write
    python bench/scale_io.py read pandas|pyarrow DATA.csv               # read_codes
    python bench/scale_io.py write-partitioned WORKERS N OUT/ [BLOCKS]  # 0 workers: write()

``write-parquet``: MST fitted on the bundled Adult (seed 0, cached in a pickle beside OUT),
then ``write(OUT, N, seed=1)``; ``whole`` forces the previous path (the table concatenated,
then ``to_parquet``). ``read``: the Adult schema, the CSV reader forced to one engine.
Run each in a fresh process (peak RSS is the process's). Results: bench/results/scale-io.md.
"""
from __future__ import annotations

import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_parquet(mode: str, n: int, out: str) -> str:
    import dpcore.arrowio as arrowio
    from dpcore.datasets import adult
    from mechanisms import Synthesizer
    cache = os.path.join(os.path.dirname(os.path.abspath(out)), "mst-adult-seed0.pkl")
    if os.path.exists(cache):
        synth = Synthesizer.load(cache)
    else:
        df, schema = adult()
        synth = Synthesizer.create("mst", epsilon=1.0, seed=0, progress=False).fit(df, schema)
        synth.save(cache)
    if mode == "whole":
        arrowio.have_pyarrow = lambda: False
    before, cpu = _peak_mb(), time.process_time()
    synth.write(out, n, seed=1)
    return (f"write-parquet {mode} N={n}: {time.process_time() - cpu:.1f} CPU-s, peak RSS "
            f"{before:.0f} -> {_peak_mb():.0f} MB, {os.path.getsize(out) / 2 ** 20:.0f} MB file")


def write_partitioned(workers: int, n: int, out: str, blocks: int = 4) -> str:
    """MST (as write-parquet) sampled to ``out/`` (CSV parts) by a LocalCluster of
    ``workers`` processes (0: ``write(out.csv)`` in this process, the single-machine
    writer). CPU: this process plus the workers (children, counted once reaped)."""
    from mechanisms import Synthesizer
    cache = os.path.join(os.path.dirname(os.path.abspath(out.rstrip("/"))), "mst-adult-seed0.pkl")
    synth = Synthesizer.load(cache)
    wall = time.perf_counter()
    if workers == 0:
        synth.write(out.rstrip("/") + ".csv", n, seed=1)
    else:
        from dpcore.distributed import local_client
        client = local_client(workers)
        from dpcore.junction_tree import SAMPLE_BLOCK
        synth.write_partitioned(out, n, seed=1, client=client,
                                partition_rows=blocks * SAMPLE_BLOCK)
        cluster = client.cluster
        client.close()
        cluster.close()
    wall = time.perf_counter() - wall
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return (f"write-partitioned workers={workers} N={n} blocks/partition={blocks}: {cpu:.1f} CPU-s (all processes, "
            f"including loading the model), {wall:.1f} s wall, peak RSS {_peak_mb():.0f} MB "
            f"(this process), children's largest {kids.ru_maxrss / 1024:.0f} MB")


def read(engine: str, path: str) -> str:
    import dpcore.encoding as encoding
    from dpcore.datasets import adult
    _, schema = adult()
    before, cpu = _peak_mb(), time.process_time()
    codes = encoding.read_codes(path, schema, engine=engine)
    return (f"read {engine} {len(codes)} rows: {time.process_time() - cpu:.1f} CPU-s, peak RSS "
            f"{before:.0f} -> {_peak_mb():.0f} MB")


if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    if what == "write-parquet":
        print(write_parquet(rest[0], int(rest[1]), rest[2]))
    elif what == "write-partitioned":
        print(write_partitioned(int(rest[0]), int(rest[1]), rest[2], *map(int, rest[3:])))
    elif what == "read":
        print(read(rest[0], rest[1]))
    else:
        raise SystemExit(__doc__)
