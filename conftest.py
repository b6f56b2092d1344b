"""Pytest hooks for the whole run (tests, docstring examples, the README)."""

import sys

import pytest


@pytest.fixture(autouse=True)
def _close_doctest_figures(request):
    """Docstring examples draw plots and drop them; close them after each example so pyplot
    does not keep dozens alive (and warn about it). Test modules manage their own."""
    yield
    if isinstance(request.node, pytest.DoctestItem) and "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
