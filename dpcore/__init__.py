"""dpcore: differentially private synthetic data with a verifiable privacy ledger.

The public names are imported lazily, so ``import dpcore`` stays cheap (the CLI starts fast)
and the pure-Python privacy core never loads the compiled kernels unless asked to.
"""
from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "Domain": "dpcore.domain",
    "Dataset": "dpcore.dataset",
    "Factor": "dpcore.factor",
    "JunctionTree": "dpcore.junction_tree",
    "CalibratedTree": "dpcore.junction_tree",
    "Curator": "dpcore.curator",
    "DpcoreError": "dpcore.errors",
    "InvalidArgumentError": "dpcore.errors",
    "DomainError": "dpcore.errors",
    "TableTooLargeError": "dpcore.errors",
    "DpcoreTypeError": "dpcore.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dpcore' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
