"""The suite's xdist groups (tests/conftest.py): every test module that reads the session's
derivations is in the "derivations" group, and every module that defines a module fixture is
a group of its own, so that no costly fixture is built on two workers. Read from the modules'
source: the fixtures a module's functions take, and the fixtures it defines."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import GROUPS

TESTS = Path(__file__).resolve().parent
#: a function that takes one of conftest's fixtures built from the derivation scripts
TAKES_DERIVATIONS = re.compile(r"\bdef \w+\([^)]*\b(derivations|cached_run_script)\b[^)]*\)")
#: a fixture shared by the tests of a module (or class)
MODULE_FIXTURE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|class|package)[\"']")


def _uses(path: Path) -> tuple[bool, bool]:
    """Whether a module's functions take a derivation fixture, and whether it defines a
    module fixture."""
    text = path.read_text(encoding="utf-8")
    return bool(TAKES_DERIVATIONS.search(text)), bool(MODULE_FIXTURE.search(text))


def test_every_shared_fixture_is_built_on_one_worker():
    wrong = {}
    for path in sorted(TESTS.glob("test_*.py")):
        module = f"tests/{path.name}"
        derivations, scoped = _uses(path)
        if derivations and GROUPS.get(module) != "derivations":
            wrong[module] = "reads the derivations: belongs in READ_DERIVATIONS"
        elif scoped and module not in GROUPS:
            wrong[module] = "defines a module fixture: belongs in SHARE_MODULE_FIXTURES"
    assert wrong == {}
    assert {m for m in GROUPS if not (TESTS.parent / m).exists()} == set()  # none renamed


def test_the_check_sees_both_kinds():
    assert _uses(TESTS / "test_derivations.py") == (True, True)   # its `notes(derivations)`
    assert _uses(TESTS / "test_figure_overlaps.py") == (True, False)
    assert _uses(TESTS / "test_xla_layers.py") == (False, True)   # its `reports()`
    assert _uses(TESTS / "test_core.py") == (False, False)
