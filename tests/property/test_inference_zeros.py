"""Structural zeros in Private-PGM estimation (issue 23), against brute force.

On random small domains with random measurements (identity and non-identity queries) and random
forbidden cells over pairs -- some measured together, some not (their pair must then become a
clique) -- the fitted model puts exactly 0 mass on every forbidden cell of the full joint
(brute-force product of the model's potentials, and the model's own marginals), and its loss
equals the optimum of the same least-squares problem solved directly over the allowed cells of
the full joint (``solve_full_joint`` with the cells dropped), recomputed from the model's
marginals. Sampling never draws a forbidden cell; warm starts keep the zeros.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.errors import DomainError, InvalidArgumentError
from dpcore.inference import Measurement, StructuralZero, estimate
from dpcore.inference.oracle import DenseOracle
from dpcore.inference.problem import Problem
from dpcore.inference.reference import allowed_cells, solve_full_joint


def model_loss(model, measurements):
    return sum(m.loss_and_gradient(model.project(m.attrs).values.ravel())[0]
               for m in measurements)


def make_problem(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 5))
    shape = tuple(int(s) for s in rng.integers(2, 5, size=k))
    attrs = tuple(f"x{i}" for i in range(k))
    domain = Domain(attrs, shape)
    records = rng.integers(0, shape, size=(int(rng.integers(30, 300)), k))
    joint = np.zeros(shape)
    np.add.at(joint, tuple(records.T), 1.0)
    cliques = [(a,) for a in attrs] + [(attrs[i], attrs[i + 1]) for i in range(k - 1)]
    measurements = []
    for c in cliques:
        marg = joint.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in c)).ravel()
        y = marg + rng.normal(0, 2.0, marg.size)
        query = None
        if len(c) == 1 and rng.random() < 0.3:   # a coarsening: the first two codes merged
            query = np.zeros((marg.size - 1, marg.size))
            query[0, :2] = 1.0
            query[np.arange(1, marg.size - 1), np.arange(2, marg.size)] = 1.0
            y = query @ marg + rng.normal(0, 2.0, marg.size - 1)
        measurements.append(Measurement(c, y, 2.0, query=query))
    zeros = []
    for _ in range(int(rng.integers(1, 3))):
        i, j = rng.choice(k, size=2, replace=False)   # any pair: measured together or not
        mask = rng.random((shape[i], shape[j])) < 0.3
        mask[0, 0] = False                            # never every cell
        zeros.append(StructuralZero((attrs[i], attrs[j]), mask))
    return domain, measurements, zeros, float(len(records))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), method=st.sampled_from(["accelerated", "mirror_descent"]))
def test_zero_mass_and_constrained_optimum(seed, method):
    domain, measurements, zeros, total = make_problem(seed)
    fit = estimate(domain, measurements, total=total, zeros=zeros, max_iters=20000, tol=1e-13,
                   method=method)
    model = fit.model
    problem = Problem(domain, measurements, total, zeros)
    allowed = allowed_cells(problem)
    # the model's joint, by brute force from its potentials: exactly zero where forbidden
    logits = np.zeros(domain.shape)
    for f in model.potentials:
        axes = [domain.attrs.index(a) for a in f.attributes]
        order = np.argsort(axes)
        expand = [domain.shape[i] if i in axes else 1 for i in range(len(domain.attrs))]
        logits = logits + np.transpose(f.values, order).reshape(expand)
    assert np.all(np.exp(logits).ravel()[~allowed] == 0.0)
    for z in zeros:
        assert np.all(model.project(z.attrs).values[z.mask] == 0.0)
    best, _ = solve_full_joint(problem)
    loss = model_loss(model, measurements)
    tolerance = 1e-6 if method == "accelerated" else 1e-4   # plain MD converges sublinearly
    assert loss >= best - 1e-7 * max(best, 1.0)
    assert loss <= best + tolerance * max(best, 1.0), (loss, best)


def test_sampling_and_warm_start_keep_zeros():
    domain, measurements, zeros, total = make_problem(7)
    model = estimate(domain, measurements, total=total, zeros=zeros).model
    for method in ("round", "sample"):
        rows = np.asarray(model.synthetic_data(5000, method=method, seed=3).records)
        for z in zeros:
            cols = [domain.attrs.index(a) for a in z.attrs]
            assert not z.mask[rows[:, cols[0]], rows[:, cols[1]]].any()
    free = estimate(domain, measurements, total=total, max_iters=50).model
    warm = estimate(domain, measurements, total=total, zeros=zeros, warm_start=free).model
    for z in zeros:
        assert np.all(warm.project(z.attrs).values[z.mask] == 0.0)


def test_dense_oracle_agrees_with_tree():
    domain, measurements, zeros, total = make_problem(11)
    problem = Problem(domain, measurements, total, zeros)
    theta = problem.zero_potentials()
    theta[~problem.forbidden] = np.random.default_rng(0).normal(size=int((~problem.forbidden).sum()))
    from dpcore.inference.oracle import TreeOracle
    assert np.allclose(TreeOracle(problem)(theta), DenseOracle(problem)(theta), atol=1e-12)


def test_pickle_round_trip():
    import pickle
    z = StructuralZero(("a", "b"), np.array([[True, False, False], [False, False, True]]))
    back = pickle.loads(pickle.dumps(z))
    assert back.attrs == z.attrs and np.array_equal(back.mask, z.mask)


def test_zero_errors():
    domain = Domain(("a", "b"), (2, 3))
    with pytest.raises(InvalidArgumentError, match="every cell"):
        StructuralZero(("a", "b"), np.ones((2, 3), bool))
    with pytest.raises(InvalidArgumentError, match="shape"):
        Problem(domain, [Measurement("a", [1.0, 2.0], 1.0)], 3.0,
                [StructuralZero(("a", "b"), np.zeros((3, 2), bool))])
    with pytest.raises(DomainError):
        Problem(domain, [Measurement("a", [1.0, 2.0], 1.0)], 3.0,
                [StructuralZero(("a", "c"), np.zeros((2, 3), bool))])
