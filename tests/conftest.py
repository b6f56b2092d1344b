"""Fixtures shared by the test modules.

``derivations``: every derivation script run once for the whole session, the way the notes
generator runs it (``symroof.surfaces.notes.load_script``). What the script prints as a
program is its ``if __name__ == "__main__":`` block, run on the namespace the script left,
so a script's body runs once, however many tests read it. ``cli``: the ``symroof`` command
run in this process (``main(argv)`` with its streams captured).
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
