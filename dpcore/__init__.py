"""dpcore: differentially private synthetic data with a verifiable privacy ledger.

The public names are imported lazily, so ``import dpcore`` stays cheap (the CLI starts fast)
and the pure-Python privacy core never loads the compiled kernels unless asked to.
"""
from importlib import import_module
from pathlib import Path

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
_SUBMODULES = ("accounting", "datasets", "encoding", "evaluation", "inference", "schema")

__all__ = sorted(_EXPORTS) + ["datasets"]


def _installed_copy():
    """The installed package's folder when this one is a source checkout without the compiled
    core (``python script.py`` run from the repository root after ``pip install .`` puts the
    checkout first on sys.path): that copy has ``_core`` and is the code ``pip`` installed.
    Found on sys.path itself: package metadata would name the checkout, where ``pip install .``
    leaves a ``dpcore.egg-info`` behind."""
    import sys
    from importlib.machinery import EXTENSION_SUFFIXES

    def compiled(folder: Path) -> bool:   # the extension itself, not the _core.pyi stub
        return any((folder / f"_core{suffix}").is_file() for suffix in EXTENSION_SUFFIXES)

    here = Path(__file__).resolve().parent
    if compiled(here):
        return None
    for entry in sys.path:
        folder = Path(entry or ".") / "dpcore"
        try:
            if folder.resolve() != here and compiled(folder):
                return str(folder.resolve())
        except OSError:
            continue
    return None


_installed = _installed_copy()
if _installed is not None:
    __path__ = [_installed]  # every submodule, the compiled core included, from the install


def __getattr__(name):
    if name == "_core":
        try:
            return import_module("dpcore._core")
        except ModuleNotFoundError:
            raise ImportError("dpcore's compiled core (dpcore._core) is not built here: run "
                              "`pip install .` in the repository (or `python setup.py "
                              "build_ext --inplace` to build it inside the checkout)") from None
    if name in _SUBMODULES:
        value = import_module(f"dpcore.{name}")
        globals()[name] = value
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dpcore' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))
