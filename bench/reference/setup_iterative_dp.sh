#!/usr/bin/env bash
# The authors' code for Adaptive Measurements (Liu, Vietri & Wu; github.com/terranceliu/iterative-dp)
# in its own venv, for bench/adaptive.py: bench/work/iterative-dp (a checkout at the pinned
# commit) and bench/work/venv-iterative-dp (numpy < 2: the code uses np.infty and np.float128;
# pandas, scipy, tqdm). Only MWEM (mwem.py) and PEP (pep.py) are run, which need neither torch
# nor gurobi. Nothing of theirs is copied into dpcore; bench/reference/run_iterative_dp.py drives
# their functions from outside, and the one behaviour change it makes is described there.
#
# Usage: bench/reference/setup_iterative_dp.sh [--force]
#   IDP_SOURCE: a git URL or local git directory to clone from (default: GitHub).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$here/work"
commit="5e10ec4"   # iterative-dp HEAD when the benchmark was written
source="${IDP_SOURCE:-https://github.com/terranceliu/iterative-dp.git}"
python="${PYTHON:-python3}"
if [[ "${1:-}" == "--force" ]]; then
    rm -rf "$work/iterative-dp" "$work/venv-iterative-dp"
fi
mkdir -p "$work"
if [[ ! -d "$work/iterative-dp" ]]; then
    # Only the code is needed (the benchmark feeds dpcore's copy of Adult): a checkout of the
    # code paths also works from a mirror that lacks the large data files.
    git clone --quiet --no-checkout "$source" "$work/iterative-dp"
    git -C "$work/iterative-dp" checkout --quiet "$commit" -- mwem.py pep.py Util mbi
fi
stamp="$work/venv-iterative-dp/.ready"
if [[ ! -f "$stamp" ]]; then
    rm -rf "$work/venv-iterative-dp"
    "$python" -m venv "$work/venv-iterative-dp"
    "$work/venv-iterative-dp/bin/python" -m pip install --quiet "numpy<2" pandas scipy tqdm networkx matplotlib
    touch "$stamp"
fi
echo "iterative-dp ready: $work/iterative-dp ($(git -C "$work/iterative-dp" rev-parse --short HEAD)), venv $work/venv-iterative-dp"
