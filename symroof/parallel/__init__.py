"""Parallelism: the book's sharding notation and sharded ops on a mesh; serving plans;
training strategies on named mesh axes (``train_plan``), their solved conditions, whole
runs and the vectorised strategy search.

>>> import symroof as sr
>>> mm = sr.shard_matmul(sr.mesh("tpu-v5e", "16x16"), "X[B_X, D] @ W[D, F_Y] -> [B_X, F_Y]",
...                      B=4096, D=8192, F=8192)
>>> mm.steps, mm.compute.flops == 2 * 4096 * 8192 * 8192 // 256
((), True)
"""

from .conditions import Condition
from .inverse import max_params, min_chips
from .matmul import STRATEGIES, ShardedMatmul, Step, shard_matmul
from .runs import MinSlice, TrainingRun, mfu, min_training_slice, training_run
from .search import SearchResult, nearby, strategy_search
from .serving import ServePlan, serve
from .serving_book import ParamModel, PrefillPlan, ici_condition, prefill, serve_params
from .sharding import ArraySpec, ShardedArray, parse_array, parse_matmul, shard_array
from .sizing import (
    cost_per_million_tokens,
    flops_per_dollar,
    kv_evictions,
    latency_throughput,
    moe_critical_batch,
    prefill_decode_ratio,
    slices,
    smallest_slice,
)
from .strategies import TrainPlan, train_plan

__all__ = ["shard_matmul", "ShardedMatmul", "Step", "STRATEGIES", "ArraySpec", "parse_array",
           "parse_matmul", "serve", "ServePlan", "smallest_slice", "slices",
           "latency_throughput", "kv_evictions", "prefill_decode_ratio",
           "cost_per_million_tokens", "moe_critical_batch",
           "train_plan", "TrainPlan", "Condition", "training_run", "TrainingRun",
           "min_training_slice", "MinSlice", "strategy_search", "SearchResult",
           # inverse questions
           "max_params", "min_chips",
           # serving in the book's units
           "serve_params", "ParamModel", "prefill", "PrefillPlan", "ici_condition",
           "mfu", "flops_per_dollar",
           "shard_array", "ShardedArray",
           "nearby"]
