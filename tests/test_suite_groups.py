"""The suite's xdist groups (tests/conftest.py): every test module that reads the session's
derivations is in the "derivations" group, and every module that defines a module fixture is
a group of its own, so that no costly fixture is built on two workers. Read from the modules'
source: a module lists the fixtures it takes as parameters and the ones it defines."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import GROUPS

TESTS = Path(__file__).resolve().parent
SESSION = {"derivations", "cached_run_script"}  # conftest's fixtures built from the scripts


def _module_fixture(node: ast.AST) -> bool:
    """Whether ``node`` is a function decorated ``@pytest.fixture(scope="module" | "class")``."""
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.fixture"
        and any(k.arg == "scope" and ast.literal_eval(k.value) in ("module", "class", "package")
                for k in d.keywords)
        for d in node.decorator_list)


def _uses(path: Path) -> tuple[bool, bool]:
    """Whether a module's functions take a derivation fixture, and whether it defines a
    module fixture."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    takes = {a.arg for f in functions for a in f.args.args}
    return bool(SESSION & takes), any(_module_fixture(f) for f in functions)


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
    assert _uses(TESTS / "test_xla_layers.py") == (False, True)   # its `reports()`
    assert _uses(TESTS / "test_core.py") == (False, False)
