"""Parallelism: the book's sharding notation and sharded ops on a mesh; serving plans;
training strategies on named mesh axes (``train_plan``), their solved conditions, whole
runs and the vectorised strategy search.

>>> import symroof as sr
>>> mm = sr.shard_matmul(sr.mesh("tpu-v5e", "16x16"), "X[B_X, D] @ W[D, F_Y] -> [B_X, F_Y]",
...                      B=4096, D=8192, F=8192)
>>> mm.steps, mm.compute.flops == 2 * 4096 * 8192 * 8192 // 256
((), True)
"""

from ..lazy import attach

#: public name -> its module, imported when the name is first read (see symroof.lazy)
_NAMES = {
    "Condition": ".conditions",
    **dict.fromkeys(("max_params", "min_chips", "slices"), ".inverse"),
    **dict.fromkeys(("STRATEGIES", "ShardedMatmul", "MatmulStep", "shard_matmul"), ".matmul"),
    **dict.fromkeys(("MinSlice", "TrainingRun", "mfu", "min_training_slice", "training_run"),
                    ".runs"),
    **dict.fromkeys(("SearchResult", "strategy_search", "nearby"), ".search"),
    **dict.fromkeys(("ServePlan", "serve"), ".serving"),
    **dict.fromkeys(("ParamModel", "PrefillPlan", "prefill", "serve_params"), ".serving_book"),
    "ici_condition": ".serving_2d",
    **dict.fromkeys(("Layout", "Operands", "operands", "redistribute", "shard",
                     "local_act_bytes"), ".partition"),
    **dict.fromkeys(("ArraySpec", "parse_array", "parse_matmul", "ShardedArray",
                     "shard_array"), ".sharding"),
    **dict.fromkeys(("cost_per_million_tokens", "flops_per_dollar", "kv_evictions",
                     "latency_throughput",
                     "moe_critical_batch", "prefill_decode_ratio",
                     "smallest_slice"), ".sizing"),
    **dict.fromkeys(("TrainPlan", "train_plan"), ".strategies"),
}
__getattr__, __dir__ = attach(__name__, _NAMES)
__all__ = list(_NAMES)
