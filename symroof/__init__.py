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

from .lazy import attach

__version__ = "0.1.0"

#: every top-level name -> the module that defines it; a module loads when its name is first
#: read (PEP 562), so ``import symroof`` costs only what is used
_NAMES = {
    # the workload: one step of inference, one step of training
    **dict.fromkeys(("Step", "TrainStep"), ".workload"),
    # costs and ops
    "Cost": ".cost", **dict.fromkeys(("dot", "matvec", "matmul", "batched_matmul", "einsum"),
                                     ".ops"),
    # chips, meshes, collectives
    **dict.fromkeys(("chip", "symbolic_chip", "mesh", "all_gather", "reduce_scatter",
                     "all_reduce", "all_to_all", "send", "ridge"), ".hardware"),
    # analysis
    **dict.fromkeys(("time", "limit", "leading", "crossover", "critical_batch"), ".analysis"),
    "evaluate": ".evaluate", **dict.fromkeys(("latex", "readable", "Readable"), ".render"),
    # transformers: presets, step times, tables, the exact check against the NumPy twin
    "Transformer": ".models.transformer", "model": ".models.presets",
    **dict.fromkeys(("ctx_star", "kv_crossover", "step_time"), ".models.inference"),
    "sweep_step_time": ".models.sweep", "roofline_table": ".models.table",
    "check": ".models.check",
    # training: rows, memory, the exact check; plans on a mesh, whole runs, the search
    "train_ops": ".models.training", "train_memory": ".models.training_memory",
    "check_training": ".models.check_training", "train_plan": ".parallel.strategies",
    **dict.fromkeys(("training_run", "min_training_slice"), ".parallel.runs"),
    "strategy_search": ".parallel.search",
    "nearby": ".parallel.search",  # what would work where a batch gets no split
    # many chips: sharded matmuls in the book's notation, serving plans
    "shard_matmul": ".parallel.matmul", "serve": ".parallel.serving",
    "shard_array": ".parallel.sharding",
    "smallest_slice": ".parallel.sizing",
    # inverse questions: the largest model, the fewest chips; serving in the book's units
    **dict.fromkeys(("max_params", "min_chips"), ".parallel.inverse"),
    **dict.fromkeys(("serve_params", "prefill"), ".parallel.serving_book"),
    "mfu": ".parallel.runs", "flops_per_dollar": ".parallel.sizing",
    # side by side: one question for several chips, models, meshes or weight dtypes
    "compare": ".surfaces.compare",
    # conventions as data: the accounting choices, named profiles, why two tools differ
    **dict.fromkeys(("Conventions", "profile"), ".conventions"),
    "compare_conventions": ".models.convention_diff",
}
#: public names of the subpackages that are not top-level names (``from symroof.X import``)
_MOVED = {
    **dict.fromkeys(("elementwise", "add", "rmsnorm", "softmax", "swiglu", "rope",
                     "einsum_flops"), "symroof.ops"),
    **dict.fromkeys(("Chip", "CHIPS", "Mesh", "Collective", "collective"), "symroof.hardware"),
    "TimeBound": "symroof.analysis", "Derivation": "symroof.derivation",
    "document": "symroof.render", "PROFILES": "symroof.conventions",
    "ConventionsDiff": "symroof.models.convention_diff",
    **dict.fromkeys(("MoE", "MLA", "OP_GROUPS", "group", "MODELS", "from_hf_config",
                     "saved_activations", "REMAT_POLICIES"), "symroof.models"),
    **dict.fromkeys(("StepTime", "op_times"), "symroof.models.inference"),
    "CheckReport": "symroof.models.check", "RooflineTable": "symroof.models.table",
    **dict.fromkeys(("ShardedMatmul", "ServePlan", "latency_throughput",
                     "cost_per_million_tokens", "TrainPlan", "Condition", "TrainingRun",
                     "MinSlice", "SearchResult", "ShardedArray"), "symroof.parallel"),
    "Comparison": "symroof.surfaces.compare",
}
#: ``sr.plot`` is the plotting package (``symroof.plots``: one package, one name at the top)
_MODULES = {"plot": ".plots"}

__getattr__, __dir__ = attach(__name__, _NAMES, moved=_MOVED, modules=_MODULES)
__all__ = [*_NAMES, *_MODULES]
