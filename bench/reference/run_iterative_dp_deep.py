"""Run the authors' GEM or RAP-softmax (github.com/terranceliu/iterative-dp, gem.py / rap.py) on a
table of codes and save their released mixture, for bench/gem.py.

Runs in bench/work/venv-iterative-dp-deep (bench/reference/setup_iterative_dp_deep.sh) with the
checkout on sys.path; it imports their modules and calls their classes in the order their
``__main__`` blocks do, with their scripts' settings (scripts/adult/run_gem.sh: hidden
(1024, 1024) on a 512-dim z, lr 1e-4, T_max = 100, alpha = 0.67; run_rap_softmax.sh: --softmax,
lr 0.1, n' = 1000, their default K = 10). Nothing of theirs is edited; the differences:

* Data: dpcore's encoded Adult (the columns given, in the domain file's order), the whole table
  as the private data (their scripts draw a 90% split with --adult_seed); the workload is the
  list of 3-way marginals given (bench/gem.py draws it, so both sides get the same one).
* One thread: torch.set_num_threads(1); seeds: np.random.seed and torch.manual_seed (their
  scripts seed neither).
* rdt: their requirements pin rdt 0.4.0 for OneHotEncodingTransformer only, which is not
  installed; a stand-in below gives the same encoding for integer codes (one column per value,
  in sorted order, as pd.get_dummies; the reverse is the argmax). The runner checks that the
  encoding's blocks line up with their QueryManager's one-hot layout.
* Current torch: their QueryManager stores query indices in the smallest integer type (int16
  here), which current torch refuses as an index; the runner widens qm.queries to int64 before
  training (same values).
* Output: the released mixture as a matrix of per-component probabilities over the one-hot
  layout (one row per product distribution): GEM's generator applied to its fixed z (B rows;
  the paper's output, the EMA of the second half's weights, for beta 0.5, 0.9 and 0.99 as their
  evaluation tries, and the last iterate; their EMA runs from the oldest saved epoch to the
  newest, so a larger beta leans towards round T/2 + 1), RAP-softmax's relaxed dataset after
  the softmax (n' rows; its answers are the mixture's exact answers, as their evaluation
  computes them).
  For GEM it also saves the records their evaluation samples from the EMA-0.99 mixture
  (100000 // B draws per component), so a scorer can use either.
* Budget: their own conversions of (epsilon, delta = 1/n^2): util.get_eps0_zCDP for GEM,
  rap.get_rho for RAP.

Usage (inside the venv): run_iterative_dp_deep.py {gem,rap} CSV DOMAIN_JSON OUT.npz
--workload JSON --epsilon 1 --T 30 [--B 1000] [--K 10] [--seed 0]
Prints one JSON line: the CPU seconds of the fit alone and of the whole run so far.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import types

import numpy as np
import pandas as pd


class OneHotStandIn:
    """rdt 0.4.0's OneHotEncodingTransformer on integer codes: one column per distinct value in
    sorted order (pd.get_dummies' order); reverse_transform maps each row's argmax back."""

    def fit(self, data):
        self.dummies = np.sort(pd.unique(np.asarray(data).ravel()))

    def transform(self, data):
        data = np.asarray(data).ravel()
        return (data[:, None] == self.dummies[None, :]).astype(int)

    def reverse_transform(self, data):
        data = np.asarray(data)
        return pd.Series(self.dummies[np.argmax(data.reshape(len(data), -1), axis=1)])


def install_rdt_stand_in() -> None:
    rdt = types.ModuleType("rdt")
    transformers = types.ModuleType("rdt.transformers")
    transformers.OneHotEncodingTransformer = OneHotStandIn
    rdt.transformers = transformers
    sys.modules.setdefault("rdt", rdt)
    sys.modules.setdefault("rdt.transformers", transformers)


def run_gem(args, data, workload, out):
    import torch
    import gem as their_gem
    import Util.util_general as util
    from Util.qm import QueryManager
    from Util.util_gem import get_ema_weights

    manager = QueryManager(data.domain, workload)
    manager.queries = manager.queries.astype(np.int64)
    real_answers = manager.get_answer(data, concat=False)
    n = data.df.shape[0]
    eps0, _ = util.get_eps0_zCDP(args.epsilon, 1.0 / n ** 2, args.T, alpha=args.alpha)
    with tempfile.TemporaryDirectory() as save_dir:
        model = their_gem.GEM(embedding_dim=512, gen_dim=[1024, 1024], batch_size=args.B,
                              save_dir=save_dir + "/")
        model.setup_data(data.df, list(data.domain.attrs), data.domain, overrides=["transformer"])
        blocks = [size for size, kind in model.transformer.output_info]
        if blocks != list(data.domain.shape):
            raise RuntimeError(f"transformer blocks {blocks} != domain {data.domain.shape}")
        k_thresh = max(1, int(np.round(args.T * 0.5)))
        start = time.process_time()
        model.fit(T=args.T, eps0=eps0, sensitivity=1 / n, lr=1e-4, eta_min=None, qm=manager,
                  real_answers=np.concatenate(real_answers), max_iters=100, alpha=args.alpha,
                  save_num=k_thresh)
        fit_cpu = time.process_time() - start

        def probs():
            with torch.no_grad():   # their evaluation's forward pass (train mode, fixed z)
                return model.generate_fake_data(model.mean, model.std).numpy().astype(np.float64)

        arrays = {"last": probs()}
        for beta in (0.5, 0.9, 0.99):
            # Two statements, as their __main__: get_ema_weights loads the saved epochs into
            # ``model``, replacing model.generator, so the weights go into the new one.
            weights = get_ema_weights(model, args.T, k_thresh, beta, save_dir + "/")
            model.generator.load_state_dict(weights)
            arrays[f"ema_{beta}"] = probs()
        # The records their evaluation samples, from the generator now loaded (EMA 0.99).
        fake = model.generate_fake_data(model.mean, model.std).detach()
        rows = [model.get_onehot(fake).cpu() for _ in range(100000 // args.B)]
        records = model.transformer.inverse_transform(torch.cat(rows, dim=0), None)
        arrays["records_ema_0.99"] = records[list(data.domain.attrs)].to_numpy(np.int16)
    np.savez(out, **arrays)
    # Their own max error over the workload's cells after the last round (last iterate), for
    # bench/gem.py to check its scorer against.
    return {"fit_cpu": fit_cpu, "output": "ema_0.9",
            "their_max_error_last": model.true_max_errors[-1]}


def run_rap(args, data, workload, out):
    import rap as their_rap
    from Util.qm import QueryManager

    manager = QueryManager(data.domain, workload)
    manager.queries = manager.queries.astype(np.int64)
    real_answers = manager.get_answer(data, concat=False)
    n = data.df.shape[0]
    rho = their_rap.get_rho(args.epsilon, 1.0 / n ** 2)
    model = their_rap.RAP(d=manager.dim, n=1000, softmax=True)
    model.setup_domain(data.domain)
    start = time.process_time()
    model.fit(T=args.T, K=args.K, rho=rho, qm=manager, real_answers=np.concatenate(real_answers),
              sensitivity=1 / n, lr=0.1)
    fit_cpu = time.process_time() - start
    probs = model._get_probs(model.syndata.weight.T.detach()).numpy().astype(np.float64)
    np.savez(out, softmax=probs)
    return {"fit_cpu": fit_cpu, "output": "softmax",
            "their_max_error_last": model.true_max_error[-1]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("algo", choices=("gem", "rap"))
    parser.add_argument("csv")
    parser.add_argument("domain")
    parser.add_argument("out")
    parser.add_argument("--workload", required=True, help="JSON list of attribute triples")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--T", type=int, required=True)
    parser.add_argument("--B", type=int, default=1000)        # GEM's batch (syndata_size)
    parser.add_argument("--alpha", type=float, default=0.67)  # GEM (their run_gem.sh)
    parser.add_argument("--K", type=int, default=10)          # RAP's queries per round
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), "..", "work",
                                                       "iterative-dp"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.repo))
    install_rdt_stand_in()
    import torch
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    from mbi import Dataset, Domain   # their bundled copy of Private-PGM's data classes

    sizes = json.load(open(args.domain))
    attrs = list(sizes)
    data = Dataset(pd.read_csv(args.csv)[attrs], Domain(attrs, [sizes[a] for a in attrs]))
    workload = [tuple(clique) for clique in json.loads(args.workload)]
    runner = run_gem if args.algo == "gem" else run_rap
    report = runner(args, data, workload, args.out)
    report["cpu"] = time.process_time()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
