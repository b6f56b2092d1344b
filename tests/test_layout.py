"""The package's folders are its architecture: module-level imports point down the layers
only, and form no cycle. (Imports inside functions are how an upper layer is reached lazily,
e.g. plots from surfaces; they are not module-level and are not checked here.)"""

import ast
from pathlib import Path

import symroof as sr

ROOT = Path(sr.__file__).parent

# lower number = lower layer; a module may import its own layer or any below it
LAYERS = {
    "symbols": 0, "cost": 1, "workload": 2, "ops": 2, "render": 2, "hardware": 2, "analysis": 3,
    "evaluate": 4, "derivation": 3, "prose": 0, "numeric": 0, "models": 5, "parallel": 5, "xla": 6,
    "plots": 7, "surfaces": 8, "problems": 8, "__init__": 9, "__main__": 9,
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts)


def top_level_imports(path: Path) -> set[str]:
    """symroof modules imported at module level by ``path`` (absolute dotted names)."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    package = [p for p in package if p != "__init__"]
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
            if node.module is None:  # from . import x: x a module, or a name of the package
                for a in node.names:
                    target = ROOT.joinpath(*base, a.name)
                    is_module = target.is_dir() or target.with_suffix(".py").exists()
                    out.add(".".join(base + ([a.name] if is_module else ["__init__"])))
            else:
                out.add(mod)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("symroof."):
            out.add(node.module.removeprefix("symroof."))
    return {m for m in out if m}


def layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


GRAPH = {module_name(p): top_level_imports(p) for p in ROOT.rglob("*.py")}


def test_every_module_has_a_layer():
    assert {m.split(".")[0] for m in GRAPH} <= set(LAYERS)


def test_imports_point_down_the_layers():
    upward = [(m, d) for m, deps in GRAPH.items() for d in deps
              if d.split(".")[0] not in ("__init__",) and layer(d) > layer(m)]
    assert not upward, upward


def test_numeric_twin_never_imports_the_formulas():
    for m, deps in GRAPH.items():
        if m.startswith("numeric"):
            assert all(d.startswith("numeric") for d in deps), (m, deps)


def test_no_import_cycles():
    def resolve(d: str) -> str:
        return d if d in GRAPH else f"{d}.__init__"

    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in GRAPH.get(m, ()):
            d = resolve(d)
            if d not in GRAPH or d == m:
                continue
            assert state.get(d) != 1, " -> ".join(path + [m, d])
            if d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in GRAPH:
        if m not in state:
            visit(m, [])


def test_every_public_name_resolves():
    assert all(getattr(sr, name) is not None for name in sr.__all__)
    assert sr.plot is sr.plots  # the old name of the one plotting package
