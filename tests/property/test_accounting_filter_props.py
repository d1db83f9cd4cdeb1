"""Property tests: the filter never accepts a sequence whose exact sum exceeds its budget,
and ledgers round-trip and verify (hypothesis, adversarial adaptive sequences)."""
import json
import math
from fractions import Fraction

from hypothesis import HealthCheck, given, settings, strategies as st

from dpcore.accounting import (BudgetExceededError, ComposedEvent, ExponentialEvent,
                               GaussianEvent, Ledger, PrivacyFilter, PureDPEvent,
                               SelfComposedEvent, ZCDPEvent, verify_ledger, zcdp_to_approx_dp)

def _what(event):
    """What a charge of ``event`` says it released. Only marginals (Gaussian), selections
    (exponential) and releases of nothing (ZCDPEvent) are documented releases; the verifier
    fails the others, but still recomputes their costs."""
    if isinstance(event, GaussianEvent):
        what = {"release": "marginal", "attrs": ["a"]}
        if event.sensitivity != 1:
            what["weights"] = [float(event.sensitivity).hex()]   # ||(w,)||_2 = w
        return what
    if isinstance(event, ExponentialEvent):
        return {"release": "selection", "candidates": 3, "sensitivity": float(event.sensitivity)}
    return {"release": "none", "reason": "property test"}


def _checks_out(report, accepted):
    """The arithmetic verifies; the only complaints allowed are about undocumented releases."""
    assert report.rho_spent == accepted
    assert all("release" in r for r in report.reasons), report.reasons


def _grid(cost):
    """The recorded cost: ceil(cost * 2**128) / 2**128, by integer arithmetic."""
    if cost is None:
        return None
    units = -((-cost.numerator * 2 ** 128) // cost.denominator)
    return Fraction(units, 2 ** 128)


def _verify(ledger, budget):
    return verify_ledger(ledger, epsilon=zcdp_to_approx_dp(budget, 1e-6) or 1e-300, delta=1e-6)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Awkward floats: tiny, huge, and sums that do not round-trip through decimal (0.1 + 0.2).
awkward_floats = st.one_of(
    st.floats(min_value=1e-12, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1 + 0.2, 0.3, 1 / 3, 5e-324, 2.2250738585072014e-308, 1e-150,
                     math.sqrt(2), 0.7 - 0.4, 1e150]),
)
rationals = st.fractions(min_value=0, max_value=10, max_denominator=10 ** 12)


def _ratio(x):
    """Brute-force exact value via integer ratios (independent of the filter's Fraction path)."""
    p, q = (x.numerator, x.denominator) if isinstance(x, Fraction) else (
        x.as_integer_ratio() if isinstance(x, float) else (x, 1))
    return p, q


def _brute_cost(event):
    """Exact cost as an (inf flag, numerator, denominator) triple using only integer arithmetic."""
    if isinstance(event, GaussianEvent):
        sp, sq = _ratio(event.sigma)
        dp, dq = _ratio(event.sensitivity)
        if sp == 0:
            return None
        return Fraction(dp * dp * sq * sq, 2 * sp * sp * dq * dq)
    if isinstance(event, ExponentialEvent):
        p, q = _ratio(event.epsilon)
        return Fraction(p * p, 8 * q * q)
    if isinstance(event, PureDPEvent):
        p, q = _ratio(event.epsilon)
        return Fraction(p * p, 2 * q * q)
    if isinstance(event, ZCDPEvent):
        return Fraction(*_ratio(event.rho))
    if isinstance(event, SelfComposedEvent):
        c = _brute_cost(event.event)
        return None if c is None else c * event.count
    total = Fraction(0)
    for e in event.events:
        c = _brute_cost(e)
        if c is None:
            return None
        total += c
    return total


simple_events = st.one_of(
    st.builds(GaussianEvent, st.one_of(awkward_floats, st.just(0.0)),
              st.one_of(st.just(1), awkward_floats)),
    st.builds(ExponentialEvent, awkward_floats, awkward_floats),
    st.builds(PureDPEvent, awkward_floats),
    st.builds(ZCDPEvent, rationals),
)
events = st.one_of(
    simple_events,
    st.builds(SelfComposedEvent, simple_events, st.integers(1, 50)),
    st.builds(ComposedEvent, st.lists(simple_events, min_size=1, max_size=4)),
)
budgets = st.one_of(awkward_floats.filter(lambda x: x <= 1e4), rationals.filter(lambda x: x > 0))


@SETTINGS
@given(budget=budgets, data=st.data())
def test_filter_never_overspends_under_adaptive_sequences(budget, data):
    f = PrivacyFilter(budget)
    accepted = Fraction(0)
    for _ in range(data.draw(st.integers(1, 25))):
        # Adaptive adversary: sometimes aim exactly at the remainder or just past it.
        remaining = f.remaining
        choice = data.draw(st.integers(0, 3))
        if choice == 0:
            event = ZCDPEvent(remaining)
        elif choice == 1:
            event = ZCDPEvent(remaining + Fraction(1, data.draw(st.integers(1, 10 ** 30))))
        elif choice == 2 and 1e-300 < remaining < 1e300:
            sigma = math.sqrt(1 / (2 * float(remaining)))  # float calibration may round under
            event = GaussianEvent(sigma)
        else:
            event = data.draw(events)
        cost = _grid(_brute_cost(event))
        affordable = cost is not None and accepted + cost <= Fraction(budget)
        assert f.can_afford(event) == affordable
        try:
            charged = f.charge(event, what=_what(event))
        except BudgetExceededError:
            assert not affordable
        else:
            assert affordable and charged == cost
            accepted += cost
        assert f.spent == accepted <= Fraction(budget)
        assert f.remaining == Fraction(budget) - accepted >= 0
    _checks_out(_verify(f.ledger, budget), accepted)


@SETTINGS
@given(seq=st.lists(st.tuples(events, st.one_of(st.none(), st.dictionaries(
    st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5),
                                   st.lists(st.text(max_size=3), max_size=3)), max_size=3))),
    max_size=8))
def test_ledger_save_load_verify_round_trip(tmp_path, seq):
    path = tmp_path / "ledger.json"
    if path.exists():
        path.unlink()
    f = PrivacyFilter(10 ** 4, delta=1e-6, ledger_path=path)
    for event, what in seq:
        if f.can_afford(event):
            f.charge(event, what={**_what(event), "meta": what})
    f.close()
    loaded = Ledger.load(path)
    assert loaded == f.ledger
    assert [e.event for e in loaded.entries] == [e.event for e in f.ledger.entries]
    _checks_out(_verify(path, 10 ** 4), f.spent)


def _numeric_fields(obj, prefix=()):
    """Paths to every exact-number string inside an entry's event."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("sigma", "sensitivity", "epsilon", "rho"):
                yield prefix + (k,)
            else:
                yield from _numeric_fields(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numeric_fields(v, prefix + (i,))


@SETTINGS
@given(seq=st.lists(events, min_size=1, max_size=6), data=st.data())
def test_editing_any_event_parameter_fails_verification(seq, data):
    f = PrivacyFilter(10 ** 4)
    for event in seq:
        if f.can_afford(event):
            f.charge(event)
    if len(f.ledger) == 0:
        return
    doc = f.ledger.to_dict()
    i = data.draw(st.integers(0, len(doc["entries"]) - 1))
    paths = list(_numeric_fields(doc["entries"][i]["event"]))
    path = data.draw(st.sampled_from(paths))
    target = doc["entries"][i]["event"]
    for key in path[:-1]:
        target = target[key]
    old = target[path[-1]]
    factor = data.draw(st.sampled_from([2, 3, Fraction(1, 2), Fraction(7, 5)]))
    if "0x" in old:
        new = (float.fromhex(old) * float(factor)).hex()
    else:
        new = str(Fraction(old) * factor)
    if new == old:
        return
    target[path[-1]] = new
    report = verify_ledger(json.loads(json.dumps(doc)))
    assert not report.ok
