"""Synthetic output on a Dask cluster (issue 21): the workers' partitions hold, part after
part, the rows of the single-machine writer for the same seed; the write is atomic."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

import dpcore.junction_tree as junction_tree  # noqa: E402
import mechanisms.partitioned as partitioned  # noqa: E402
from dpcore.datasets import adult  # noqa: E402
from mechanisms import Synthesizer  # noqa: E402

BLOCK = 256     # the sampling block, made small so that a test sample has many blocks


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client   # threads: the workers see this process's patched state (conftest)


@pytest.fixture(scope="module")
def fitted():
    df, schema = adult()
    return {name: Synthesizer.create(name, epsilon=1.0, seed=3, progress=False).fit(
        df.iloc[:3000], schema) for name in ("mst", "independent")}


@pytest.fixture
def small_block(monkeypatch):
    monkeypatch.setattr(junction_tree, "SAMPLE_BLOCK", BLOCK)


def _csv_rows(paths) -> bytes:
    """The parts' bytes as one CSV: the first part's header, every part's rows."""
    out = []
    for k, p in enumerate(paths):
        text = p.read_bytes()
        out.append(text if k == 0 else text[text.index(b"\n") + 1:])
    return b"".join(out)


@pytest.mark.parametrize("name", ["mst", "independent"])
@pytest.mark.parametrize("partition_rows", [BLOCK, 3 * BLOCK])
def test_csv_parts_hold_the_single_machine_rows(tmp_path, client, fitted, small_block, name,
                                                partition_rows):
    synth = fitted[name]
    if name == "mst":   # the compression map is undone block by block: test that path too
        assert synth.result.extras.get("compression")
    n = 5 * BLOCK + 77
    synth.write(tmp_path / "one.csv", n, seed=9)
    rows = synth.write_partitioned(tmp_path / "parts", n, seed=9, client=client,
                                   partition_rows=partition_rows)
    assert rows == n
    parts = sorted((tmp_path / "parts").iterdir())
    assert [p.name for p in parts] == [f"part-{k:05d}.csv"
                                       for k in range(-(-n // partition_rows))]
    assert _csv_rows(parts) == (tmp_path / "one.csv").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.csv", "parts"]  # no temp dir


def test_parquet_parts_read_back_as_sample(tmp_path, client, fitted, small_block):
    pytest.importorskip("pyarrow")
    synth = fitted["mst"]
    n = 3 * BLOCK + 5
    synth.write_partitioned(tmp_path / "pq", n, seed=4, client=client, partition_rows=BLOCK,
                            format="parquet")
    parts = sorted((tmp_path / "pq").glob("part-*.parquet"))
    assert len(parts) == 4
    import pyarrow.parquet as pq
    schemas = [pq.read_schema(p) for p in parts]   # one schema, metadata included
    assert all(s.equals(schemas[0], check_metadata=True) for s in schemas)
    got = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    synth.sample(n, seed=4).to_parquet(tmp_path / "whole.parquet", index=False)
    pd.testing.assert_frame_equal(got, pd.read_parquet(tmp_path / "whole.parquet"),
                                  check_dtype=False)   # a part without a missing value: int64


def test_blocks_are_independent_streams(fitted, small_block):
    """Block i >= 1 has its own seed: its rows are not block 0's rows again."""
    synth = fitted["independent"]
    codes = synth.sample_codes(2 * BLOCK, seed=1)
    assert not np.array_equal(codes[:BLOCK], codes[BLOCK:])
    np.testing.assert_array_equal(codes[:BLOCK], synth.sample_codes(BLOCK, seed=1))


def test_bad_requests_write_nothing(tmp_path, client, fitted, small_block, monkeypatch):
    synth = fitted["mst"]
    with pytest.raises(ValueError, match="multiple of the sampling block"):
        synth.write_partitioned(tmp_path / "a", 1000, client=client, partition_rows=BLOCK + 1)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    with pytest.raises(ValueError, match="not an empty directory"):
        synth.write_partitioned(tmp_path / "full", 1000, client=client, partition_rows=BLOCK)
    assert (tmp_path / "full" / "x").read_text() == "keep"
    with pytest.raises(ValueError, match="format must be"):
        synth.write_partitioned(tmp_path / "b", 1000, client=client, partition_rows=BLOCK,
                                format="xlsx")
    with pytest.raises(ValueError, match="multiple of the sampling block"):   # not the default
        synth.write_partitioned(tmp_path / "b", 1000, client=client, partition_rows=0)
    for seed in (-1, 2 ** 64, "7", 1.5, True):
        with pytest.raises((TypeError, ValueError), match="seed must be"):
            synth.write_partitioned(tmp_path / "b", 1000, seed=seed, client=client,
                                    partition_rows=BLOCK)

    real = partitioned._write_part

    def failing(sampler, start, rows, path, *args):
        if start >= 2 * BLOCK:
            raise OSError("disk full")
        return real(sampler, start, rows, path, *args)

    monkeypatch.setattr(partitioned, "_write_part", failing)
    with pytest.raises(OSError, match="disk full"):
        synth.write_partitioned(tmp_path / "c", 5 * BLOCK, seed=1, client=client,
                                partition_rows=BLOCK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]   # no target, no temp dir


def test_a_part_sampler_travels_by_pickle(fitted, small_block):
    """What a worker receives (a pickled PartSampler) draws the driver's rows."""
    import pickle
    sampler = fitted["mst"]._part_sampler(3 * BLOCK + 5, 11)
    copy = pickle.loads(pickle.dumps(sampler))
    for start, rows in ((0, BLOCK), (2 * BLOCK, BLOCK + 5)):
        for a, b in zip(sampler.frames(start, rows, 100), copy.frames(start, rows, 100)):
            pd.testing.assert_frame_equal(a, b)


def test_only_block_samplers_write_partitions(tmp_path, client):
    """DQRS samples from its own model, not block by block: refused, nothing written."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(3, size=300), "b": rng.integers(2, size=300)})
    synth = Synthesizer.create("dqrs", epsilon=1.0, delta=1e-6, seed=1, progress=False,
                               workload="all-1way", samples=10, rounds=5)
    synth.fit(frame, schema={"a": 3, "b": 2})
    with pytest.raises(ValueError, match="cannot write partitions"):
        synth.write_partitioned(tmp_path / "x", 100, client=client)
    assert list(tmp_path.iterdir()) == []


def test_cli_out_dir_writes_the_parts_on_the_cluster(tmp_path, client, small_block, capsys):
    """dpcore synth --engine dask --out DIR/: the parts hold what --out FILE --rows N writes
    from the same fit (the same seed fixes the model and the sample seed), and the ledger's
    output digest covers the parts."""
    import json

    from dpcore.accounting import Ledger
    from dpcore.cli import main
    df, schema = adult()
    (tmp_path / "parts").mkdir()
    for k in range(2):
        df.iloc[k * 500:(k + 1) * 500].to_csv(tmp_path / "parts" / f"p{k}.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(schema.to_dict()))
    common = ["synth", "--engine", "dask", "--scheduler", client.scheduler.address,
              "--data", str(tmp_path / "parts"), "--schema", str(tmp_path / "schema.json"),
              "--mechanism", "mst", "--epsilon", "1", "--delta", "1e-9", "--seed", "3",
              "--quiet", "--rows", str(3 * BLOCK + 9)]
    assert main(common + ["--out", str(tmp_path / "one.csv"), "--ledger",
                          str(tmp_path / "l1.json")]) == 0
    assert main(common + ["--out", str(tmp_path / "out") + "/", "--ledger",
                          str(tmp_path / "l2.json")]) == 0
    parts = sorted((tmp_path / "out").iterdir())
    assert len(parts) == 1                        # 4 blocks a partition by default
    # the ledger's closing entry commits to the parts: their names and SHA-256s
    import hashlib
    close = Ledger.load(tmp_path / "l2.json").entries[-1].what
    digest = hashlib.sha256("\n".join(
        f"{p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}" for p in parts).encode())
    assert close["status"] == "completed"
    assert close["outputs"] == {str(tmp_path / "out") + "/": digest.hexdigest()}
    # --out FILE writes the fit's own table, --out DIR/ a new sample (the next sample seed of
    # the fixed --seed): the same seed gives the same parts again
    assert main(common + ["--out", str(tmp_path / "again") + "/", "--ledger",
                          str(tmp_path / "l3.json")]) == 0
    assert _csv_rows(sorted((tmp_path / "again").iterdir())) == _csv_rows(parts)
    assert main(common + ["--out", str(tmp_path / "again") + "/", "--ledger",
                          str(tmp_path / "l4.json")]) == 2      # not an empty directory
    assert main([a for a in common if a not in ("--engine", "dask", "--scheduler",
                                                client.scheduler.address)]
                + ["--out", str(tmp_path / "mem") + "/", "--ledger",
                   str(tmp_path / "l5.json")]) == 2              # needs --engine dask
    # refused before any charge: a ledger inside the directory, a schema with rules
    assert main(common + ["--out", str(tmp_path / "fresh") + "/", "--ledger",
                          str(tmp_path / "fresh" / "l6.json")]) == 2
    ruled = dict(schema.to_dict(), constraints=[
        {"type": "forbidden", "name": "rich-kids", "when": {"age": {"range": [0, 16]},
                                                            "income": {"in": [">50K"]}}}])
    (tmp_path / "ruled.json").write_text(json.dumps(ruled))
    assert main([a if a != str(tmp_path / "schema.json") else str(tmp_path / "ruled.json")
                 for a in common] + ["--out", str(tmp_path / "ruled") + "/", "--ledger",
                                     str(tmp_path / "l7.json")]) == 2
    assert "cannot hold a schema with rules" in capsys.readouterr().err
    assert not (tmp_path / "fresh").exists() and not (tmp_path / "ruled").exists()
    assert not (tmp_path / "l7.json").exists()


def test_a_killed_writer_leaves_no_partial_file_in_the_published_directory(
        tmp_path, client, fitted, small_block, monkeypatch):
    # audit 16 F8: a worker killed while writing a part leaves its temporary file (Dask then
    # writes the part again); it was published with the parts and covered by the digest
    real = partitioned._write_part

    def killed_once(sampler, start, rows, path, *args):
        if start == BLOCK:              # what a killed first attempt leaves behind
            folder, name = os.path.split(path)
            open(os.path.join(folder, f".{name}.x1y2.tmp"), "wb").close()
        return real(sampler, start, rows, path, *args)

    monkeypatch.setattr(partitioned, "_write_part", killed_once)
    fitted["mst"].write_partitioned(tmp_path / "out", 3 * BLOCK, seed=1, client=client,
                                    partition_rows=BLOCK)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "part-00000.csv", "part-00001.csv", "part-00002.csv"]


def test_workers_that_cannot_write_the_parts_are_found_before_any_charge(
        tmp_path, client, small_block, monkeypatch):
    # audit 16 F5: a cluster whose workers do not see the driver's output directory spent the
    # whole budget, then failed every part
    import json

    from dpcore.cli import main
    partitioned.check_workers_can_write(client, tmp_path / "out")     # this one they can
    assert list(tmp_path.iterdir()) == []                              # the probe is gone
    # a worker with its own directory at the driver's path does not find the driver's token
    real = partitioned._can_write
    monkeypatch.setattr(partitioned, "_can_write", lambda probe, token: real(probe, "other"))
    with pytest.raises(ValueError, match="sees another directory"):
        partitioned.check_workers_can_write(client, tmp_path / "out")
    monkeypatch.undo()
    monkeypatch.setattr(junction_tree, "SAMPLE_BLOCK", BLOCK)
    df, schema = adult()
    df.iloc[:500].to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(schema.to_dict()))
    monkeypatch.setattr(partitioned, "_can_write", lambda probe, token: "Permission denied")
    assert main(["synth", "--engine", "dask", "--scheduler", client.scheduler.address,
                 "--data", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "schema.json"),
                 "--mechanism", "mst", "--epsilon", "1", "--delta", "1e-9", "--quiet",
                 "--out", str(tmp_path / "out") + "/", "--ledger",
                 str(tmp_path / "l.json")]) == 2
    assert not (tmp_path / "l.json").exists() and not (tmp_path / "out").exists()
