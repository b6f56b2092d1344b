"""Plots, in one package; matplotlib is imported only when a plot is drawn.

- ``roofline``: roofline diagrams of chips with op points, and matmul time against batch.
- ``model``: a model's per-op roofline, throughput against batch, the attention share.
- ``measured``: this machine's measured roofline (``symroof measure``).
- ``network``: collective time against buffer size; sharded matmuls' compute against
  communication time.
- ``serving``: step latency against tokens/s per chip as the batch grows, HBM cap marked.
- ``conventions``: one step's per-op time under several conventions, side by side.

>>> import symroof as sr
>>> callable(sr.plot.roofline_plot)
True
"""

from .conventions import conventions_plot
from .model import attention_share_plot, ops_roofline_plot, throughput_plot
from .network import collective_plot, sharded_matmul_plot
from .roofline import batch_plot, roofline_plot
from .serving import latency_throughput_plot

__all__ = ["roofline_plot", "batch_plot", "ops_roofline_plot", "throughput_plot",
           "attention_share_plot", "collective_plot", "sharded_matmul_plot",
           "latency_throughput_plot", "conventions_plot"]
