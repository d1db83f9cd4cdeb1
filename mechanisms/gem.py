"""GEM and GEM-Pub (Liu, Vietri & Wu, Sec. 5-6, Algorithms 2-3, App. B) as an Adaptive
Measurements family (``mechanisms.adaptive``).

The family is a generator network G_theta: a fixed batch of B Gaussian vectors z_j (sampled once:
the paper's App. B.2 choice, used in all its experiments) is mapped to B product distributions,
one softmax per attribute, so the synthetic distribution is a ``ProductMixture`` of B components
and every marginal is an exact product query (eq. 5). The network is CTGAN-style, as the
authors' code: hidden layers Linear -> ReLU whose output is concatenated with the layer's input,
then a Linear layer to the one-hot width and a softmax per attribute (no batch normalisation:
with z fixed it only rescales).

GEM-UPDATE (Alg. 3) with the marginal trick and its squared loss (Table 6): the errors c of every
cell of every measured marginal are computed; while max |c| >= gamma and fewer than ``steps``
steps were taken, one Adam step on the mean of c^2 over the cells with |c| >= gamma. gamma is
half an exponential moving average (beta 0.5) of the max error at the start of each round (App.
B.2). The optimiser (Adam) restarts each round, as the authors' code. The released generator is an
exponential moving average of the parameters over the second half of the rounds (Alg. 2, App.
B.2; beta is not given in the paper; the authors' code tries 0.5, 0.9 and 0.99). Both rules are
options (``threshold=0.5``, ``ema=0.9``); the defaults train on every measured cell and release
the last iterate, which measured better on CPU budgets (the class docstring has the numbers).

GEM-Pub (Sec. 6): before the first round, the generator is trained on a public table's answers
to the whole workload (``public``); then GEM runs as above from it. The public table is public:
no budget.

The network's gradient needs automatic differentiation: JAX (``pip install "dpcore[deep]"``),
imported only when a GEM family is built. The loss and its gradient with respect to the mixture's
probability tables are numpy (``mechanisms.product_mixture``); JAX pulls that gradient back
through the network. Everything here post-processes noisy, public answers: no budget.
"""
from __future__ import annotations

import numbers

import numpy as np

from dpcore.errors import InvalidArgumentError

from .product_mixture import (Adam, ProductMixture, mixture_marginal, positive_int,
                              squared_loss)

__all__ = ["GEM", "require_jax"]


def require_jax():
    """The ``jax`` module, or an error naming the extra that installs it."""
    try:
        import jax
    except ImportError:
        raise InvalidArgumentError('GEM needs JAX: pip install "dpcore[deep]" (or '
                                   '"jax[cpu]")') from None
    return jax




def _unit(name, value, low_open=True):
    if not (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and (0 < float(value) if low_open else 0 <= float(value)) and float(value) < 1):
        raise InvalidArgumentError(f"{name} must be a number in {'(' if low_open else '['}0, 1), "
                                   f"got {value!r}")
    return float(value)


class _Network:
    """The generator's forward pass and its pullback, compiled once per shape by JAX. The
    parameters are a flat list of numpy arrays (weight, bias, weight, bias, ...), trained by the
    same Adam as RAP-softmax (``mechanisms.product_mixture.Adam``)."""

    def __init__(self, sizes):
        jax = require_jax()
        jnp = jax.numpy
        bounds = np.cumsum([0, *sizes])

        def forward(params, z):
            h = z
            for w, b in zip(params[0:-2:2], params[1:-2:2]):
                h = jnp.concatenate([jax.nn.relu(h @ w + b), h], axis=1)
            logits = h @ params[-2] + params[-1]
            return jnp.concatenate([jax.nn.softmax(logits[:, lo:hi], axis=1)
                                    for lo, hi in zip(bounds[:-1], bounds[1:])], axis=1)

        def pullback(params, z, d_probs):
            _, pull = jax.vjp(lambda p: forward(p, z), params)
            return pull(d_probs)[0]

        self.bounds = bounds
        self.forward = jax.jit(forward)
        self.pullback = jax.jit(pullback)

    def tables(self, params, z) -> list[np.ndarray]:
        """The B x |attribute| probability tables, float32 (ProductMixture widens them)."""
        probs = np.asarray(self.forward(params, z))
        return [probs[:, lo:hi] for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]

    def gradients(self, params, z, d_probs) -> list[np.ndarray]:
        """dL/dparams from dL/dprobs (B x the one-hot width)."""
        return [np.asarray(g) for g in self.pullback(params, z, d_probs.astype(np.float32))]


class GEM:
    """GEM: a generator of B = ``batch`` product distributions from a ``latent``-dimensional
    fixed z through ``hidden`` layers; at most ``steps`` Adam steps a round at
    ``learning_rate``, on the cells whose error is at least ``threshold`` times the EMA of the
    max error; ``ema`` the averaging of the second half's parameters (0: the last iterate).
    With ``public`` (a Dataset on the same domain) this is GEM-Pub: ``pretrain_steps`` steps on
    the public table's workload answers first.

    Defaults, measured on Adult (64 random 3-way marginals, eps = 1; bench/gem.py): the paper's
    rules (``threshold=0.5``, ``ema=0.9``, B = 1000, hidden (256, 512), lr 1e-3, T = 30 with one
    marginal a round) gave all-3-way error 0.66 at 74 CPU-s; training on every cell of the
    measured marginals, the last iterate, B = 250 and hidden (128, 256) gave 0.35 with the same
    T = 30 (17 CPU-s) and 0.33 with T = 5 rounds of 10 (11 CPU-s; the authors' code: 0.545 at
    68 CPU-s with B = 250). The paper's rules remain one option away."""

    def __init__(self, batch: int = 250, latent: int = 64, hidden=(128, 256),
                 steps: int = 30, learning_rate: float = 0.01, ema: float = 0.0,
                 threshold: float = 0.0, public=None, pretrain_steps: int = 300):
        self.batch = positive_int("batch", batch)
        self.latent = positive_int("latent", latent)
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
            raise InvalidArgumentError(f"hidden must be a sequence of layer widths, got {hidden!r}")
        self.hidden = tuple(positive_int("hidden width", h) for h in hidden)
        self.steps = positive_int("steps", steps)
        self.learning_rate = _unit("learning_rate", learning_rate)
        self.ema = _unit("ema", ema, low_open=False)
        self.threshold = _unit("threshold", threshold, low_open=False)
        self.pretrain_steps = positive_int("pretrain_steps", pretrain_steps)
        self.public = public
        self.name = "gem-pub" if public is not None else "gem"
        require_jax()     # refuse before anything runs when the extra is missing

    # ------------------------------------------------------------------ the family
    def largest_table(self, domain, cliques) -> int:
        """Cells of the largest array a fit holds: a weight matrix (inputs x a layer's width:
        each layer also sees the ones before, the residual concatenation) or the batch's
        activations or answers (B x the widest layer, or B x a marginal's cells). Public
        sizes, checked before any charge."""
        widths, largest = self.latent, 0
        for width in (*self.hidden, int(sum(domain.shape))):
            largest = max(largest, widths * width)
            widths += width
        return max(largest, self.batch * max(widths, *(domain.size(c) for c in cliques)))

    def init(self, domain, cliques, rounds, rng) -> dict:
        public = self.public
        if public is not None and (tuple(public.domain.attrs), tuple(public.domain.shape)) != (
                tuple(domain.attrs), tuple(domain.shape)):
            raise InvalidArgumentError("public data must be on the private data's domain (same "
                                       "columns and sizes)")
        net = _Network(domain.shape)
        widths, params = self.latent, []
        for width in (*self.hidden, int(sum(domain.shape))):
            bound = 1 / np.sqrt(widths)     # PyTorch's Linear initialisation
            params += [rng.uniform(-bound, bound, (widths, width)).astype(np.float32),
                       rng.uniform(-bound, bound, width).astype(np.float32)]
            widths += width
        z = rng.standard_normal((self.batch, self.latent)).astype(np.float32)
        state = {"net": net, "params": params, "z": z, "round": 0, "rounds": rounds,
                 "error": None, "average": None}
        if self.public is not None:
            targets = [(self._axes(domain, c), self._public_marginal(domain, c))
                       for c in cliques]
            state["params"] = self._train(state, targets, self.pretrain_steps, 0.0)
        return state

    def answers(self, state, domain, cliques) -> list[np.ndarray]:
        tables = state["net"].tables(state["params"], state["z"])
        return [mixture_marginal(tables, self._axes(domain, c)).ravel() for c in cliques]

    def update(self, state, domain, targets, new, rng) -> dict:
        measured = [(self._axes(domain, c), t) for c, t in targets.items()]
        tables = state["net"].tables(state["params"], state["z"])
        _, _, worst, _ = squared_loss(tables, measured)
        error = worst if state["error"] is None else 0.5 * state["error"] + 0.5 * worst
        params = self._train(state, measured, self.steps, self.threshold * error)
        state = {**state, "params": params, "error": error, "round": state["round"] + 1}
        if state["round"] > state["rounds"] // 2:          # EMA over the second half
            avg = state["average"]
            state["average"] = [p.copy() for p in params] if avg is None else [
                self.ema * a + (1 - self.ema) * p for a, p in zip(avg, params)]
        return state

    def output(self, state, domain, total) -> ProductMixture:
        params = state["average"] if state["average"] is not None else state["params"]
        return ProductMixture(domain, state["net"].tables(params, state["z"]), total)

    # ------------------------------------------------------------------ helpers
    def _train(self, state, measured, steps, threshold):
        """Alg. 3's loop: Adam steps on the mean squared error of the cells at or above
        ``threshold``, until none is or ``steps`` were taken."""
        net, z = state["net"], state["z"]
        params = [p.copy() for p in state["params"]]
        adam = Adam(params, self.learning_rate)      # restarted each round, as the authors' code
        for _ in range(steps):
            tables = net.tables(params, z)
            _, grads, worst, kept = squared_loss(tables, measured, threshold)
            if kept == 0 or worst < threshold:
                break
            adam.step(params, net.gradients(params, z, np.concatenate(grads, axis=1) / kept))
        return params

    @staticmethod
    def _axes(domain, clique) -> list[int]:
        return sorted(domain.attrs.index(a) for a in clique)

    def _public_marginal(self, domain, clique) -> np.ndarray:
        axes = self._axes(domain, clique)
        shape = tuple(domain.shape[i] for i in axes)
        codes = np.asarray(self.public.records)[:, axes]
        flat = np.ravel_multi_index(codes.T, shape) if len(codes) else np.zeros(0, np.int64)
        counts = np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64)
        return (counts / max(1, len(codes))).reshape(shape)
