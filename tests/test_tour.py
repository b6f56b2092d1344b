"""examples/tour.ipynb: stored exactly as examples/make_tour.py writes it (outputs cleared),
and executed top to bottom in a kernel (nbclient, CPU only, no network; a few seconds), its
sliders included (ipywidgets draws the first view headless), every figure it shows checked
for overlapping texts.

Without nbclient, nbformat or ipykernel (the ``test`` extra) or ipywidgets (the ``notebook``
extra) these tests skip with that reason; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NEEDED = ("nbclient", "nbformat", "ipykernel", "ipywidgets")


def need_notebook_tools() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = f"{', '.join(missing)} not installed: pip install -e \".[test,notebook]\""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def make_tour():
    need_notebook_tools()
    spec = importlib.util.spec_from_file_location("make_tour", EXAMPLES / "make_tour.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stored_notebook_is_the_generated_one(make_tour):
    import nbformat

    stored = (EXAMPLES / "tour.ipynb").read_text(encoding="utf-8")
    assert stored == make_tour.text(), "run: python examples/make_tour.py"
    nb = nbformat.reads(stored, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


#: run first in the kernel: every figure the inline backend prints is checked for
#: overlapping texts first (symroof.plots.overlaps), the answers kept in _overlaps
CHECK_FIGURES = """\
import matplotlib.backend_bases as _bases
from symroof.plots.overlaps import text_overlaps as _text_overlaps

_overlaps, _print_figure = [], _bases.FigureCanvasBase.print_figure


def _checked(canvas, *args, **kwargs):
    _overlaps.append(_text_overlaps(canvas.figure))
    return _print_figure(canvas, *args, **kwargs)


_bases.FigureCanvasBase.print_figure = _checked"""


def short_polls(client_class: type) -> type:
    """``client_class`` with the shell channel read in polls of at most a second.

    nbclient waits for a cell's reply with one poll as long as the cell's timeout; after the
    ipywidgets cell that poll sometimes misses the reply's arrival and returns only when the
    timeout runs out (jupyter/nbclient#312): the tour then took 120 s instead of 5. A new
    poll finds the waiting reply at once, so the same deadline is kept in short polls.
    """
    from queue import Empty
    from time import monotonic

    from jupyter_core.utils import ensure_async

    class ShortPolls(client_class):
        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            get_msg = kc.shell_channel.get_msg

            async def polled(timeout: float | None = None, **kwargs):
                deadline = None if timeout is None else monotonic() + timeout
                while True:
                    left = 1.0 if deadline is None else max(0.0, deadline - monotonic())
                    try:
                        return await ensure_async(get_msg(timeout=min(1.0, left), **kwargs))
                    except Empty:
                        if deadline is not None and monotonic() >= deadline:
                            raise

            kc.shell_channel.get_msg = polled
            return kc

    return ShortPolls


def test_notebook_executes_and_renders(make_tour, tmp_path, monkeypatch):
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")  # CPU only, should anything load JAX
    nb = make_tour.build()
    nb.cells.insert(0, new_code_cell(CHECK_FIGURES))  # test-only cells, first and last
    nb.cells.append(new_code_cell("print('figures shown:', len(_overlaps), "
                                  "[o for o in _overlaps if o])"))
    short_polls(NotebookClient)(nb, timeout=120, kernel_name="python3", resources={
        "metadata": {"path": str(tmp_path)}}).execute()  # raises on error
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    plots = sum(".plot." in c.source for c in nb.cells if c.cell_type == "code")
    # every figure the tour shows (the slider's first view too) has no overlapping texts
    assert nb.cells[-1].outputs[0]["text"] == f"figures shown: {plots} []\n"
    # the sliders' first view: the roofline and the table, in the interact output widget
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    shown = [o for w in state.values() for o in w["state"].get("outputs", [])]
    assert {"image/png", "text/markdown"} <= {k for o in shown for k in o.get("data", {})}
    table = next(o["data"]["text/markdown"] for o in shown
                 if "text/markdown" in o.get("data", {}))
    assert "llama-3.1-8b decode on h100: batch 32, context 8,192, bf16 weights" in table
    assert "| attention core |" in table and "warning" not in table  # 42 GB fits in 80
    kinds = {key for o in outputs for key in o.get("data", {})}
    assert {"text/latex", "text/markdown", "image/png"} <= kinds  # Cost, tables, plots
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    for expected in ("t_math 1.04 ms, t_mem 9.61 ms",  # the README's decode step
                     "all-gather over X, Y (16 chips) of 1 GB: 5.56 ms",
                     "fsdp+tp (fsdp: X,Y; tp: Z)", "Y < 5.62",  # TP's condition in LaTeX, readable
                     "splits x 3 batches", "tokens/s per chip"):
        assert expected in printed
    crossover = [o["data"]["text/plain"] for o in outputs if o.get("data", {}).get(
        "text/latex") == "$\\displaystyle 2 B$"]
    assert crossover == ["2*B"]  # gather iff D < 2B, solved exactly
