"""Fixtures shared by the test modules.

``derivations``: every derivation script run once for the whole session, the way the notes
generator runs it (``symroof.surfaces.notes.load_script``). What the script prints as a
program is its ``if __name__ == "__main__":`` block, run on the namespace the script left,
so a script's body runs once, however many tests read it. ``cli``: the ``symroof`` command
run in this process (``main(argv)`` with its streams captured).

Under xdist (``-n auto``) a session or module fixture is built once per *worker* that runs a
test needing it, so the tests of the modules in :data:`GROUPS` go to one worker per group
(:func:`pytest_xdist_make_scheduler`): the derivations and each costly module fixture are
built once a run, not once a worker; every other test goes wherever a worker is free.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from symroof.surfaces import notes as notes_module
from symroof.surfaces.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "derivations").glob("[0-9][0-9]_*.py"))


#: the test modules that read the session's derivations (``derivations``, ``cached_run_script``)
READ_DERIVATIONS = ("test_cli", "test_derivations", "test_figure_overlaps", "test_handout",
                    "test_notes")
#: the other test modules whose tests share a module fixture
SHARE_MODULE_FIXTURES = ("test_benchmarks", "test_compare", "test_conventions",
                         "test_llm_analysis", "test_measure", "test_measure_jax",
                         "test_models_list", "test_plots", "test_render", "test_search",
                         "test_tour", "test_xla", "test_xla_layers", "test_xla_property",
                         "test_xla_training")
#: test module -> its group: the tests of one group run on one worker (the derivations'
#: readers together, each other module on its own); tests/test_suite_groups.py checks that
#: every module that needs to be is listed
GROUPS = {f"tests/{name}.py": "derivations" for name in READ_DERIVATIONS} | {
    f"tests/{name}.py": f"tests/{name}.py" for name in SHARE_MODULE_FIXTURES}


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's default (``--dist load``) with the tests of each group of :data:`GROUPS` sent
    to one worker as one unit (largest first); any other ``--dist`` is xdist's own."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return GROUPS.get(nodeid.split("::")[0], nodeid)

    return GroupScheduling(config, log)


@dataclass
class ScriptRun:
    """One derivation script, run once: its namespace (None if it failed), what it printed
    while loaded as notes (must be nothing), what it prints as a program, and its error."""

    script: Path
    namespace: dict[str, Any] | None = None
    printed: str = ""
    program: str = ""
    error: BaseException | None = field(default=None, repr=False)

    def ok(self) -> dict[str, Any]:
        """The namespace, or the script's own error raised again (in the test that reads it)."""
        if self.error is not None:
            raise self.error
        return self.namespace

    def section(self) -> tuple[str, str, list]:
        return notes_module.section(self.script, self.ok())


def _main_block(script: Path) -> Any:
    """The code of the script's ``if __name__ == "__main__":`` blocks, compiled."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    body = [stmt for node in tree.body if isinstance(node, ast.If)
            and ast.unparse(node.test).replace("'", '"') == '__name__ == "__main__"'
            for stmt in node.body]
    return compile(ast.Module(body=body, type_ignores=[]), str(script), "exec")


def _run(script: Path, figures: Path) -> ScriptRun:
    run = ScriptRun(script)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            run.namespace = notes_module.load_script(script, figures)
        program = io.StringIO()
        old = os.environ.get("SYMROOF_OUT")
        os.environ["SYMROOF_OUT"] = str(figures)
        try:
            with contextlib.redirect_stdout(program):
                exec(_main_block(script), {**run.namespace, "__name__": "__main__"})
        finally:
            if old is None:
                os.environ.pop("SYMROOF_OUT", None)
            else:
                os.environ["SYMROOF_OUT"] = old
        run.program = program.getvalue()
    except Exception as err:  # noqa: BLE001 - kept, and raised by the tests of this script
        run.error = err
    run.printed = printed.getvalue()
    return run


@pytest.fixture(scope="session")
def derivations(tmp_path_factory) -> dict[str, Any]:
    """``{"out": folder, "figures": out / "figures", "runs": {name: ScriptRun},
    "overlaps": {figure file name: the texts that overlap in it}}`` (each figure checked as
    it is saved, :func:`symroof.plots.overlaps.text_overlaps`)."""
    from unittest import mock

    from matplotlib.figure import Figure

    from symroof.plots.overlaps import text_overlaps

    out = tmp_path_factory.mktemp("derivations")
    figures = out / "figures"
    overlaps: dict[str, list] = {}
    savefig = Figure.savefig

    def checked(fig: Figure, path: Any, *args: Any, **kwargs: Any) -> Any:
        done = savefig(fig, path, *args, **kwargs)
        overlaps[Path(path).name] = text_overlaps(fig)
        return done

    with mock.patch.object(Figure, "savefig", checked):
        runs = {s.name: _run(s, figures) for s in SCRIPTS}
    return {"out": out, "figures": figures, "runs": runs, "overlaps": overlaps}


@pytest.fixture(scope="session")
def cached_run_script(derivations):
    """A stand-in for ``notes.run_script`` that hands out the session's runs of the shipped
    scripts (any other script runs for real)."""
    runs = derivations["runs"]

    def run_script(path: Any, figures: Any) -> tuple[str, str, list]:
        run = runs.get(Path(path).name)
        if run is None or Path(path).resolve() != run.script.resolve():
            return notes_module.section(path, notes_module.load_script(path, figures))
        return run.section()

    return run_script


@dataclass
class CliRun:
    """What ``symroof ARGS`` did, run in this process."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _cwd(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(argv: list[str], cwd: Path | None = None) -> CliRun:
    """``symroof`` with ``argv``, in this process: exit status (argparse's exits included),
    stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _cwd(cwd or Path.cwd()):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    return CliRun(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def cli():
    """:func:`run_cli`: ``cli(["report", ...])`` gives a :class:`CliRun`."""
    return run_cli
