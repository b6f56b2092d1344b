"""benchmarks/mutation_sweep.py stays runnable: every planted mutation still finds its text
exactly once in the tree, and the tests it runs exist. (The sweep itself runs by hand: it
takes minutes.)"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mutation_sweep",
                                               ROOT / "benchmarks" / "mutation_sweep.py")
SWEEP = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(SWEEP)


def test_names_are_unique_and_there_are_enough():
    names = [m[0] for m in SWEEP.MUTANTS]
    assert len(names) == len(set(names)) and len(names) >= 25


@pytest.mark.parametrize("mutant", SWEEP.MUTANTS, ids=[m[0] for m in SWEEP.MUTANTS])
def test_each_mutation_applies_once_and_its_tests_exist(mutant):
    name, path, text, new, tests = mutant
    assert (ROOT / path).read_text(encoding="utf-8").count(text) == 1, name
    assert text != new
    for arg in tests:
        if arg.startswith("tests/"):
            assert (ROOT / arg).is_file(), arg
