"""The oracle for one layer's training step: what XLA sends for the book's ch. 5 MLP layer
``out = gelu(x @ w_in) @ w_out`` with a squared loss, differentiated for both weights, when
``x``, ``w_in`` and ``w_out`` are sharded as a strategy says (DP, FSDP, TP, FSDP + TP); the
gradients of both weights and of ``x`` (what the layer below needs) are computed.

Like ``oracle``, it never sees a formula: JAX compiles, the HLO is read back. XLA's CPU
partitioner was seen to combine the two weight gradients' reductions into one tuple
all-reduce; ``HloCollective.operand_shapes`` keeps the pieces.

>>> case = MlpTrainCase({"X": 8}, (("X",), ()), (("X",), ()), ((), ("X",)), 256, 128, 512)
>>> case.name
'FSDP-like x[B_X, D] w_in[D_X, F] w_out[F, D_X] on {X: 8} (B=256, D=128, F=512, bf16)'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from .hlo import HloCollective, parse_collectives
from .oracle import _DTYPES, Spec, array_name, run_worker

__all__ = ["MlpTrainCase", "XlaLayer", "compile_mlp_train"]


class MlpTrainCase(NamedTuple):
    """One MLP layer's training step: x[B, D], w_in[D, F], w_out[F, D] on a named mesh."""

    mesh_shape: Mapping[str, int]
    x_spec: Spec
    w_in_spec: Spec
    w_out_spec: Spec
    B: int
    D: int
    F: int
    dtype: str = "bf16"

    @property
    def name(self) -> str:
        arr = array_name

        kind = "FSDP-like" if self.w_in_spec[0] and self.x_spec[0] else "layer"
        mesh = ", ".join(f"{a}: {s}" for a, s in self.mesh_shape.items())
        return (f"{kind} {arr('x', 'BD', self.x_spec)} {arr('w_in', 'DF', self.w_in_spec)} "
                f"{arr('w_out', 'FD', self.w_out_spec)} on {{{mesh}}} "
                f"(B={self.B}, D={self.D}, F={self.F}, {self.dtype})")


@dataclass(frozen=True)
class XlaLayer:
    """What XLA made of one layer's training step."""

    case: Any  # an MlpTrainCase, or a layers.LayerCase
    hlo: str
    collectives: tuple[HloCollective, ...]
    flops: float
    jax_version: str

    @property
    def name(self) -> str:
        return self.case.name


def compile_mlp_train(cases: Iterable[MlpTrainCase], timeout: float = 600.0) -> list[XlaLayer]:
    """Compile every case's training step in one JAX process (a case given twice compiles
    once); XLA's collectives per case."""
    cases = [MlpTrainCase(dict(c[0]), *c[1:]) for c in cases]
    if not cases:
        return []
    for c in cases:
        for spec, dims in ((c.x_spec, (c.B, c.D)), (c.w_in_spec, (c.D, c.F)),
                           (c.w_out_spec, (c.F, c.D))):
            for size, axes in zip(dims, spec):
                if size % math.prod(c.mesh_shape[a] for a in axes):
                    raise ValueError(f"{c.name}: {size} does not split over {axes}")
    requests = {repr(c): {"kind": "mlp_train", "mesh": list(c.mesh_shape.items()),
                          "x": c.x_spec, "w_in": c.w_in_spec, "w_out": c.w_out_spec,
                          "B": c.B, "D": c.D, "F": c.F, "dtype": _DTYPES[c.dtype]}
                for c in cases}  # a case given twice compiles once
    return compile_requests(cases, requests, timeout)


def compile_requests(cases: list, requests: dict, timeout: float) -> list[XlaLayer]:
    """Compile ``requests`` (``repr(case)`` -> the worker's case) in one JAX process and read
    each case's collectives back, in the order of ``cases``."""
    reply = run_worker({"devices": max(math.prod(c.mesh_shape.values()) for c in cases),
                        "cases": list(requests.values())}, timeout)
    by_case = dict(zip(requests, reply["results"]))
    results = [by_case[repr(c)] for c in cases]
    errors = [f"{c.name}: {r['error']}" for c, r in zip(cases, results) if "error" in r]
    if errors:
        raise RuntimeError("XLA could not compile:\n" + "\n".join(errors))
    out = []
    for c, r in zip(cases, results):
        if r["device_ids"] != list(range(math.prod(c.mesh_shape.values()))):
            raise RuntimeError(f"{c.name}: mesh devices are not in id order")
        colls = tuple(parse_collectives(r["hlo"], c.mesh_shape))
        out.append(XlaLayer(c, r["hlo"], colls, r["flops"], reply["jax"]))
    return out
