"""Every runnable block of the README and docs/*.md runs verbatim from the repository root.

A block is runnable when the line before its fence is ``<!-- run -->`` (the README's install and
test blocks are marked for CI instead and run by ``.ci/run``). Python blocks are fed to
``python -`` (so the repository root is first on sys.path, as for a newcomer's script there),
bash blocks to ``bash -euo pipefail``; each must exit 0. Files a block writes go to a scratch
copy of nothing: blocks must write only under ``runs/`` or a temp dir (checked below).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^<!-- run -->\n```(bash|python)\n(.*?)^```", re.S | re.M)


def blocks():
    out = []
    for doc in DOCS:
        for i, m in enumerate(_BLOCK.finditer(doc.read_text(encoding="utf-8"))):
            out.append(pytest.param(m.group(1), m.group(2), id=f"{doc.name}-{i}"))
    return out


def test_the_readme_has_runnable_blocks():
    assert any(p.id.startswith("README") for p in blocks())


@pytest.fixture
def env(tmp_path):
    """The environment a newcomer has after `pip install .`: a `dpcore` command on PATH (here a
    shim when the package is only built in place, as in development)."""
    env = dict(os.environ)
    if shutil.which("dpcore") is None:
        shim = tmp_path / "bin" / "dpcore"
        shim.parent.mkdir()
        shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m dpcore.cli \"$@\"\n")
        shim.chmod(0o755)
        env["PATH"] = f"{shim.parent}{os.pathsep}{env['PATH']}"
    return env


@pytest.mark.slow
@pytest.mark.parametrize("language, code", blocks())
def test_block_runs_verbatim(language, code, env):
    before = {p.name for p in ROOT.iterdir()}
    runs = ROOT / "runs"
    had_runs = {p.name for p in runs.iterdir()} if runs.is_dir() else set()
    command = [sys.executable, "-"] if language == "python" else ["bash", "-euo", "pipefail"]
    try:
        done = subprocess.run(command, input=code, cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (f"{language} block failed:\n{code}\n--- stderr ---\n"
                                      f"{done.stderr[-3000:]}")
        assert {p.name for p in ROOT.iterdir()} <= before | {"runs"}, "a block left files in the root"
        # what a newcomer sees: no warning (audit 17: tqdm's "clamping frac" from AIM's bar)
        assert "Warning" not in done.stderr, done.stderr[-3000:]
    finally:   # the blocks' own run folders are the test's debris, not the user's
        if runs.is_dir():
            for p in runs.iterdir():
                if p.name not in had_runs:
                    shutil.rmtree(p)
            if not had_runs and not any(runs.iterdir()):
                runs.rmdir()


_JSON = re.compile(r"^```json\n(.*?)^```", re.S | re.M)


def test_every_schema_shown_in_the_docs_is_valid():
    # a schema example that the loader refuses misleads whoever copies it
    import json

    from dpcore.schema import Schema
    shown = [json.loads(m.group(1)) for doc in DOCS
             for m in _JSON.finditer(doc.read_text(encoding="utf-8"))
             if '"dpcore-schema"' in m.group(1)]
    assert shown
    for spec in shown:
        Schema.from_dict(spec)
