"""symroof: a symbolic roofline workbench.

Costs are SymPy expressions in the dimensions of the work (B, T, S, D, F, L, H, G, d_h, V);
symroof derives intensity limits, solved crossovers, time bounds and per-op roofline tables,
and checks every symbolic cost of a transformer exactly against a counted NumPy model.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F, N
>>> sr.limit(sr.dot(N, exact=True).intensity, N)
1/2
>>> sr.leading(sr.matmul(B, D, F).intensity, small=B)
B
>>> round(float(sr.critical_batch(sr.chip("tpu-v5e"))), 2)
240.24
"""

from . import plot, plots
from .analysis import TimeBound, critical_batch, crossover, leading, limit, time
from .check import CheckReport, check
from .cost import Cost
from .derivation import Derivation
from .evaluate import evaluate, sweep_step_time
from .hardware import CHIPS, Chip, chip, symbolic_chip
from .inference import StepTime, ctx_star, kv_crossover, op_times, step_time
from .models import MODELS, from_hf_config, model
from .ops import (
    add,
    batched_matmul,
    dot,
    einsum,
    einsum_flops,
    elementwise,
    matmul,
    matvec,
    rmsnorm,
    rope,
    sharded_matmul,
    softmax,
    swiglu,
)
from .render import document, latex
from .table import RooflineTable, roofline_table
from .transformer import OP_GROUPS, Transformer, group

__all__ = [
    # costs and ops
    "Cost", "dot", "matvec", "matmul", "batched_matmul", "sharded_matmul", "elementwise",
    "add", "rmsnorm", "softmax", "swiglu", "rope", "einsum_flops", "einsum",
    # hardware
    "Chip", "chip", "symbolic_chip", "CHIPS",
    # analysis
    "TimeBound", "time", "limit", "leading", "crossover", "critical_batch",
    "evaluate", "sweep_step_time",
    # transformers
    "Transformer", "OP_GROUPS", "group", "model", "MODELS", "from_hf_config",
    "ctx_star", "kv_crossover", "step_time", "StepTime", "op_times",
    "check", "CheckReport",
    # tables, documents, plots
    "roofline_table", "RooflineTable", "Derivation", "latex", "document", "plot", "plots",
]
__version__ = "0.1.0"
