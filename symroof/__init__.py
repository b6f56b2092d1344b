"""symroof: a symbolic roofline workbench.

Costs are SymPy expressions in the dimensions of the work (B, T, S, D, F, L, H, G, d_h, V);
symroof derives intensity limits, solved crossovers, time bounds and per-op roofline tables,
and checks every symbolic cost of a transformer exactly against a counted NumPy model.

The package folders follow the architecture (arrows point down):

- the algebra core at the top: ``symbols``, ``cost``, ``ops``, ``analysis``, ``evaluate``,
  ``render``, ``derivation``;
- ``hardware/``: chip records, meshes, collectives;
- ``models/``: the symbolic transformer, presets, config import, step times, tables, check;
- ``parallel/``: sharding notation and sharded ops;
- ``numeric/``: the counted NumPy twin (NumPy only, never a formula);
- ``plots/`` and ``surfaces/`` (CLI, notes, measure) at the edge; ``xla/`` the optional
  JAX oracle.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F, N
>>> sr.limit(sr.dot(N, exact=True).intensity, N)
1/2
>>> sr.leading(sr.matmul(B, D, F).intensity, small=B)
B
>>> round(float(sr.critical_batch(sr.chip("tpu-v5e"))), 2)
240.24
"""

from . import plots
from .analysis import TimeBound, critical_batch, crossover, leading, limit, time
from .cost import Cost
from .derivation import Derivation
from .evaluate import evaluate
from .hardware import (
    CHIPS,
    Chip,
    Collective,
    Mesh,
    all_gather,
    all_reduce,
    all_to_all,
    chip,
    collective,
    mesh,
    reduce_scatter,
    ridge,
    send,
    symbolic_chip,
)
from .models import (
    MLA,
    MODELS,
    OP_GROUPS,
    REMAT_POLICIES,
    MoE,
    Transformer,
    from_hf_config,
    group,
    model,
    saved_activations,
    train_memory,
    train_ops,
)
from .models.check import CheckReport, check
from .models.check_training import check_training
from .models.inference import StepTime, ctx_star, kv_crossover, op_times, step_time
from .models.sweep import sweep_step_time
from .models.table import RooflineTable, roofline_table
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
from .parallel import (
    Condition,
    MinSlice,
    SearchResult,
    ServePlan,
    ShardedArray,
    ShardedMatmul,
    TrainingRun,
    TrainPlan,
    cost_per_million_tokens,
    flops_per_dollar,
    latency_throughput,
    max_params,
    mfu,
    min_chips,
    min_training_slice,
    nearby,
    prefill,
    serve,
    serve_params,
    shard_array,
    shard_matmul,
    smallest_slice,
    strategy_search,
    train_plan,
    training_run,
)
from .render import Readable, document, latex, readable
from .workload import Step, TrainStep

#: ``sr.plot`` is the same package as ``sr.plots`` (one plotting package since the mesh work;
#: the old name stays so that code written against it keeps running).
plot = plots

__all__ = [
    # the workload: one step of inference, one step of training
    "Step", "TrainStep",
    # costs and ops
    "Cost", "dot", "matvec", "matmul", "batched_matmul", "sharded_matmul", "elementwise",
    "add", "rmsnorm", "softmax", "swiglu", "rope", "einsum_flops", "einsum",
    # hardware
    "Chip", "chip", "symbolic_chip", "CHIPS",
    # many chips
    "Mesh", "mesh", "Collective", "collective", "all_gather", "reduce_scatter", "all_reduce",
    "all_to_all", "ShardedMatmul", "shard_matmul",
    # chip internals, point-to-point sends, sharded arrays
    "ridge", "send", "shard_array", "ShardedArray",
    # serving on a mesh
    "serve", "ServePlan", "smallest_slice", "latency_throughput", "cost_per_million_tokens",
    # analysis
    "TimeBound", "time", "limit", "leading", "crossover", "critical_batch",
    "evaluate", "sweep_step_time",
    # transformers
    "Transformer", "MoE", "MLA", "OP_GROUPS", "group", "model", "MODELS", "from_hf_config",
    "ctx_star", "kv_crossover", "step_time", "StepTime", "op_times",
    "check", "CheckReport",
    # training
    "train_ops", "train_memory", "saved_activations", "REMAT_POLICIES", "check_training",
    # training on a mesh: strategies, conditions, whole runs, search
    "train_plan", "TrainPlan", "Condition", "training_run", "TrainingRun",
    "min_training_slice", "MinSlice", "strategy_search", "SearchResult",
    # inverse questions
    "max_params", "min_chips", "serve_params", "prefill", "mfu", "flops_per_dollar",
    "nearby",  # what would work where a batch gets no split
    # tables, documents, plots
    "roofline_table", "RooflineTable", "Derivation", "latex", "document", "plot", "plots",
    # readable numbers, handouts, problem sets
    "readable", "Readable",
]
__version__ = "0.1.0"
