#!/usr/bin/env bash
# The authors' FEM code (Vietri et al. 2020; github.com/giusevtr/fem) in its own venv, for the
# side-by-side row of bench/results/fem.md: bench/work/fem (a checkout at the pinned commit) and
# bench/work/venv-fem (numpy < 2: the code uses np.float128; pandas, scipy, tqdm). No gurobipy:
# bench/reference/run_fem_highs.py swaps their Gurobi oracle for scipy.optimize.milp (HiGHS)
# from outside. Nothing of theirs is copied into dpcore.
#
# Usage: bench/reference/setup_fem.sh [--force]
#   FEM_SOURCE: a git URL or local git directory to clone from (default: GitHub).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$here/work"
commit="f538f61"   # giusevtr/fem HEAD when the benchmark was written
source="${FEM_SOURCE:-https://github.com/giusevtr/fem.git}"
python="${PYTHON:-python3}"
if [[ "${1:-}" == "--force" ]]; then
    rm -rf "$work/fem" "$work/venv-fem"
fi
mkdir -p "$work"
if [[ ! -d "$work/fem" ]]; then
    # Only the code is needed (the runner feeds dpcore's copy of Adult).
    git clone --quiet --no-checkout "$source" "$work/fem"
    git -C "$work/fem" checkout --quiet "$commit" -- fem.py Util datasets/dataset.py datasets/domain.py
fi
stamp="$work/venv-fem/.ready"
if [[ ! -f "$stamp" ]]; then
    rm -rf "$work/venv-fem"
    "$python" -m venv "$work/venv-fem"
    "$work/venv-fem/bin/python" -m pip install --quiet "numpy<2" pandas scipy tqdm
    touch "$stamp"
fi
echo "fem ready: $work/fem ($(git -C "$work/fem" rev-parse --short HEAD)), venv $work/venv-fem"
