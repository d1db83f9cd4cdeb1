"""estimate(refresh=..., first_step=...): the IPF warm start on a new measurement and the
larger first step, against brute force over the full joint (small domains)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import Domain
from dpcore.errors import InvalidArgumentError
from dpcore.inference import Measurement, StructuralZero, estimate
from dpcore.inference.problem import Problem
from dpcore.inference.reference import solve_full_joint

ATTRS = ("a", "b", "c", "d")
SHAPE = (3, 2, 4, 2)
DOMAIN = Domain(ATTRS, SHAPE)
TOTAL = 300.0


def joint_of(model):
    """The model's full joint (probabilities, domain order) by summing its potentials."""
    logits = np.zeros(SHAPE)
    for clique, factor in zip(model.cliques, model.potentials):
        values = np.transpose(factor.values, [factor.attributes.index(a) for a in clique])
        logits = logits + values.reshape([SHAPE[i] if a in clique else 1
                                          for i, a in enumerate(ATTRS)])
    with np.errstate(invalid="ignore"):
        p = np.exp(logits - logits[np.isfinite(logits)].max())
    return p / p.sum()


def marginal(p, attrs):
    return p.sum(axis=tuple(i for i, a in enumerate(ATTRS) if a not in attrs))


def noisy_measurements(seed, sigma):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.full(np.prod(SHAPE), 0.3)).reshape(SHAPE) * TOTAL
    out = []
    for attrs in [("a", "b"), ("b", "c"), ("c", "d"), ("a", "b"), ("a", "c", "d")]:
        y = marginal(truth, attrs).ravel() + rng.normal(0, sigma, DOMAIN.size(attrs))
        out.append(Measurement(attrs, y, sigma))
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), sigma=st.floats(0.5, 20), floor=st.floats(1e-3, 5),
       new=st.sampled_from([("a", "b"), ("a", "c", "d"), ("b", "c")]))
def test_the_step_puts_the_clipped_pooled_measurement_on_the_set_and_keeps_conditionals(
        seed, sigma, floor, new):
    ms = noisy_measurements(seed, sigma)
    start = estimate(DOMAIN, ms[:3], total=TOTAL, max_iters=30).model
    plain = estimate(DOMAIN, ms, total=TOTAL, warm_start=start, max_iters=0).model
    moved = estimate(DOMAIN, ms, total=TOTAL, warm_start=start, max_iters=0, refresh=[new],
                     floor=floor).model
    # brute force: the precision-weighted mean of the measurements on the set, clipped, normalised
    on_set = [m for m in ms if set(m.attrs) == set(new)]
    ybar = sum(m.noisy / m.sigma**2 for m in on_set) / sum(1 / m.sigma**2 for m in on_set)
    want = np.maximum(ybar, floor)
    want = want / want.sum()
    p, q = joint_of(plain), joint_of(moved)
    np.testing.assert_allclose(marginal(q, new).ravel(), want, rtol=1e-9, atol=1e-15)
    # the step rescales whole slices x_S: p(x | x_S) is the same before and after
    axes = [i for i, a in enumerate(ATTRS) if a not in new]
    np.testing.assert_allclose(q / q.sum(axis=tuple(axes), keepdims=True),
                               p / p.sum(axis=tuple(axes), keepdims=True), rtol=1e-9, atol=1e-15)


def test_refresh_of_a_set_already_matched_changes_nothing():
    ms = noisy_measurements(1, 0.0 + 1.0)
    fit = estimate(DOMAIN, ms, total=TOTAL, max_iters=3000, tol=1e-12)
    # the optimum does not match a noisy set exactly; put it there, then refresh again: no move
    once = estimate(DOMAIN, ms, total=TOTAL, warm_start=fit.model, max_iters=0,
                    refresh=[("c", "d")], floor=1e-6).model
    twice = estimate(DOMAIN, ms, total=TOTAL, warm_start=once, max_iters=0,
                     refresh=[("c", "d")], floor=1e-6).model
    np.testing.assert_allclose(joint_of(twice), joint_of(once), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("first_step", [1.0, 1024.0])
def test_refreshed_fits_reach_the_brute_force_optimum(first_step):
    ms = noisy_measurements(7, 3.0)
    optimum, _ = solve_full_joint(Problem(DOMAIN, ms, TOTAL))
    start = estimate(DOMAIN, ms[:3], total=TOTAL, max_iters=50).model
    for kw in ({}, {"warm_start": start, "refresh": [("a", "c", "d")]}):
        r = estimate(DOMAIN, ms, total=TOTAL, max_iters=20000, tol=1e-12, first_step=first_step,
                     **kw)
        assert r.loss_history[-1] == pytest.approx(optimum, rel=1e-6)
        assert all(b <= a for a, b in zip(r.loss_history, r.loss_history[1:]))   # monotone


def test_a_larger_first_step_fits_with_fewer_iterations_here():
    ms = noisy_measurements(3, 2.0)
    start = estimate(DOMAIN, ms[:3], total=TOTAL, max_iters=50).model
    slow = estimate(DOMAIN, ms, total=TOTAL, warm_start=start, max_iters=40)
    fast = estimate(DOMAIN, ms, total=TOTAL, warm_start=start, max_iters=40, first_step=1024.0)
    assert fast.loss_history[-1] < slow.loss_history[-1]


def test_structural_zeros_stay_zero_and_the_target_is_normalised_over_the_rest():
    ms = noisy_measurements(5, 2.0)
    mask = np.zeros((3, 2), dtype=bool)
    mask[0, 1] = mask[2, 0] = True
    zero = StructuralZero(("a", "b"), mask)
    start = estimate(DOMAIN, ms[:3], total=TOTAL, max_iters=30, zeros=[zero]).model
    moved = estimate(DOMAIN, ms, total=TOTAL, warm_start=start, max_iters=0, zeros=[zero],
                     refresh=[("a", "b")], floor=0.5).model
    on_set = [m for m in ms if m.attrs == ("a", "b")]
    ybar = sum(m.noisy / m.sigma**2 for m in on_set) / sum(1 / m.sigma**2 for m in on_set)
    want = np.where(mask.ravel(), 0.0, np.maximum(ybar, 0.5))
    got = marginal(joint_of(moved), ("a", "b")).ravel()
    np.testing.assert_allclose(got, want / want.sum(), rtol=1e-9, atol=1e-15)
    assert (got[mask.ravel()] == 0).all()


def test_bad_refresh_floor_and_first_step_are_typed_errors():
    ms = noisy_measurements(0, 1.0)
    with pytest.raises(InvalidArgumentError, match="not a measured set"):
        estimate(DOMAIN, ms, total=TOTAL, max_iters=0, refresh=[("a", "d")])
    with pytest.raises(InvalidArgumentError, match="floor"):
        estimate(DOMAIN, ms, total=TOTAL, max_iters=0, refresh=[("a", "b")], floor=0.0)
    for bad in (0.5, float("nan"), 2.0**30):
        with pytest.raises(InvalidArgumentError, match="first_step"):
            estimate(DOMAIN, ms, total=TOTAL, max_iters=0, first_step=bad)


def test_aims_round_stop_is_the_relative_rule_and_keeps_the_callers_callback():
    from mechanisms.aim import _round_stop
    losses = [100.0, 60.0, 40.0, 30.0, 25.0, 23.0, 22.0, 21.5, 21.2, 21.1]
    stop = _round_stop({}, 2, 0.1)["callback"]
    fired = [stop(i + 1, x) for i, x in enumerate(losses)]
    # brute force: at k >= window, h[k - 2] - h[k] <= 0.1 (h[0] - h[k])
    want = [k >= 2 and losses[k - 2] - losses[k] <= 0.1 * (losses[0] - losses[k])
            for k in range(len(losses))]
    assert fired == want and any(want)
    seen = []
    stop = _round_stop({"callback": lambda i, x: seen.append(i) or i == 1}, 2, 0.1)["callback"]
    assert stop(1, 100.0) and seen == [1]


def test_aims_round_options_are_checked():
    from dpcore import Curator, Dataset
    from dpcore.accounting import PrivacyFilter
    from mechanisms.aim import aim
    data = Dataset(np.zeros((10, 4), dtype=np.int64), DOMAIN)
    for kw, name in (({"round_window": 0}, "round_window"), ({"round_share": 1.0}, "round_share"),
                     ({"first_step": 0.5}, "first_step"), ({"final_iters": 0}, "final_iters")):
        curator = Curator(data, PrivacyFilter.from_approx_dp(1.0, 1e-6), seed=0)
        with pytest.raises(InvalidArgumentError, match=name):
            aim(curator, [("a", "b")], **kw)
        assert curator.privacy_filter.spent == 0


def test_aim_passes_its_fit_policy_to_every_fit(monkeypatch):
    import mechanisms.aim as aim_module
    from dpcore import Curator, Dataset
    from dpcore.accounting import PrivacyFilter

    calls = []
    real = aim_module.estimate

    def spy(domain, measurements, **options):
        calls.append(options)
        return real(domain, measurements, **options)

    monkeypatch.setattr(aim_module, "estimate", spy)
    rng = np.random.default_rng(0)
    data = Dataset(np.stack([rng.integers(0, n, 200) for n in SHAPE], axis=1), DOMAIN)
    curator = Curator(data, PrivacyFilter.from_approx_dp(1.0, 1e-9), seed=0)
    result = aim_module.aim(curator, [("a", "b"), ("b", "c")], round_iters=9, final_iters=4,
                            first_step=64.0, round_refresh=True, round_share=0.1)
    rounds = result.extras["rounds_run"]
    assert [c["max_iters"] for c in calls] == [9] * (rounds + 1) + [4]
    assert all(c["first_step"] == 64.0 for c in calls)
    # every round's refit (not the first fit, not the final one) refreshes the chosen marginal
    # and carries the relative stop
    assert [len(c.get("refresh", ())) for c in calls] == [0] + [1] * rounds + [0]
    assert ["callback" in c for c in calls] == [False] + [True] * rounds + [False]
