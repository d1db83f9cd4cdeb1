#!/usr/bin/env bash
# The authors' GEM and RAP-softmax (github.com/terranceliu/iterative-dp, gem.py / rap.py) for
# bench/gem.py, in a venv of their own: bench/work/venv-iterative-dp-deep with PyTorch CPU
# (torch==2.13.0+cpu; their requirements say torch 1.6, which has no wheel for this Python),
# numpy < 2 (the code uses np.infty and np.float128), pandas, scipy, scikit-learn (imported by
# their data transformer), tqdm, matplotlib. PyTorch goes into THIS venv only, never into
# dpcore's environment or dependencies.
#
# Their requirements also pin rdt==0.4.0 for one class (OneHotEncodingTransformer), which is not
# installed: bench/reference/run_iterative_dp_deep.py puts a stand-in for it on the import path
# (the notes there say what it does). Nothing of theirs is edited or copied into dpcore.
#
# The checkout is the one bench/reference/setup_iterative_dp.sh makes (bench/work/iterative-dp,
# same pinned commit); this script adds gem.py and rap.py to it, so both scripts can run in
# either order.
#
# Usage: bench/reference/setup_iterative_dp_deep.sh [--force]
#   IDP_SOURCE: a git URL or local git directory to clone from (default: GitHub).
#   TORCH_SPEC: the torch requirement (default torch==2.13.0+cpu; pip's find-links or an index
#               must offer it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$here/work"
commit="5e10ec4"   # iterative-dp HEAD when the benchmark was written (as setup_iterative_dp.sh)
source="${IDP_SOURCE:-https://github.com/terranceliu/iterative-dp.git}"
python="${PYTHON:-python3}"
torch_spec="${TORCH_SPEC:-torch==2.13.0+cpu}"
venv="$work/venv-iterative-dp-deep"
if [[ "${1:-}" == "--force" ]]; then
    rm -rf "$venv"
fi
mkdir -p "$work"
if [[ ! -d "$work/iterative-dp" ]]; then
    git clone --quiet --no-checkout "$source" "$work/iterative-dp"
fi
# Only the code paths (the benchmark feeds dpcore's copy of Adult); idempotent.
git -C "$work/iterative-dp" checkout --quiet "$commit" -- mwem.py pep.py gem.py rap.py Util mbi
stamp="$venv/.ready"
if [[ ! -f "$stamp" ]]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "numpy<2" pandas scipy scikit-learn tqdm matplotlib \
        "$torch_spec"
    touch "$stamp"
fi
"$venv/bin/python" -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__)"
echo "iterative-dp (deep) ready: $work/iterative-dp ($(git -C "$work/iterative-dp" rev-parse --short HEAD)), venv $venv"
