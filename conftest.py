"""Pytest hooks for the whole run (tests, docstring examples, the README)."""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

# compiled tables are kept on disk (symroof.models.compiled.cache_dir): the suite keeps them
# in a folder of its own, not in the user's cache, and starts with none
os.environ["SYMROOF_CACHE"] = tempfile.mkdtemp(prefix="symroof-test-cache-")
atexit.register(shutil.rmtree, os.environ["SYMROOF_CACHE"], ignore_errors=True)


@pytest.fixture(autouse=True)
def _close_doctest_figures(request):
    """Docstring examples draw plots and drop them; close them after each example so pyplot
    does not keep dozens alive (and warn about it). Test modules manage their own."""
    yield
    if isinstance(request.node, pytest.DoctestItem) and "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
