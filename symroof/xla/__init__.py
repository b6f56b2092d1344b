"""The XLA oracle: which collectives does XLA's SPMD partitioner insert for a sharded matmul?

The independent side for collectives, as the NumPy twin is for FLOPs and bytes: it compiles
`jnp.dot` with JAX on a virtual CPU mesh, reads the partitioned HLO, and never sees symroof's
formulas (nothing here imports the rest of symroof).

- `parse_collectives(hlo_text, mesh_shape)`: pure text, no JAX; every collective with its
  mesh axes, groups, per-device shapes and element counts.
- `compile_matmuls(cases)`: one fresh JAX process per batch of cases (needs
  `pip install -e ".[jax]"`); partitioned HLO, collectives and per-device FLOPs per case.
- `compare(predicted, observed)`: an `OracleReport` of disagreements and notes (valid
  alternatives, such as an all-reduce where a reduce-scatter is the minimum), and the XLA
  collectives nothing predicted (`unexpected`, as data).
- `compile_layers(cases)`: whole Llama-style layers (`LayerCase`): one decode step's
  forward (RMSNorm, GQA attention over a KV cache, SwiGLU, residuals) or one layer's
  training step (causal attention and the book's MLP, every gradient), sharded per array.
  `symroof.xla.check_layers.check_layers(plans)` compiles one layer of each serving plan
  (`sr.serve`, layouts "1d" and "2d") and training plan (`sr.train_plan`: DP, FSDP, TP,
  FSDP + TP) under the plan's layout, in one JAX process, and compares XLA's collectives with
  the plan's per-layer ones (`ServePlan.layer_comm`, `TrainPlan.layer`).

Reading one line of real HLO (JAX 0.10.2, `A[M, K_X] @ B[K_X, N]` on `{X: 4}`, bf16; the CPU
backend reduced in f32):

>>> from symroof.xla import compare, parse_collectives
>>> line = ("%all-reduce.1 = f32[64,256]{1,0} all-reduce(%ynn_fusion), channel_id=1, "
...         "replica_groups=mesh['axis_0'=1,'axis_1'=4] {'axis_1'}, use_global_device_ids=true")
>>> text = "%ynn_fusion = f32[64,256]{1,0} fusion(%a, %b), kind=kCustom\\n" + line
>>> [c] = parse_collectives(text, {"X": 4})
>>> c.kind, c.axes, c.groups, c.elements_in, c.elements_out, c.dtype
('all-reduce', ('X',), ((0, 1, 2, 3),), 16384, 16384, 'f32')
>>> print(compare([{"kind": "all-reduce", "axes": ("X",), "elements_in": 64 * 256,
...                 "elements_out": 64 * 256}], [c], case="A[M, K_X] @ B[K_X, N]"))
A[M, K_X] @ B[K_X, N]: OK (1 of 1 predicted collectives matched exactly, 0 notes)
"""

from .compare import OracleReport, compare
from .hlo import KINDS, HloCollective, parse_collectives
from .layers import LayerCase, compile_layers
from .oracle import MatmulCase, XlaMatmul, compile_matmuls, matmul_case

__all__ = [
    "KINDS",
    "HloCollective",
    "LayerCase",
    "MatmulCase",
    "OracleReport",
    "XlaMatmul",
    "compare",
    "compile_layers",
    "compile_matmuls",
    "matmul_case",
    "parse_collectives",
]
