"""The package's folders are its architecture: every import of a symroof module, wherever
it is written (module level, inside a function, under ``if TYPE_CHECKING:`` or any other
condition), points down the layers or stays in its own layer, and the imports form no cycle.
A lazy import inside a function is still a dependency: it is how an upper layer is reached
late (plots from surfaces), never how a lower one reaches up."""

import ast
import inspect
import sys
from pathlib import Path

import pytest

import symroof as sr

ROOT = Path(sr.__file__).parent

# lower number = lower layer; a module may import its own layer or any below it
LAYERS = {
    "symbols": 0, "conventions": 0, "cost": 1, "timerule": 1, "workload": 2, "ops": 2, "render": 1,
    "hardware": 2, "analysis": 3, "evaluate": 4, "measured": 4, "lazy": 0, "cache": 0,
    "derivation": 3, "prose": 0, "numeric": 0, "models": 5, "parallel": 5, "xla": 6,
    "plots": 7, "surfaces": 8, "problems": 8, "__init__": 9, "__main__": 9,
    "compiler": 0,  # the two backends that compile expressions (exact source, NumPy)
}


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    return ".".join(rel.parts)


def imports(path: Path, root: Path = ROOT) -> set[str]:
    """symroof modules that ``path`` imports anywhere in its code (absolute dotted names,
    a package as ``pkg.__init__``); docstring examples are strings and are not read."""
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    package = [p for p in package if p != "__init__"]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            if node.module is None:  # from . import x: x a module, or a name of the package
                for a in node.names:
                    target = root.joinpath(*base, a.name)
                    is_module = target.is_dir() or target.with_suffix(".py").exists()
                    out.add(".".join(base + ([a.name] if is_module else ["__init__"])))
            else:
                out.add(".".join(base + [node.module]))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("symroof."):
            out.add(node.module.removeprefix("symroof."))
        elif isinstance(node, ast.Import):
            out |= {a.name.removeprefix("symroof.") for a in node.names
                    if a.name.startswith("symroof.")}
    return {m for m in out if m}


def layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules it imports (packages resolved to their ``__init__``)."""
    raw = {module_name(p, root): imports(p, root) for p in root.rglob("*.py")}

    def resolve(d: str) -> str | None:
        return d if d in raw else (f"{d}.__init__" if f"{d}.__init__" in raw else None)

    return {m: {r for d in deps if (r := resolve(d)) not in (None, m)}
            for m, deps in raw.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, as the path of one found by depth-first search per cycle."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                found.append(path[path.index(d):] + [m, d] if d in path else [m, d])
            elif d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
    return found


GRAPH = graph()


def test_the_scan_sees_lazy_and_conditional_imports():
    # one of each kind, known to be in the tree: a function-level import of an upper layer
    # (surfaces reach plots late) and a TYPE_CHECKING import (params names Config's type)
    assert "plots.measured" in GRAPH["surfaces.measure"]
    assert "numeric.config" in GRAPH["numeric.params"]


def test_every_module_has_a_layer():
    assert {m.split(".")[0] for m in GRAPH} <= set(LAYERS)


def test_imports_point_down_the_layers():
    upward = [(m, d) for m, deps in GRAPH.items() for d in deps
              if d != "__init__" and layer(d) > layer(m)]
    assert not upward, upward


def test_numeric_twin_imports_only_numpy():
    for path in (ROOT / "numeric").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            others = {n.split(".")[0] for n in names} - {"numpy"} - sys.stdlib_module_names
            assert not others, (module_name(path), sorted(others))
        m = module_name(path)
        assert all(d.startswith("numeric") for d in GRAPH[m]), (m, GRAPH[m])


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "\n".join(" -> ".join(c) for c in found)


def test_a_planted_cycle_is_found(tmp_path):
    # the checker itself: a package whose a imports b at module level and b imports a
    # inside a function is one cycle
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n    return g\n")
    assert cycles(graph(pkg)) == [["a", "b", "a"]]


def test_every_public_name_is_documented_with_an_example():
    # a curated top level: each name a REPL user reaches for, with a docstring that opens
    # with a sentence and shows it at work (pytest runs the examples)
    for name in sr.__all__:
        doc = inspect.getdoc(getattr(sr, name)) or ""
        assert doc.split("\n")[0].strip() and ">>>" in doc, name


def test_moved_names_say_where_they_live():
    with pytest.raises(AttributeError, match=r"symroof.MoE .* lives in symroof.models"):
        sr.MoE  # noqa: B018
    from symroof.models import MoE

    assert MoE.__module__ == "symroof.models.spec"
    assert set(sr._MOVED).isdisjoint(sr.__all__)
    assert not hasattr(sr, "sharded_matmul")  # one function: sr.shard_matmul
    assert "plots" not in sr.__all__ and sr.plot.__name__ == "symroof.plots"


def test_a_submodule_never_hides_a_public_name():
    # importing symroof.evaluate binds the module as symroof.evaluate; the function must win
    import symroof.evaluate  # noqa: F401

    assert callable(sr.evaluate) and sr.evaluate.__module__ == "symroof.evaluate"
