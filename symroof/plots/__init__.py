"""Plots, in one package; matplotlib is imported only when a plot is drawn.

- ``roofline``: roofline diagrams of chips with op points, and matmul time against batch.
- ``model``: a model's per-op roofline, throughput against batch, the attention share.
- ``measured``: this machine's measured roofline (``symroof measure``).
- ``network``: collective time against buffer size; sharded matmuls' compute against
  communication time.
- ``compare``: a side-by-side comparison's bars (``sr.compare(...).plot()``).
- ``serving``: step latency against tokens/s per chip as the batch grows, HBM cap marked.
- ``conventions``: one step's per-op time under several conventions, side by side.

Each name loads its module when first read (PEP 562), so drawing one plot imports only
what that plot needs (a roofline does not load the models, the serving plans or the
training code).

>>> import symroof as sr
>>> callable(sr.plot.roofline_plot)
True
"""

from ..lazy import attach

#: every public name -> the module that defines it, loaded when the name is first read
_NAMES = {
    **dict.fromkeys(("roofline_plot", "batch_plot"), ".roofline"),
    **dict.fromkeys(("ops_roofline_plot", "throughput_plot", "attention_share_plot"),
                    ".model"),
    **dict.fromkeys(("collective_plot", "sharded_matmul_plot"), ".network"),
    "latency_throughput_plot": ".serving", "compare_plot": ".compare",
    "conventions_plot": ".conventions",
}

__getattr__, __dir__ = attach(__name__, _NAMES)
__all__ = list(_NAMES)
