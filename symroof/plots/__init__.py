"""Plots, in one package; matplotlib is imported only when a plot is drawn.

- ``roofline``: roofline diagrams of chips with op points, and matmul time against batch.
- ``model``: a model's per-op roofline, throughput against batch, the attention share.
- ``measured``: this machine's measured roofline (``symroof measure``).

>>> import symroof as sr
>>> callable(sr.plots.roofline_plot)
True
"""

from .model import attention_share_plot, ops_roofline_plot, throughput_plot
from .roofline import batch_plot, roofline_plot

__all__ = ["roofline_plot", "batch_plot", "ops_roofline_plot", "throughput_plot",
           "attention_share_plot"]
