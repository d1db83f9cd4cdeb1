#!/usr/bin/env bash
# Create bench/.venv-mbi: an isolated environment holding the reference Private-PGM (`mbi` on
# PyPI). This is the only place mbi is installed; dpcore never imports it. The benchmark runner
# (bench/run.py) and bench/inference.py run the scripts in bench/reference/ with this venv's
# python, in subprocesses, so the two implementations never share an interpreter.
#
# Usage: bench/setup_reference.sh [--force]
#   MBI_VERSION (default 2.0.0) pins the reference; PYTHON picks the base interpreter.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-mbi"
mbi_version="${MBI_VERSION:-2.0.0}"
python="${PYTHON:-python3}"

if [[ "${1:-}" == "--force" ]]; then
    rm -rf "$venv"
fi

# A venv cannot be moved after creation (its scripts embed absolute paths), so completeness is
# marked by a stamp file written last: an interrupted setup leaves no stamp and is redone.
stamp="$venv/.mbi-ready"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$mbi_version" ]]; then
    echo "reference venv ready: $venv (mbi $mbi_version)"
    exit 0
fi

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# pandas: mbi's Dataset.load and the reference scripts read CSVs through it.
"$venv/bin/python" -m pip install --quiet "mbi==$mbi_version" pandas
"$venv/bin/python" -W ignore -c "import mbi"
echo "$mbi_version" > "$stamp"
echo "reference venv ready: $venv (mbi $mbi_version)"
