"""RAP-softmax and GEM / GEM-Pub on the Adaptive Measurements loop (issue 18): their answers are
the exact marginals of what they release, their updates fit the measurements, and a missing
extra, a mismatched public table or bad options are refused before any charge."""
from __future__ import annotations

import itertools
import sys

import numpy as np
import pandas as pd
import pytest

from dpcore import Domain
from dpcore.errors import InvalidArgumentError
from mechanisms.gem import GEM
from mechanisms.product_mixture import squared_loss
from mechanisms.rap import RAPSoftmax
from mechanisms.synthesizer import Synthesizer

DOMAIN = Domain(("a", "b", "c"), (3, 2, 4))
CLIQUES = [("a", "b"), ("b", "c"), ("a", "c")]


def brute(model, clique):
    axes = [DOMAIN.attrs.index(x) for x in clique]
    out = np.zeros([DOMAIN.shape[i] for i in axes])
    for cell in itertools.product(*(range(DOMAIN.shape[i]) for i in axes)):
        out[cell] = np.mean(np.prod([model.tables[i][:, v] for i, v in zip(axes, cell)], axis=0))
    return out


def targets(seed):
    rng = np.random.default_rng(seed)
    return {c: rng.dirichlet(np.ones(DOMAIN.size(c))).reshape(DOMAIN.project(c).shape)
            for c in CLIQUES}


@pytest.mark.parametrize("family", [RAPSoftmax(rows=5, steps=4),
                                    GEM(batch=6, latent=3, hidden=(5,), steps=4)])
def test_answers_are_the_released_mixtures_exact_marginals(family):
    rng = np.random.default_rng(0)
    state = family.init(DOMAIN, CLIQUES, 2, rng)
    state = family.update(state, DOMAIN, targets(1), CLIQUES[:1], rng)
    model = family.output(state, DOMAIN, total=10.0)
    for clique, answer in zip(CLIQUES, family.answers(state, DOMAIN, CLIQUES)):
        np.testing.assert_allclose(answer, brute(model, clique).ravel(), atol=1e-6)


@pytest.mark.parametrize("family", [RAPSoftmax(rows=20, steps=40),
                                    GEM(batch=20, latent=4, hidden=(16,), steps=40)])
def test_an_update_lowers_the_squared_loss(family):
    rng = np.random.default_rng(2)
    goal = targets(3)
    state = family.init(DOMAIN, CLIQUES, 1, rng)
    measured = [([DOMAIN.attrs.index(x) for x in c], t) for c, t in goal.items()]

    def loss(s):
        return squared_loss(family.output(s, DOMAIN, 1.0).tables, measured)[0]

    before = loss(state)
    after = loss(family.update(state, DOMAIN, goal, CLIQUES, rng))
    assert after < 0.5 * before


def frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.choice(["u", "v"], n), "y": rng.choice(["p", "q", "r"], n),
                         "z": rng.choice(["s", "t"], n)})


SCHEMA = {"columns": {"x": {"type": "categorical", "categories": ["u", "v"]},
                      "y": {"type": "categorical", "categories": ["p", "q", "r"]},
                      "z": {"type": "categorical", "categories": ["s", "t"]}}}
SMALL_GEM = {"batch": 16, "latent": 4, "hidden": (16,), "steps": 5, "pretrain_steps": 5}


@pytest.mark.parametrize("name, options", [
    ("rap-softmax", {"rows": 16, "steps": 5}), ("gem", SMALL_GEM), ("gem-pub", SMALL_GEM)])
def test_synthesizers_by_name_fit_sample_verify(name, options, tmp_path):
    extra = {"public": frame(100, seed=9)} if name == "gem-pub" else {}
    synth = Synthesizer.create(name, epsilon=1.0, seed=1, workload="all-2way", rounds=2,
                               per_round=2, options=options,
                               ledger_path=tmp_path / "ledger.json", **extra).fit(frame(), SCHEMA)
    assert synth.verify(allow_fixed_seed=True).ok and synth.ledger.spent == synth.ledger.budget
    assert len(synth.result.rounds) == 4
    sample = synth.sample(40)
    assert list(sample.columns) == ["x", "y", "z"] and len(sample) == 40


@pytest.mark.parametrize("name, kwargs, message", [
    ("gem-pub", {"public": frame().drop(columns="z")}, "lacks column"),
    ("gem-pub", {"public": frame().assign(y="w")}, "public data"),
    ("gem-pub", {"public": "public.csv"}, "DataFrame"),
    ("gem", {"options": {"batch": 0}}, "batch"),
    ("gem", {"options": {"wings": 2}}, "options for gem"),
    ("rap-softmax", {"options": {"learning_rate": -1}}, "learning_rate"),
    ("rap-softmax", {"per_round": 99}, "per_round"),
    # sizes beyond memory are refused from the options, not by the allocator mid-run
    ("rap-softmax", {"options": {"rows": 10 ** 9}}, "rap-softmax with these options .* cap"),
    ("gem", {"options": {"batch": 10 ** 9}}, "gem with these options .* cap"),
    ("gem", {"options": {"hidden": (10 ** 5, 10 ** 5)}}, "gem with these options .* cap"),
])
def test_bad_settings_are_refused_before_any_charge(name, kwargs, message, tmp_path):
    path = tmp_path / "ledger.json"
    with pytest.raises(InvalidArgumentError, match=message):
        Synthesizer.create(name, epsilon=1.0, seed=1, workload="all-2way", ledger_path=path,
                           **kwargs).fit(frame(), SCHEMA)
    assert not path.exists()


def test_a_missing_deep_extra_is_named_before_any_charge(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "jax", None)      # import jax now raises ImportError
    path = tmp_path / "ledger.json"
    with pytest.raises(InvalidArgumentError, match=r"dpcore\[deep\]"):
        Synthesizer.create("gem", epsilon=1.0, ledger_path=path).fit(frame(), SCHEMA)
    assert not path.exists()
