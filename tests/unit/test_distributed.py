"""The Dask engine (issue 21): the same marginals, charges and synthetic rows as in memory; a
failed count spends nothing; a killed worker's partition is retried (or the run fails before
its first charge)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from dpcore import Dataset  # noqa: E402
from dpcore.accounting import Ledger  # noqa: E402
from dpcore.distributed import ClusterError, DistributedTable  # noqa: E402
from dpcore.encoding import EncodingError, encode_frame  # noqa: E402
from dpcore.schema import Schema  # noqa: E402
from mechanisms import Synthesizer  # noqa: E402

SCHEMA = Schema.from_dict({"columns": {
    "a": {"type": "categorical", "categories": ["x", "y", "z"]},
    "b": {"type": "numeric", "lower": 0, "upper": 99, "bins": 5, "integer": True},
    "c": {"type": "categorical", "categories": ["0", "1"]},
    "d": {"type": "numeric", "lower": 0, "upper": 1, "bins": 3}}})


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    return pd.DataFrame({"a": np.array(["x", "y", "z"])[a],
                         "b": (a * 30 + rng.integers(0, 20, n)).astype(str),
                         "c": ((a + rng.integers(0, 2, n)) % 2).astype(str),
                         "d": rng.random(n).round(3).astype(str)})


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client   # threads: the workers see this process's patched state (conftest)


@pytest.fixture
def files(tmp_path):
    frames = [_frame(n, i) for i, n in enumerate((700, 500, 800))]
    for i, f in enumerate(frames):
        f.to_csv(tmp_path / f"part{i}.csv", index=False)
    return tmp_path, pd.concat(frames, ignore_index=True)


def test_marginals_equal_the_in_memory_ones(client, files):
    folder, whole = files
    local = Dataset(encode_frame(whole, SCHEMA), SCHEMA.domain())
    cliques = [("a",), ("b", "a"), ("a", "c", "d"), ("d",)]
    for source in (str(folder / "*.csv"), dd.from_pandas(whole, npartitions=3)):
        table = DistributedTable(source, SCHEMA, client=client)
        table.prefetch([("a",), ("a", "b")])
        for got, want in zip(table.marginals(cliques), local.marginals(cliques)):
            assert got.attributes == want.attributes
            np.testing.assert_array_equal(got.values, want.values)
        assert table.passes == 2            # the prefetch, then one pass for the rest


def test_batch_cap_leaves_the_big_tables_to_later_passes(client, files):
    folder, _ = files
    table = DistributedTable(folder, SCHEMA, client=client, batch_bytes=8 * 20)
    table.prefetch([("a", "b", "d"), ("a",), ("b",)])     # 45 cells do not fit under 20
    assert table.passes == 1
    table.marginals([("a",), ("b",)])
    assert table.passes == 1                 # from the cache
    table.marginals([("a", "b", "d")])
    assert table.passes == 2


def test_an_input_changed_between_passes_fails_the_later_pass(client, files):
    folder, _ = files
    table = DistributedTable(folder, SCHEMA, client=client, batch_bytes=8 * 20)
    table.prefetch([("a",)])
    _frame(300, 9).to_csv(folder / "part1.csv", index=False)     # the input moves under us
    with pytest.raises(ClusterError, match="input changed between passes"):
        table.marginals([("a", "b", "d")])


@pytest.mark.parametrize("name, options", [("mst", {}), ("aim", {"workload": "all-2way"})])
def test_fit_distributed_gives_the_in_memory_run(client, files, name, options):
    folder, whole = files
    dist = Synthesizer.create(name, epsilon=1.0, delta=1e-9, seed=7, progress=False, **options)
    dist.fit_distributed(folder / "*.csv", SCHEMA, client=client)
    mem = Synthesizer.create(name, epsilon=1.0, delta=1e-9, seed=7, progress=False, **options)
    mem.fit(whole, SCHEMA)
    assert [(e.event, e.rho, e.what) for e in dist.ledger.charges] == \
        [(e.event, e.rho, e.what) for e in mem.ledger.charges]
    pd.testing.assert_frame_equal(dist.sample(), mem.sample())


def test_a_bad_value_fails_the_run_before_the_ledger_opens(client, files, tmp_path):
    folder, _ = files
    bad = _frame(50, 9)
    bad.loc[17, "b"] = "1000"                         # above the upper bound
    bad.to_csv(folder / "part9.csv", index=False)
    ledger = tmp_path / "ledger.json"
    synth = Synthesizer.create("mst", epsilon=1.0, seed=1, progress=False, ledger_path=ledger)
    with pytest.raises(EncodingError, match="row 18"):
        synth.fit_distributed(folder, SCHEMA, client=client)
    assert not ledger.exists()                        # nothing charged, nothing recorded
    # a lifetime ledger (--continue) is left byte for byte as it was
    from dpcore.accounting import PrivacyFilter
    PrivacyFilter.from_approx_dp(4.0, 1e-9, ledger_path=ledger).close()
    before = ledger.read_bytes()
    again = Synthesizer.create("mst", epsilon=1.0, seed=1, progress=False, ledger_path=ledger,
                               continue_ledger=True)
    with pytest.raises(EncodingError):
        again.fit_distributed(folder, SCHEMA, client=client)
    assert ledger.read_bytes() == before and Ledger.load(ledger).spent == 0


def _partition(i: int, n: int, marker: str, deaths: int) -> pd.DataFrame:
    """Partition i; partition 1 kills its worker process the first ``deaths`` times."""
    if i == 1:
        seen = len(os.listdir(marker))
        if seen < deaths:
            open(os.path.join(marker, str(seen)), "w").close()
            os._exit(1)                              # the worker dies mid-count
    return _frame(n, i)


def _killing_frame(marker, deaths: int):
    from dask import delayed
    def part(i, n):
        # a local function: distributed's plain pickle refuses it and falls back to cloudpickle,
        # which sends it (and this by-value module) whole; a module-level function would go by
        # reference, and a worker cannot import this test module (it is not on their path)
        return _partition(i, n, str(marker), deaths)
    parts = [delayed(part)(i, n) for i, n in enumerate((300, 200, 250))]
    return dd.from_delayed(parts, meta=_frame(1, 0).iloc[:0]), \
        pd.concat([_frame(n, i) for i, n in enumerate((300, 200, 250))], ignore_index=True)


def test_a_killed_worker_fails_the_run_before_any_charge(tmp_path):
    """A worker process dies mid-count (os._exit in the task). With no retry allowed the
    pass fails with ClusterError, before the ledger opens: nothing charged, no file. (With
    the scheduler's default of 3 allowed failures the partition is recomputed on another
    worker instead; that costs worker restarts, too slow for CI, and is dask's own logic.)"""
    import cloudpickle
    import dask
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # workers lack this module
    marker = tmp_path / "deaths"
    marker.mkdir()
    frame, _ = _killing_frame(marker, 1)
    ledger = tmp_path / "ledger.json"
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        synth = Synthesizer.create("mst", epsilon=1.0, progress=False, ledger_path=ledger)
        with pytest.raises(ClusterError, match="KilledWorker"):
            synth.fit_distributed(frame, SCHEMA, client=client)
    assert len(os.listdir(marker)) == 1 and not ledger.exists()


def test_cli_engine_dask_writes_what_the_memory_engine_writes(client, files, tmp_path):
    import json
    from dpcore.cli import main
    folder, whole = files
    whole.to_csv(tmp_path / "whole.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA.to_dict()))
    common = ["synth", "--schema", str(tmp_path / "schema.json"), "--mechanism", "mst",
              "--epsilon", "1", "--delta", "1e-9", "--seed", "3", "--quiet"]
    assert main(common + ["--data", str(tmp_path / "whole.csv"), "--out", str(tmp_path / "m.csv"),
                          "--ledger", str(tmp_path / "m.json")]) == 0
    assert main(common + ["--engine", "dask", "--scheduler", client.scheduler.address,
                          "--data", str(folder / "part*.csv"), "--out", str(tmp_path / "d.csv"),
                          "--ledger", str(tmp_path / "d.json")]) == 0
    assert (tmp_path / "m.csv").read_bytes() == (tmp_path / "d.csv").read_bytes()
    charges = [[(e.event, e.rho, e.what) for e in Ledger.load(tmp_path / f"{k}.json").charges]
               for k in "md"]
    assert charges[0] == charges[1]
    assert main(common + ["--engine", "dask", "--scheduler", client.scheduler.address,
                          "--data", str(folder / "part*.csv"), "--mechanism", "fem",
                          "--out", str(tmp_path / "f.csv"), "--ledger", str(tmp_path / "f.json")]
                ) == 2


# ------------------------------------------------------------------ session 14 audit
def test_no_record_is_counted_twice(client, files):
    # a repeated name, a link, the same table in two formats or a copy would add each of its
    # records two or more times against a charge for one
    from dpcore.distributed import expand_paths
    from dpcore.errors import InvalidArgumentError
    folder, _ = files
    part = folder / "part0.csv"
    with pytest.raises(InvalidArgumentError, match="same file"):
        expand_paths([str(part), os.path.join(str(folder), ".", "part0.csv")])
    (folder / "link.csv").symlink_to(part)
    with pytest.raises(InvalidArgumentError, match="same file"):
        expand_paths(str(folder))
    (folder / "link.csv").unlink()
    pd.read_csv(part, dtype=str).to_parquet(folder / "part0.parquet")
    with pytest.raises(InvalidArgumentError, match="both CSV and Parquet"):
        expand_paths(str(folder))
    (folder / "part0.parquet").unlink()
    (folder / "copy.csv").write_bytes(part.read_bytes())
    table = DistributedTable(str(folder), SCHEMA, client=client)
    with pytest.raises(InvalidArgumentError, match="same encoded values in the same order"):
        table.prefetch([("a",)])


def test_a_table_written_twice_is_refused_whatever_names_it(client, files):
    # audit 16 F1: only a directory was checked for two formats, and a copy only by its bytes:
    # a glob or a list of t.csv and t.parquet, t.parquet and t.pq, or a CRLF copy all counted
    # every record twice against a charge for once
    from dpcore.distributed import expand_paths
    from dpcore.errors import InvalidArgumentError
    folder, _ = files
    part = folder / "part0.csv"
    pd.read_csv(part, dtype=str).to_parquet(folder / "part0.parquet")
    for source in (str(folder / "part0.*"), [str(part), str(folder / "part0.parquet")]):
        with pytest.raises(InvalidArgumentError, match="both CSV and Parquet"):
            expand_paths(source)
    pq = folder / "pq"
    pq.mkdir()
    (folder / "part0.parquet").rename(pq / "t.parquet")
    (pq / "t.pq").write_bytes((pq / "t.parquet").read_bytes())
    with pytest.raises(InvalidArgumentError, match="differ only in their extension"):
        expand_paths(str(pq))
    with pytest.raises(InvalidArgumentError, match="same file"):
        expand_paths([str(part), str(part)])
    # a copy with other line endings (other bytes, the same records) is found by its codes
    (folder / "crlf.csv").write_bytes(part.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(InvalidArgumentError, match="same encoded values in the same order"):
        DistributedTable(str(folder / "*.csv"), SCHEMA, client=client).prefetch([("a",)])
    (folder / "crlf.csv").unlink()
    # as with a glob, a directory's hidden files are not read; a subdirectory named like an
    # extension is no data file
    (folder / ".part0.csv").write_bytes(part.read_bytes())
    (folder / "csv").mkdir()
    assert expand_paths(str(folder)) == expand_paths(str(folder / "*.csv"))
    # two equal partitions of a Dask DataFrame are refused the same way; empty ones (a
    # filtered frame's) hold no record to count twice
    frame = pd.read_csv(part, dtype=str)
    twice = dd.concat([dd.from_pandas(frame, npartitions=1)] * 2)
    with pytest.raises(InvalidArgumentError, match="'partition 0' and 'partition 1'"):
        DistributedTable(twice, SCHEMA, client=client).prefetch([("a",)])
    sparse = dd.from_pandas(frame, npartitions=5)
    sparse = sparse[sparse.a == "q"]                  # every partition empty
    DistributedTable(sparse, SCHEMA, client=client).prefetch([("a",)])
    # the extension rule is about .csv/.parquet/.pq, and names, not link targets
    other = folder / "other"
    other.mkdir()
    for name in ("t.csv.0", "t.csv.1", "x", "x.csv"):
        (other / name).write_text("a,b,c,d\n")
    assert len(expand_paths([str(p) for p in other.iterdir()])) == 4


def test_workers_return_failures_and_name_no_data(client, files):
    # audit 16 F2: a task that raises is logged by its worker with its arguments (distributed
    # before 2024.11 printed them: a partition's raw rows); the parts return failures instead,
    # raised on the driver: our typed error (naming the partition), or only a class name
    from dpcore.distributed import _file_part, _frame_part, _Failure
    bad = _frame(60, 4)
    bad.loc[30, "b"] = "SECRET-777"
    shape, subsets = list(SCHEMA.domain().shape), [[0]]
    failed = _frame_part(bad, SCHEMA, [0, 1, 2, 3], shape, subsets, 2)
    assert isinstance(failed, _Failure)
    with pytest.raises(EncodingError, match="partition 2, column 'b', row 31") as err:
        failed.raise_()
    assert "SECRET" not in str(err.value) and err.value.row == 31
    odd = _file_part(str(files[0] / "nope.csv"), SCHEMA, [0, 1, 2, 3], shape, subsets, ",")
    assert isinstance(odd, _Failure)
    frame = dd.from_pandas(bad, npartitions=3)
    with pytest.raises(EncodingError, match="partition 1, column 'b', row 11"):
        DistributedTable(frame, SCHEMA, client=client).prefetch([("a",)])
    broken = _frame_part(object(), SCHEMA, [0], shape, subsets, 0)
    with pytest.raises(ClusterError, match="withheld") as err:
        broken.raise_()
    assert "object" not in str(err.value)


def test_paths_are_literal_where_they_name_a_file_and_extensions_ignore_case(files):
    from dpcore.distributed import expand_paths
    folder, _ = files
    odd = folder / "run[1].csv"            # a glob would read part1-like names instead
    odd.write_text("a,b,c,d\nx,1,0,0.5\n")
    assert expand_paths(str(odd)) == [str(odd)]
    (folder / "part1.csv").rename(folder / "part1.CSV")
    assert len(expand_paths(str(folder))) == 4


def test_outputs_never_replace_the_files_fit_distributed_read(client, files):
    from dpcore.errors import InvalidArgumentError
    folder, _ = files
    synth = Synthesizer.create("mst", epsilon=1.0, progress=False).fit_distributed(
        str(folder / "*.csv"), SCHEMA, client=client)
    before = (folder / "part1.csv").read_bytes()
    with pytest.raises(InvalidArgumentError, match="fitted on"):
        synth.write(folder / "part1.csv", 10)
    assert (folder / "part1.csv").read_bytes() == before


def test_a_saved_synthesizer_keeps_no_timings(tmp_path):
    from mechanisms.synthesizer import Synthesizer as S
    synth = S.create("mst", epsilon=1.0, progress=False).fit(_frame(300, 1), SCHEMA)
    assert synth.result.timings                     # the data owner sees them
    synth.save(tmp_path / "model.pkl")
    loaded = S.load(tmp_path / "model.pkl")
    assert loaded.result.timings == {}
    assert all(r.seconds == 0.0 for r in loaded.result.rounds)


def test_the_local_cluster_listens_on_loopback_only():
    # audit 16 F3: the dashboard (unauthenticated: worker logs name the files, columns and
    # rows that failed) listened on every interface
    psutil = pytest.importorskip("psutil")
    from dpcore.distributed import close_client, local_client

    def listening():       # this process's and its children's (other tests' clusters too)
        me = psutil.Process()
        return {c.laddr for p in [me, *me.children(recursive=True)]
                for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    before = listening()
    client = local_client(1)
    try:
        new = listening() - before
        assert new and {address.ip for address in new} == {"127.0.0.1"}
        assert client.dashboard_link.startswith("http://127.0.0.1:")
    finally:
        close_client(client)
