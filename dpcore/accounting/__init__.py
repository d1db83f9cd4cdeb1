"""dpcore.accounting: the privacy core — events, accountants, conversions, calibration, the
exact privacy filter, the ledger and its independent verifier, and noise primitives.

Pure Python with exact rational arithmetic; imports nothing from dpcore but ``dpcore.errors``.
Conventions: neighbouring datasets differ by adding or removing one record; Gaussian
sensitivities are L2; the exponential mechanism is Pr[r] ~ exp(eps q(D, r) / (2 Delta)).
Each privacy claim is proved in ``proofs/`` (``python -m proofs``).
"""
from .accountants import DEFAULT_ORDERS, RDPAccountant, ZCDPAccountant, rdp_curve
from .calibration import exponential_epsilon, gaussian_sigma, l2_sensitivity, nist_mst_sigma
from .conversions import (approx_dp_to_zcdp, approx_dp_to_zcdp_classic, rdp_to_approx_dp,
                          zcdp_delta, zcdp_to_approx_dp, zcdp_to_approx_dp_classic)
from .errors import BudgetExceededError, LedgerError
from .events import (ComposedEvent, Event, ExponentialEvent, GaussianEvent, PureDPEvent,
                     SelfComposedEvent, ZCDPEvent)
from .filter import MAX_RHO, PrivacyFilter
from .journal import LedgerInUseError
from .ledger import Ledger, LedgerEntry

_LAZY = {"verify_ledger", "VerificationReport"}  # the verifier imports sympy (~1 s): load on use


def __getattr__(name):
    if name in _LAZY:
        from . import verify
        value = getattr(verify, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpcore.accounting' has no attribute {name!r}")

__all__ = [
    "BudgetExceededError", "ComposedEvent", "DEFAULT_ORDERS", "Event", "ExponentialEvent",
    "GaussianEvent", "Ledger", "LedgerEntry", "LedgerError", "LedgerInUseError", "MAX_RHO", "PrivacyFilter",
    "PureDPEvent", "RDPAccountant", "SelfComposedEvent", "VerificationReport", "ZCDPAccountant",
    "ZCDPEvent", "approx_dp_to_zcdp", "approx_dp_to_zcdp_classic", "exponential_epsilon",
    "gaussian_sigma", "l2_sensitivity", "nist_mst_sigma", "rdp_curve", "rdp_to_approx_dp", "verify_ledger",
    "zcdp_delta", "zcdp_to_approx_dp", "zcdp_to_approx_dp_classic",
]
