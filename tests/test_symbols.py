"""Symbols are made in one place, ``symroof/symbols.py``: a second ``Symbol("D")`` with other
assumptions is another symbol, and ``subs`` then silently does nothing. Elsewhere in the
package only local dummies (``sp.Dummy``: solved for, divided out) are made; a derivation's
own lecture symbols (its P, MFU, ...) never reuse a name of the table."""

from __future__ import annotations

import ast
from pathlib import Path

import symroof
from symroof import symbols

ROOT = Path(symroof.__file__).parent
MAKERS = {"Symbol", "symbols", "var"}  # sympy's ways to make a named, non-dummy symbol


def made(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each Symbol made in ``path``'s code (docstrings are not code)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in MAKERS:
                first = node.args[0] if node.args else None
                out.append((node.lineno, first.value if isinstance(first, ast.Constant)
                            else ast.unparse(first) if first else "?"))
    return out


def test_the_package_makes_symbols_only_in_the_table():
    stray = {f"{p.relative_to(ROOT)}:{line}": name for p in sorted(ROOT.rglob("*.py"))
             if p.name != "symbols.py" for line, name in made(p)}
    assert not stray, stray


def test_derivations_never_remake_a_table_symbol():
    table = set(symbols.DIMENSIONS) | set(symbols.ROOFS) | set(symbols.PLAN)
    for script in sorted((ROOT.parent / "derivations").glob("*.py")):
        names = {n for _, text in made(script) for n in str(text).split()}
        assert not names & table, (script.name, sorted(names & table))


def test_the_scan_finds_a_planted_symbol(tmp_path):
    planted = tmp_path / "x.py"
    planted.write_text('import sympy as sp\n"""sp.Symbol("doc")"""\nq = sp.Symbol("q")\n')
    assert made(planted) == [(3, "q")]


def test_one_rule_for_each_kind():
    assert symbols.dimension("D") is symbols.D and symbols.quantity("C") is symbols.C
    assert symbols.dimension("I") == symroof.shard_matmul(
        symroof.mesh("tpu-v5e", "2x2"), "A[I_X, J] @ B[J, K] -> [I_X, K]").sizes["I"]


def test_as_exact_refuses_what_is_no_number_naming_it():
    # a division by zero or a non-finite float is a user's bad number: one ValueError that
    # names the argument, not Fraction's ZeroDivisionError or SymPy's "invalid input: nan"
    import pytest
    import sympy as sp

    from symroof.symbols import as_exact

    for value in ("1/0", float("nan"), float("inf")):
        with pytest.raises(ValueError, match="w_bytes must be a"):
            as_exact(value, "w_bytes")
    assert as_exact("3/4", "w_bytes") == sp.Rational(3, 4)
