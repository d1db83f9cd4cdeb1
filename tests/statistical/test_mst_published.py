"""The public MST is the paper's MST: the CLI runs it with NIST-MST's domain compression (Alg. 4),
the configuration of the README's benchmark row (adult-pgm, all 3-way marginals, eps = 1,
workload error 0.227 with Private-PGM's encoding). Without compression the CLI gave 0.255-0.263."""
import json
from pathlib import Path

import pytest

from dpcore.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "adult-pgm"
BENCHMARK_ROW = 0.227   # README, "Mechanisms" table: adult-pgm, MST, eps = 1


@pytest.mark.slow
def test_cli_mst_matches_the_benchmark_row(tmp_path, capsys):
    errors = []
    for seed in (0, 1):
        out, ledger = tmp_path / f"s{seed}.csv", tmp_path / f"l{seed}.json"
        assert main(["synth", "--data", str(DATA / "adult-pgm.csv"),
                     "--schema", str(DATA / "adult-pgm-domain.json"), "--mechanism", "mst",
                     "--epsilon", "1", "--delta", "1e-9", "--seed", str(seed), "--quiet",
                     "--out", str(out), "--ledger", str(ledger)]) == 0
        capsys.readouterr()
        assert main(["evaluate", "--real", str(DATA / "adult-pgm.csv"), "--synth", str(out),
                     "--schema", str(DATA / "adult-pgm-domain.json"), "--workload", "all-3way",
                     "--json"]) == 0
        errors.append(json.loads(capsys.readouterr().out)["workload_error"])
    mean = sum(errors) / len(errors)
    assert abs(mean - BENCHMARK_ROW) <= 0.01, errors
