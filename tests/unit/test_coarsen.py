"""Derived columns measured as coarsenings of their parents (mechanisms.coarsen, issue 23)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Domain
from mechanisms import coarsen


def counts(records, domain, attrs):
    cols = [domain.attrs.index(a) for a in attrs]
    shape = [domain[a] for a in attrs]
    flat = np.ravel_multi_index(tuple(records[:, c] for c in cols), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(float)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), other_first=st.booleans())
def test_query_maps_the_parent_marginal_onto_the_derived_one(seed, other_first):
    """Brute force: Q @ (marginal on base(r)) equals the marginal on r counted directly from
    records whose child column is computed from the parent, for r in any attribute order."""
    rng = np.random.default_rng(seed)
    parent, child, other = int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(2, 4))
    table = rng.integers(0, child, parent)
    domain = Domain(("p", "c", "o"), (parent, child, other))
    model_domain = domain.project(("p", "o"))
    derived = {"c": ("p", table)}
    model_records = np.stack([rng.integers(0, parent, 200), rng.integers(0, other, 200)], 1)
    records = coarsen.expand_records(model_records, derived, domain, model_domain)
    assert (records[:, 1] == table[records[:, 0]]).all()
    for r in [("c",), ("o", "c") if other_first else ("c", "o")]:
        b = coarsen.base(r, derived)
        q = coarsen.query(r, derived, domain, model_domain)
        assert b == tuple("p" if a == "c" else a for a in r)
        assert q.shape == (domain.size(r), model_domain.size(b))
        assert np.array_equal(q @ counts(model_records, model_domain, b), counts(records, domain, r))
        assert np.array_equal(np.asarray(q.sum(axis=0)).ravel(), np.ones(q.shape[1]))
    assert coarsen.query(("p", "o"), derived, domain, model_domain) is None
    assert coarsen.base(("p", "c"), derived) is None   # a function of the parent's marginal


def test_aim_measures_derived_marginals_and_the_ledger_verifies():
    import pandas as pd

    from dpcore.schema import Schema
    from mechanisms.synthesizer import Synthesizer

    rng = np.random.default_rng(0)
    ind = rng.choice(["a1", "a2", "b1", "b2"], 3000)
    df = pd.DataFrame({"IND": ind, "CAT": [x[0] for x in ind],
                       "SEX": rng.choice(["F", "M"], 3000)})
    schema = Schema.from_dict({
        "columns": {"IND": {"type": "categorical", "categories": ["a1", "a2", "b1", "b2"]},
                    "CAT": {"type": "categorical", "categories": ["a", "b"]},
                    "SEX": {"type": "categorical", "categories": ["F", "M"]}},
        "constraints": [{"type": "derived", "name": "cat", "column": "CAT", "from": "IND",
                         "map": {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}}]})
    synth = Synthesizer.create("aim", epsilon=1.0, delta=1e-9, seed=0, progress=False,
                               workload="all-2way").fit(df, schema=schema)
    assert synth.model.domain.attrs == ("IND", "SEX")
    measured = [r.clique for r in synth.result.rounds if r.sigma is not None]
    assert ("CAT",) in measured                    # the 1-way of the derived column
    assert synth.verify(allow_fixed_seed=True).ok
    out = synth.sample(400, seed=1)
    assert (out.CAT == out.IND.str[0]).all()
