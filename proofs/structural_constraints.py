"""Claim (structural constraints): public schema constraints change no release's sensitivity.
A derived column is removed from the model's domain (a change of the public domain: the
curator's marginals over the remaining columns keep L1 and L2 sensitivity 1); a marginal that
holds a derived column, measured from the data (AIM), is an ordinary marginal of the records,
of L1 and L2 sensitivity 1, and fitting it as a coarsening Q of its parent's marginal is
post-processing; forbidden cells are structural zeros of the estimated model (a function of the
released measurements and the public masks) and, as a fallback, enforced by rejection sampling,
a function of the released model, the public rules and the sampling seed only (post-processing).

Source: issue 23; post-processing and the Gaussian mechanism's sensitivity as in
proofs/gaussian.py and proofs/merged_cells.py (Dwork & Roth 2014, Prop. 2.1 for
post-processing).

Preconditions: the constraints are public (written in the schema, never derived from the
records); the measured domain is the schema's columns minus the derived ones, fixed before any
charge; every record lies in exactly one cell of each measured marginal.

Proof. (1) Derived columns. Write a record as (x, y) with y the derived columns. The measured
marginal on a clique C of non-derived columns is M_C(D) = sum over records of e_{x_C}; the map
record -> x_C is a fixed public projection, so adding or removing one record changes M_C by
+-e_{x_C}, of L1 and L2 norm 1 (the merged-cells argument with one 1 per column). The derived
column is then computed from x_C by a public table: post-processing. (1b) Coarsened marginals.
A marginal on a set r holding a derived column y_j = f(x_p) is M_r(D) = sum of e_{(x, y)_r};
each record adds e to exactly one cell, so adding or removing one record changes it by one unit
vector (L1 = L2 = 1) whatever f is. Because every record satisfies y_j = f(x_p) (checked at
encoding), M_r(D) = Q M_b(D) with b = r with y_j replaced by x_p and Q the public 0/1 matrix of
f; estimation uses the release only through Q, a public map chosen before the charge, so the
fit is post-processing. (2) Structural zeros. Estimation with -inf log-potentials on a public
set of cells F is a deterministic function of the released noisy marginals and F (the model
minimises the same likelihood over the distributions with P(F) = 0): post-processing, no release
changes. (3) Rejection. The
sampler draws rows from the released model P, drops rows in the public set F and repeats: its
output law is P(. | not F), a function of P and F only, hence post-processing of the released
model. The number of draws per kept row is geometric with success 1 - q, q = P(F), with mean
sum_k k q^(k-1) (1 - q) = 1 / (1 - q) (checked with sympy). The check runs the real curator on
a measured domain with a derived column removed, on add-one neighbours with zero noise, and runs
the real sampler twice with the released model swapped between synthesizers fitted on
neighbouring data: equal model, equal seed -> equal rows. It also measures, on add-one
neighbours with zero noise, marginals holding the derived column from the full data (one unit
vector apart, and equal to Q times the parent's marginal), and fits a model with structural
zeros twice from the same released measurements (equal potentials, zero mass on F).
"""
import random

import numpy as np
import sympy as sp

from ._neighbours import neighbour_pairs, patched

CLAIM = ("derived columns and forbidden cells are a change of public domain or post-processing: "
         "marginal sensitivity stays 1")

SCHEMA = {"columns": {"a": {"type": "categorical", "categories": ["0", "1", "2"]},
                      "b": {"type": "categorical", "categories": ["0", "1"]},
                      "c": {"type": "categorical", "categories": ["x", "y"]}},
          "constraints": [{"type": "derived", "name": "c from a", "column": "c", "from": "a",
                           "map": {"0": "x", "1": "x", "2": "y"}},
                          {"type": "forbidden", "name": "no a=2 with b=1",
                           "when": {"a": {"in": ["2"]}, "b": {"in": ["1"]}}}]}


def _zero_noise_marginals(codes, domain, cliques):
    from dpcore import Dataset
    from dpcore.accounting import PrivacyFilter
    from dpcore.curator import Curator
    import dpcore.curator as curator_module

    curator = Curator(Dataset(codes, domain), PrivacyFilter(10), seed=0)
    with patched(curator_module, "discrete_gaussian_noise",
                 lambda sigma, size, rng: np.zeros(size, dtype=np.int64)):
        out = [curator.measure(c, 1.0) for c in cliques]
    assert all(e.event.sensitivity == 1 for e in curator.privacy_filter.ledger.entries)
    return out


def check() -> None:
    # E[draws per kept row] = sum_k k q^(k-1) (1 - q) = (1 - q) d/dq sum_k q^k, for 0 <= q < 1
    q, k = sp.symbols("q k", nonnegative=True)
    geometric = sp.Sum(q ** k, (k, 1, sp.oo)).doit()
    geometric = geometric.args[0][0] if isinstance(geometric, sp.Piecewise) else geometric
    assert sp.simplify(geometric - q / (1 - q)) == 0, geometric
    assert sp.simplify((1 - q) * sp.diff(geometric, q) - 1 / (1 - q)) == 0
    assert sp.Sum(k * sp.Rational(1, 3) ** (k - 1) * sp.Rational(2, 3), (k, 1, sp.oo)).doit() \
        == sp.Rational(3, 2)

    import pandas as pd
    from dpcore.constraints import expand, measured_schema
    from dpcore.schema import Schema
    from mechanisms.synthesizer import Synthesizer

    schema = Schema.from_dict(SCHEMA)
    measured = measured_schema(schema)
    assert measured.names == ("a", "b")
    domain = measured.domain()
    cliques = [("a",), ("b",), ("a", "b")]
    rng = random.Random(23)
    for small, large in neighbour_pairs(domain, rng, datasets=3):
        full = expand(large, schema)          # the derived column follows from the rest
        assert (full[:, 2] == np.array([0, 0, 1])[large[:, 0]]).all()
        for x, y in zip(_zero_noise_marginals(small, domain, cliques),
                        _zero_noise_marginals(large, domain, cliques)):
            diff = y - x
            assert np.isclose(np.abs(diff).sum(), 1) and np.count_nonzero(diff) == 1, diff

    _check_coarsened_and_zeros(schema, rng)

    frame = pd.DataFrame({"a": ["0", "1", "2", "2"] * 10, "b": ["0", "1", "0", "0"] * 10})
    frame["c"] = frame["a"].map({"0": "x", "1": "x", "2": "y"})
    neighbour = frame.iloc[:-1]
    fits = [Synthesizer.create("independent", epsilon=1.0, delta=1e-9, seed=s,
                               progress=False).fit(f, schema=schema)
            for s, f in ((0, frame), (1, neighbour))]
    fits[1].result_ = fits[0].result_      # same released model, different private input
    draws = [f.sample_codes(500, seed=7) for f in fits]
    assert np.array_equal(draws[0], draws[1])
    assert not ((draws[0][:, 0] == 2) & (draws[0][:, 1] == 1)).any()


def _check_coarsened_and_zeros(schema, rng) -> None:
    from dpcore.constraints import expand, measured_schema, structural_zeros, unconstrained
    from dpcore.inference import Measurement, estimate
    from mechanisms import coarsen

    full = unconstrained(schema).domain()              # what AIM's curator holds
    model_domain = measured_schema(schema).domain()
    derived = {"c": ("a", (0, 0, 1))}
    cliques = [("c",), ("b", "c")]
    for small, large in neighbour_pairs(model_domain, rng, datasets=3):
        small, large = expand(small, schema), expand(large, schema)
        xs = _zero_noise_marginals(small, full, cliques)
        ys = _zero_noise_marginals(large, full, cliques)
        for r, x, y in zip(cliques, xs, ys):
            diff = y - x
            assert np.isclose(np.abs(diff).sum(), 1) and np.count_nonzero(diff) == 1, diff
            base = coarsen.base(r, derived)
            cols = [model_domain.attrs.index(a) for a in base]   # C order over base as given
            parent = np.bincount(np.ravel_multi_index(tuple(large[:, c] for c in cols),
                                                      [model_domain[a] for a in base]),
                                 minlength=model_domain.size(base))
            q = coarsen.query(r, derived, full, model_domain)
            assert np.array_equal(q @ parent, y)
    zeros = structural_zeros(schema)
    assert len(zeros) == 1 and zeros[0].mask.tolist() == [[False, False], [False, False],
                                                          [False, True]]
    released = [Measurement(("a",), [5.0, 3.0, 4.0], 1.0), Measurement(("b",), [7.0, 5.0], 1.0),
                Measurement(("a",), [8.0, 4.0], 1.0,
                            query=coarsen.query(("c",), derived, full, model_domain))]
    fits = [estimate(model_domain, released, zeros=zeros).model for _ in range(2)]
    assert all(np.array_equal(f.values, g.values)
               for f, g in zip(fits[0].potentials, fits[1].potentials))
    assert fits[0].project(("a", "b")).values[2, 1] == 0.0
