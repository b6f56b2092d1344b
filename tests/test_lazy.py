"""The lazy public names of symroof (symroof.lazy): reading a name imports its module, and
the examples that show how leave the real package as it was."""

import doctest

import symroof
import symroof.lazy


def test_the_lazy_examples_leave_symroof_alone():
    # the examples attach names to packages of their own: symroof keeps every public name
    # protected from being shadowed by a submodule of the same name (sr.evaluate, the
    # function, not symroof/evaluate.py)
    before = symroof._lazy_names
    result = doctest.testmod(symroof.lazy, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
    assert symroof._lazy_names == before and "evaluate" in before
    assert callable(symroof.evaluate)
