"""Mechanisms for differentially private synthetic data, built on the public dpcore API.

One module per mechanism, each with a function taking a :class:`dpcore.Curator`:
``mechanisms.aim.aim``, ``mechanisms.mst.mst``, ``mechanisms.mwem.mwem`` and
``mechanisms.independent.independent``; each returns a
:class:`mechanisms.result.MechanismResult`. The scikit-learn-style front door
(``AIM(...).fit(df, schema).sample(n)``) is exported here lazily, so ``import mechanisms``
stays cheap.
"""
from importlib import import_module

_EXPORTS = {
    "Synthesizer": "mechanisms.synthesizer",
    "AIM": "mechanisms.synthesizer",
    "MST": "mechanisms.synthesizer",
    "MWEM": "mechanisms.synthesizer",
    "Independent": "mechanisms.synthesizer",
    "FEM": "mechanisms.synthesizer",
    "NISTMST": "mechanisms.synthesizer",
    "MWEMHistogram": "mechanisms.synthesizer",
    "PEP": "mechanisms.synthesizer",
    "PrivPGD": "mechanisms.synthesizer",
    "MechanismResult": "mechanisms.result",
    "RoundRecord": "mechanisms.result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mechanisms' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
