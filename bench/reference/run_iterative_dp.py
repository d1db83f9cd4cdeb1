"""Run the authors' MWEM or PEP (github.com/terranceliu/iterative-dp, mwem.py / pep.py) on a
table of codes and save their final histogram, for bench/adaptive.py.

Runs in bench/work/venv-iterative-dp (bench/reference/setup_iterative_dp.sh) with the
checkout on sys.path; it imports their modules and calls their functions, as their own
``__main__`` blocks do, with these differences (nothing of theirs is edited):

* Data: dpcore's encoded Adult (the columns given), the whole table as the private data
  (their scripts draw a 90% split with --adult_seed); the workload is every 3-way marginal of
  those columns (their randomKway with --workload 35 on 7 columns is the same set).
* Output: the last iterate (their reported ``max_error_last``), saved as a .npy over the domain
  in C order of the given columns, so bench/adaptive.py scores both sides with one metric.
* Budget: their own code converts (epsilon, 1/n^2) with their cdp_rho; we pass epsilon only.

Usage (inside the venv): run_iterative_dp.py ALGO CSV DOMAIN_JSON OUT.npy --attrs a b c
--epsilon 1 --T 50 [--iters 25] [--seed 0]
"""
import argparse
import itertools
import json
import os
import sys
import tempfile

import numpy as np
import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("algo", choices=("mwem", "pep"))
    parser.add_argument("csv")
    parser.add_argument("domain")
    parser.add_argument("out")
    parser.add_argument("--attrs", nargs="+", required=True)
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--T", type=int, required=True)
    parser.add_argument("--iters", type=int, default=25)   # PEP's T_max (their run_pep.sh)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", "work",
                                                       "iterative-dp"))
    args = parser.parse_args()
    repo = os.path.abspath(args.repo)
    sys.path.insert(0, repo)
    from mbi import Dataset, Domain   # their bundled copy of Private-PGM's data classes

    sizes = json.load(open(args.domain))
    frame = pd.read_csv(args.csv)[args.attrs]
    data = Dataset(frame, Domain(args.attrs, [sizes[a] for a in args.attrs]))
    workloads = list(itertools.combinations(args.attrs, 3))
    np.random.seed(args.seed)
    if args.algo == "pep":
        import pep
        marginals = pep.MyMarginals(data.domain, workloads)
        algorithm = pep.PEP(data_domain=data.domain, my_marginals=marginals, max_iters=args.iters)
        weights = algorithm.generate(data, args.T, args.epsilon)
    else:
        import mwem
        from Util.cdp2adp import cdp_rho
        from Util.data_pub_sampling import get_support
        from Util.qm import QueryManager
        n = data.df.shape[0]
        rho = cdp_rho(args.epsilon, 1.0 / n ** 2)
        eps0 = (2 * rho) ** 0.5 / (2 * args.T) ** 0.5   # as mwem.py's __main__
        manager = QueryManager(data.domain, workloads)
        support, start = get_support(data)
        answers = np.concatenate(manager.get_answer(data, concat=False))
        with tempfile.TemporaryDirectory() as scratch:
            manager.setup_query_attr(save_dir=scratch + "/")
            manager.setup_xy(support, save_dir=scratch + "/")
            _, weights, _ = mwem.generate(support, answers, start, manager, n, args.T, eps0)
    np.save(args.out, np.asarray(weights, dtype=np.float64))


if __name__ == "__main__":
    main()
