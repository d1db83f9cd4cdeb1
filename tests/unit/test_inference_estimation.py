"""estimate(): consistency, warm start, stopping rules, the independent baseline, bad input."""
import signal
import time

import numpy as np
import pytest

from dpcore import Domain
from dpcore.errors import DomainError, InvalidArgumentError
from dpcore.inference import GraphicalModel, Measurement, estimate, independent_model
from dpcore.inference.independent import project_to_simplex
from dpcore.inference.problem import Problem
from dpcore.inference.reference import solve_full_joint


def dataset_joint(seed, shape, rows):
    rng = np.random.default_rng(seed)
    # Correlated records (a noisy chain) so the model has real dependence to recover.
    x = np.empty((rows, len(shape)), dtype=np.int64)
    x[:, 0] = rng.integers(0, shape[0], rows)
    for j in range(1, len(shape)):
        copy = rng.random(rows) < 0.6
        x[:, j] = np.where(copy, x[:, j - 1] % shape[j], rng.integers(0, shape[j], rows))
    joint = np.zeros(shape)
    np.add.at(joint, tuple(x.T), 1.0)
    return joint


def marginal(joint, attrs, clique):
    axes = [attrs.index(a) for a in clique]
    m = joint.sum(axis=tuple(i for i in range(joint.ndim) if i not in axes))
    return m.transpose(np.argsort(np.argsort(axes)))


ATTRS = ("a", "b", "c", "d", "e")
SHAPE = (3, 4, 2, 5, 3)
DOMAIN = Domain(ATTRS, SHAPE)
JOINT = dataset_joint(0, SHAPE, 400)
TREE = [("a", "b"), ("b", "c"), ("d", "b"), ("e", "d")]


def test_noise_free_tree_marginals_are_recovered_to_1e_8():
    # Private-PGM is consistent: exact marginals on a tree-structured clique set are matched
    # exactly (the optimum has loss 0 and is attained by the model family).
    ms = [Measurement(c, marginal(JOINT, ATTRS, c).ravel(), 1.0) for c in TREE]
    for method in ("mirror_descent", "accelerated"):
        result = estimate(DOMAIN, ms, total=400.0, max_iters=20000, tol=0.0, method=method)
        for c in TREE + [("a",), ("e", "a")]:
            got = result.model.project(c).values
            want = marginal(JOINT, ATTRS, c)
            if c == ("e", "a"):  # unmeasured: the max-entropy answer is the tree factorisation
                continue
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
        assert result.model.project(("a", "b")).values.sum() == pytest.approx(400.0, rel=1e-12)


def test_total_is_estimated_when_not_given():
    ms = [Measurement(c, marginal(JOINT, ATTRS, c).ravel(), 1.0) for c in TREE]
    result = estimate(DOMAIN, ms, max_iters=50)
    assert result.model.total == pytest.approx(400.0, rel=1e-12)


def test_warm_start_reuses_potentials_and_reaches_the_same_optimum_faster():
    rng = np.random.default_rng(3)
    cliques = TREE + [("a", "c", "e")]
    ms = [Measurement(c, marginal(JOINT, ATTRS, c).ravel() + rng.normal(0, 4, DOMAIN.size(c)), 4.0)
          for c in cliques]
    first = estimate(DOMAIN, ms[:4], total=400.0, max_iters=5000, tol=1e-10)
    cold = estimate(DOMAIN, ms, total=400.0, max_iters=5000, tol=1e-10)
    warm = estimate(DOMAIN, ms, total=400.0, max_iters=5000, tol=1e-10, warm_start=first.model)
    assert cold.converged and warm.converged
    assert warm.loss_history[0] < cold.loss_history[0]
    assert warm.loss_history[-1] == pytest.approx(cold.loss_history[-1], rel=1e-6)
    # Refitting the same measurements from their own optimum: nothing left to do.
    again = estimate(DOMAIN, ms, total=400.0, max_iters=5000, tol=1e-10, warm_start=cold.model)
    assert again.iterations <= 2
    optimum, _ = solve_full_joint(Problem(DOMAIN, ms, 400.0))
    assert cold.loss_history[-1] == pytest.approx(optimum, rel=1e-6)


def test_iteration_cap_callback_and_history():
    rng = np.random.default_rng(4)
    ms = [Measurement(c, marginal(JOINT, ATTRS, c).ravel() + rng.normal(0, 4, DOMAIN.size(c)), 4.0)
          for c in TREE + [("a", "c", "e")]]
    capped = estimate(DOMAIN, ms, total=400.0, max_iters=3, tol=0.0)
    assert (capped.iterations, capped.converged, len(capped.loss_history)) == (3, False, 4)
    assert all(b <= a for a, b in zip(capped.loss_history, capped.loss_history[1:]))
    seen = []
    stopped = estimate(DOMAIN, ms, total=400.0, max_iters=100, tol=0.0,
                       callback=lambda it, loss: seen.append((it, loss)) or it == 5)
    assert stopped.iterations == 5 and [s[0] for s in seen] == [1, 2, 3, 4, 5]
    assert [s[1] for s in seen] == list(stopped.loss_history[1:])
    assert stopped.model.loss_history == stopped.loss_history
    zero = estimate(DOMAIN, ms, total=400.0, max_iters=0)
    assert zero.iterations == 0 and len(zero.loss_history) == 1


def test_the_compiled_loop_passes_on_python_errors_and_signals():
    # The loop runs in C++ without the GIL; a callback's exception and a signal handler's
    # (Ctrl-C is one) still stop it and reach the caller.
    ms = [Measurement(c, marginal(JOINT, ATTRS, c).ravel(), 1.0) for c in TREE]

    def fail(it, loss):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        estimate(DOMAIN, ms, total=400.0, max_iters=10, callback=fail)

    class Alarm(Exception):
        pass

    def ring(signum, frame):
        raise Alarm

    # Plain mirror descent crawls on noise-free counts with empty cells: 5 million iterations
    # take ~20 s here, so only a loop that runs the handler stops within the alarm's 0.2 s
    # (after the loop, the handler would still raise, but late).
    joint = dataset_joint(0, SHAPE, 40)
    sparse = [Measurement(c, marginal(joint, ATTRS, c).ravel(), 1.0) for c in TREE]
    previous = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        start = time.perf_counter()
        with pytest.raises(Alarm):
            estimate(DOMAIN, sparse, total=40.0, max_iters=5_000_000, tol=0.0,
                     method="mirror_descent")
        assert time.perf_counter() - start < 3.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_bad_arguments_are_typed_errors():
    ms = [Measurement(("a", "b"), np.ones(12), 1.0)]
    with pytest.raises(InvalidArgumentError, match="method must be one of"):
        estimate(DOMAIN, ms, method="newton")
    with pytest.raises(InvalidArgumentError, match="max_iters must be an integer >= 0, got -1"):
        estimate(DOMAIN, ms, max_iters=-1)
    with pytest.raises(InvalidArgumentError, match="tol"):
        estimate(DOMAIN, ms, tol=-1.0)
    with pytest.raises(InvalidArgumentError, match="total must be finite and > 0"):
        estimate(DOMAIN, ms, total=0.0)
    with pytest.raises(InvalidArgumentError, match="non-empty"):
        estimate(DOMAIN, [], total=1.0)
    with pytest.raises(DomainError, match="'z'"):
        estimate(DOMAIN, [Measurement(("a", "z"), np.ones(12), 1.0)], total=1.0)
    with pytest.raises(InvalidArgumentError, match=r"\(12\), got 11"):
        estimate(DOMAIN, [Measurement(("a", "b"), np.ones(11), 1.0)], total=1.0)
    with pytest.raises(InvalidArgumentError, match="Measurement objects"):
        estimate(DOMAIN, [("a", np.ones(3), 1.0)], total=1.0)


def test_independent_model_is_the_exact_one_way_optimum():
    rng = np.random.default_rng(5)
    ms = [Measurement((a,), marginal(JOINT, ATTRS, (a,)) + rng.normal(0, 30, n), 30.0)
          for a, n in zip(ATTRS, SHAPE)]
    ms.append(Measurement(("b",), marginal(JOINT, ATTRS, ("b",)) + rng.normal(0, 10, 4), 10.0))
    model = independent_model(DOMAIN, ms, total=400.0)
    fitted = estimate(DOMAIN, ms, total=400.0, max_iters=20000, tol=1e-14, method="accelerated")
    for a in ATTRS:
        np.testing.assert_allclose(model.project(a).values, fitted.model.project(a).values,
                                   rtol=1e-5, atol=1e-4)
    joint = model.project(("a", "d")).values
    np.testing.assert_allclose(joint, np.outer(model.project("a").values,
                                               model.project("d").values) / 400.0, atol=1e-9)
    with pytest.raises(InvalidArgumentError, match="1-way measurements only"):
        independent_model(DOMAIN, [Measurement(("a", "b"), np.ones(12), 1.0)])


def test_project_to_simplex_known_answers():
    np.testing.assert_allclose(project_to_simplex(np.array([3.0, 1.0, -2.0]), 2.0), [2.0, 0.0, 0.0])
    np.testing.assert_allclose(project_to_simplex(np.array([1.0, 1.0]), 4.0), [2.0, 2.0])
    np.testing.assert_allclose(project_to_simplex(np.array([0.5, 0.2, 0.3]), 1.0), [0.5, 0.2, 0.3])


def test_model_project_answers_any_subset_like_the_dense_joint():
    rng = np.random.default_rng(6)
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("e",)]
    ms = [Measurement(c, marginal(JOINT, ATTRS, c).ravel() + rng.normal(0, 3, DOMAIN.size(c)), 3.0)
          for c in cliques]
    model = estimate(DOMAIN, ms, total=400.0, max_iters=300).model
    # Rebuild the full joint from the potentials and compare every marginal query on it.
    logits = np.zeros(SHAPE)
    for f in model.potentials:
        attrs = tuple(f.attributes)
        shape = [SHAPE[i] if a in attrs else 1 for i, a in enumerate(ATTRS)]
        order = sorted(attrs, key=ATTRS.index)
        logits = logits + np.transpose(f.values, [attrs.index(a) for a in order]).reshape(shape)
    joint = np.exp(logits - logits.max())
    joint *= 400.0 / joint.sum()
    for q in [("a",), ("c", "a"), ("a", "c", "e"), ("e", "b", "d"), ATTRS]:
        np.testing.assert_allclose(model.project(q).values, marginal(joint, ATTRS, q),
                                   rtol=1e-9, atol=1e-9)
    assert tuple(model.project(("c", "a")).attributes) == ("c", "a")
    with pytest.raises(DomainError, match="'q'"):
        model.project(("q",))


def test_graphical_model_validates_its_parts():
    from dpcore.factor import Factor

    f = Factor.zeros(DOMAIN.project(("a", "b")))
    with pytest.raises(InvalidArgumentError, match="one Factor per clique"):
        GraphicalModel(DOMAIN, [("a", "b"), ("c",)], [f], 10.0)
    with pytest.raises(InvalidArgumentError, match="must match clique"):
        GraphicalModel(DOMAIN, [("a", "c")], [f], 10.0)
    with pytest.raises(InvalidArgumentError, match="total"):
        GraphicalModel(DOMAIN, [("a", "b")], [f], -1.0)
    with pytest.raises(DomainError, match="'z'"):
        GraphicalModel(DOMAIN, [("a", "z")], [f], 1.0)
