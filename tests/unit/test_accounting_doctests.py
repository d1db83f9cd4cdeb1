"""Run the examples in the accounting modules' docstrings."""
import doctest
import importlib

import pytest

MODULES = ["dpcore.accounting.conversions", "dpcore.accounting.calibration",
           "dpcore.accounting.filter"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
