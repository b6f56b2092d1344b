"""Write examples/tour.ipynb, the notebook tour of symroof, with its outputs cleared.

The notebook is generated, not edited by hand: change the cells here and run
``python examples/make_tour.py``. tests/test_tour.py checks that the stored notebook equals
what this script writes and executes it (nbclient, CPU only, no network, a few seconds).
Cells stay light: presets, exact formulas and compiled sweeps; no XLA, no check of a large
model.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

PATH = Path(__file__).with_name("tour.ipynb")

#: (kind, source) in order; "md" cells are Markdown, "py" cells code
CELLS: list[tuple[str, str]] = [
    ("md", """\
# A tour of symroof

Costs are SymPy expressions in the dimensions of the work (B, T, S, D, F, L, H, G, d_h, V);
hardware enters only as an argument. In a notebook a `Cost`, a time bound, a per-op table, a
check report, a derivation and a solved condition render as LaTeX or Markdown.

Sections: **1** one op on one chip, **2** whole models, **3** meshes and collectives,
**4** sharded matmuls, **5** training on a TPU v5p slice, **6** serving, **7** sliders.

This file is written by `examples/make_tour.py` (edit that, then run it)."""),
    ("py", """\
from IPython.display import Markdown, display

import symroof as sr
from symroof.derivation import Derivation
from symroof.symbols import B, D, F, N, X"""),

    ("md", """\
## 1. One op, one chip

A dot product of length N in bf16, counted exactly (N multiplies, N - 1 adds), and its
intensity in the limit of long vectors."""),
    ("py", """\
dot = sr.dot(N, exact=True)
dot.intensity, sr.limit(dot.intensity, N)"""),
    ("md", "A matmul `X[B,D] @ W[D,F] -> Z[B,F]` in bf16; a `Cost` renders as LaTeX."),
    ("py", """\
mm = sr.matmul(B, D, F)
mm"""),
    ("py", """\
sr.leading(mm.intensity, small=B)  # the regime B << D, F: intensity B"""),
    ("md", """\
The critical batch: above it a bf16 matmul with bf16 (or int8) weights is compute-bound on a
TPU v5e; on any chip it is the ratio of peak C to bandwidth W."""),
    ("py", """\
v5e, h100 = sr.chip("tpu-v5e"), sr.chip("h100")
any_chip = sr.symbolic_chip()  # peak C, bandwidth W
sr.critical_batch(v5e), sr.critical_batch(v5e, w_bytes=1), sr.critical_batch(any_chip)"""),
    ("py", """\
t = sr.time(sr.matmul(64, 8192, 8192), v5e)  # exact seconds: t_math, t_mem, the larger wins
print(t)
t"""),
    ("md", "A derivation is a list of steps, each licensed by an assumption; it renders as "
           "Markdown."),
    ("py", """\
d = Derivation("Matmul intensity", source="How to Scale Your Model, ch. 1")
i = d.step("Intensity of X[B,D] @ W[D,F] in bf16", r"\\text{AI}", mm.intensity)
d.step("B much smaller than D and F", r"\\text{AI}", sr.leading(i, small=B), because="B << D, F")
d"""),
    ("py", """\
points = {f"B={b}": sr.matmul(b, 8192, 8192) for b in (16, 256, 4096)}
sr.plot.roofline_plot([v5e, h100], points);"""),

    ("md", """\
## 2. Whole models

Presets (`symroof.models.MODELS`) or any Llama-style Hugging Face `config.json` through
`sr.model(path)`.
`ctx_star` is the context at which decode attention FLOPs equal the matmul FLOPs, for the
preset and solved for any Transformer."""),
    ("py", """\
m = sr.model("llama-3.1-8b")
m.params, sr.ctx_star(m)"""),
    ("py", """\
sr.ctx_star(sr.Transformer())"""),
    ("py", """\
print(sr.time(m.whole(64, 1, 2047), h100))  # decode: 64 sequences, one new token after 2047"""),
    ("md", "The per-op roofline table of the same decode step renders as Markdown."),
    ("py", """\
sr.roofline_table(m, h100, batch=64, new_tokens=1, cached=2047, groups=True)"""),
    ("md", """\
Every symbolic cost is checked, op by op and exactly, against a NumPy model that counts what
it executes (here the tiny preset)."""),
    ("py", """\
sr.check(sr.model("tiny"), batch=4, new_tokens=16, cached=0)"""),
    ("py", """\
sr.plot.throughput_plot(m, h100, [1, 4, 16, 64, 256, 1024], context=2048);"""),

    ("md", """\
## 3. Meshes and collectives

A mesh is a chip, its interconnect and named axes: a 3D ICI torus on TPUs, NVLink nodes under
a fat tree on GPUs. A collective is a cost with a time on the mesh."""),
    ("py", """\
v4 = sr.mesh("tpu-v4p", "4x4x4")
gather = sr.all_gather(v4, 10**9, "XY")  # 1 GB over two axes
print(gather)
gather  # a collective is a Cost: network bytes per chip and its time on the mesh"""),
    ("py", """\
print(sr.all_reduce(sr.mesh("h100", {"N": 4, "G": 8}), 10**9, "N"))  # across 4 nodes"""),
    ("py", """\
sr.plot.collective_plot([(v4, "X"), (v4, "XY")], kinds=("all-gather", "all-reduce"));"""),

    ("md", """\
## 4. Sharded matmuls in the book's notation

`X[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]`: B split over mesh axis X, the contracting D over Y, so
the partial sums are all-reduced over Y."""),
    ("py", """\
smm = sr.shard_matmul(sr.mesh("tpu-v5e", "16x16"), "X[B_X, D_Y] @ W[D_Y, F] -> [B_X, F]",
                      B=4096, D=8192, F=32768)
print(smm.steps[0], smm.bound)"""),
    ("md", """\
On a ring of X chips of any chip, W sharded over D: gather the weights before the matmul, or
reduce the partial results after it? The crossover of their network times, solved exactly."""),
    ("py", """\
ring = sr.mesh(sr.symbolic_chip(), {"X": X})
gather_w, reduce_z = (sr.shard_matmul(ring, "X[B, D] @ W[D_X, F] -> [B, F]", strategy=s)
                      for s in ("gather", "reduce"))
display(Markdown(f"$${sr.latex((gather_w.t_comms, reduce_z.t_comms))}$$"))
sr.crossover(gather_w.t_comms, reduce_z.t_comms, D)  # reduce after the matmul iff D > 2B"""),
    ("py", """\
cases = [("X[B, D] @ W[D_X, F] -> [B, F]", "gather"), ("X[B, D] @ W[D_X, F] -> [B, F]", "reduce")]
sr.plot.sharded_matmul_plot(sr.mesh("tpu-v5p", "4x4x4"), cases, sizes={"D": 8192, "F": 32768});"""),

    ("md", """\
## 5. Training on a TPU v5p slice

One training step of Llama-3.1-8B on 128 chips, FSDP over X and Y, tensor parallelism over
Z, and the conditions the book derives for each role (from its one MLP block: the "book"
conventions; by default they are solved from a whole layer), solved for this model and chip."""),
    ("py", """\
plan = sr.train_plan("llama-3.1-8b", sr.mesh("tpu-v5p", "4x4x8"), "fsdp+tp", fsdp="XY", tp="Z",
                     batch_tokens=2**21, conventions="book")
print(plan)"""),
    ("py", """\
def verdict(c):
    return "" if c.holds is None else ("holds" if c.holds else "**does not hold**")


rows = [f"| {c.name} | ${sr.latex(c)}$ | {c.value} | {verdict(c)} |"
        for c in plan.conditions.values()]
Markdown("\\n".join(["| role | condition | plan | |", "|---|---|---:|---|", *rows]))"""),
    ("py", """\
print(sr.latex(plan.conditions["tp"]))  # the LaTeX source of one condition"""),
    ("md", "The fastest split that fits, per global batch, over every strategy and split of "
           "the mesh axes."),
    ("py", """\
print(sr.strategy_search("llama-3.1-8b", sr.mesh("tpu-v5p", "4x4x8"),
                         batch_tokens=[2**19, 2**21, 2**23]))"""),

    ("md", """\
## 6. Serving

One decode step with weights and KV cache sharded, per chip, and the latency-throughput
trade-off as the batch grows (solid until weights plus KV cache fill HBM)."""),
    ("py", """\
serving = sr.serve(m, sr.mesh("tpu-v5e", "2x2"), batch=32, context=4096)
print(serving)"""),
    ("py", """\
sr.plot.latency_throughput_plot(m, [sr.mesh("tpu-v5e", "2x2"), sr.mesh("h100", {"G": 8})],
                                context=4096);"""),

    ("md", """\
## 7. Sliders

One decode step of Llama-3.1-8B: move the batch, the context, the weights' storage dtype or
the chip and the roofline and the per-op table redraw (ipywidgets' `interact`, from the
`notebook` extra: `pip install -e ".[notebook]"`). Each redraw is one compiled table,
evaluated in microseconds; the plot's points are the table's own intensities."""),
    ("py", """\
import ipywidgets as widgets
import matplotlib.pyplot as plt

from symroof.hardware.chip import STORAGE_BYTES


def decode_step(batch=32, context=8192, dtype="bf16", chip="h100"):
    \"\"\"Llama-3.1-8B's decode step on ``chip``: its op groups under the roofline, its table.\"\"\"
    title = f"{m.name} decode on {chip}: batch {batch}, context {context:,}, {dtype} weights"
    table = sr.roofline_table(m.replace(w_bytes=STORAGE_BYTES[dtype]), sr.chip(chip),
                              batch=batch, new_tokens=1, cached=context - 1, groups=True,
                              title=title)
    rows = table.as_dict()["rows"]
    points = {name: row["intensity"] for name, row in rows.items() if row["flops"]}
    sr.plot.roofline_plot(sr.chip(chip), points, title=title)
    plt.show()
    display(table)


powers = [2**k for k in range(11)]  # 1 .. 1024 sequences
contexts = [2**k for k in range(10, 18)]  # 1k .. 128k tokens
widgets.interact(
    decode_step,
    batch=widgets.SelectionSlider(options=powers, value=32, continuous_update=False),
    context=widgets.SelectionSlider(options=contexts, value=8192, continuous_update=False),
    dtype=widgets.Dropdown(options=["bf16", "int8", "int4"]),
    chip=widgets.Dropdown(options=["h100", "h200", "b200", "a100", "tpu-v5e", "tpu-v5p",
                                   "tpu-v6e"]));"""),
]


def build() -> nbformat.NotebookNode:
    """The notebook, outputs cleared, cell ids numbered (so that it is written the same way
    every time)."""
    make = {"md": new_markdown_cell, "py": new_code_cell}
    cells = [make[kind](source, id=f"cell-{i:02d}") for i, (kind, source) in enumerate(CELLS)]
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return new_notebook(cells=cells, metadata={"kernelspec": kernel,
                                               "language_info": {"name": "python"}})


def text() -> str:
    """The notebook file's text."""
    return nbformat.writes(build()) + "\n"


if __name__ == "__main__":
    PATH.write_text(text(), encoding="utf-8")
    print(f"wrote {PATH}")
