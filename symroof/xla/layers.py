"""The oracle for whole transformer layers: what XLA sends for one Llama-style layer when its
arrays are sharded as a serving or training layout says.

Four programs, all written in JAX in the worker (``_worker.py``), never from a formula:

- ``"decode"``: one decode step's forward: RMSNorm, q/k/v projections with GQA, the new
  token's attention over a KV cache of S positions (the token written at S - 1), o_proj,
  residual, RMSNorm, SwiGLU MLP, residual; returns the layer's output and both caches.
- ``"train"``: one layer's training step: RMSNorm, q/k/v, causal attention over T tokens,
  o_proj, residual, RMSNorm, SwiGLU MLP, residual, a squared loss; the gradients of every
  weight and of x (what the layer below needs), each sharded like its array. Its norms have
  no gain, so that no gradient but the seven weight matrices' travels (a gain's would add
  one AllReduce of D per norm under data parallelism).
- ``"moe_forward"``, ``"moe_train"``: a mixture of experts' layer, its forward pass (the
  output) or its training step: the attention block as in ``"train"``, then RMSNorm, a
  softmax router over E experts (``w_router[D, E]``), each token's top k, and capacity-based
  dispatch (GShard, Switch): the tokens in N groups (one a data shard), C slots per expert
  and group in a dense buffer [E, N, C, D] (``"by_group"``: in the tokens' layout as the
  one-hot dispatch writes it and the combine reads it; ``"by_expert"``: in the experts'
  layout, the AllToAll between them), each expert's SwiGLU (``w_gate, w_up[E, D, F]``,
  ``w_down[E, F, D]``), the combine weighted by the router's probabilities, residual.
  ``sizes`` gives E, N, C and k too.

The attention shares each KV head among H/G query heads by repeating it (``gqa="repeat"``,
the default) or by reshaping the queries (``"grouped"``); see ``LayerCase``.

No RoPE: it is elementwise per head and moves nothing. A case names its arrays' dimensions
by letter (``LAYER_ARRAYS``: B batch, S KV length, D, F, H, G, d = d_h, b sequences and T
tokens per sequence in training) and gives each array a spec, one tuple of mesh axes per
dimension; ``"q"`` and ``"o"`` (decode) constrain the queries [B, 1, H, d_h] and the
attention output [B, H, d_h] where a layout moves them (the AllToAlls of a KV cache split
over the batch).

>>> case = LayerCase("train", {"X": 8}, {"b": 16, "T": 8, "D": 128, "F": 512, "H": 8,
...                  "G": 8, "d": 16}, {"x": (("X",), (), ()), "w_up": ((), ())}, label="dp")
>>> case.name
'dp: one training step of one layer on {X: 8} (b=16, T=8, D=128, F=512, H=8, G=8, d=16, bf16)'
>>> case.spec("wq")       # not given: replicated
((), (), ())
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from ._worker import LAYER_ARRAYS
from .oracle import _DTYPES
from .training import XlaLayer, compile_requests

__all__ = ["LAYER_ARRAYS", "LayerCase", "compile_layers"]

Axes = tuple[str, ...]
_WHAT = {"decode": "one decode step of one layer", "train": "one training step of one layer",
         "moe_forward": "one forward pass of one MoE layer",
         "moe_train": "one training step of one MoE layer"}
#: arrays beyond the inputs: the decode layer's output, and the queries and attention output
#: that a layout may constrain ("1": the one new token)
_EXTRA = {"decode": {"x_out": "BD", "h": "BD", "q_proj": "B1Hd", "q": "B1Hd", "o": "BHd"},
          "train": {}, "moe_forward": {"x_out": "bTD", "by_expert": "ENCD", "by_group": "ENCD"},
          "moe_train": {"by_expert": "ENCD", "by_group": "ENCD"}}
#: intermediates: constrained only where a case says
_CONSTRAINED = ("h", "q_proj", "q", "o", "by_expert", "by_group")
_GQA = ("repeat", "grouped")  # how the attention shares a KV head (LayerCase.gqa)


class LayerCase(NamedTuple):
    """One layer's program (``layer``: "decode", "train", "moe_forward" or "moe_train") on
    a named mesh: ``sizes`` by letter, ``specs`` by array name (arrays left out are
    replicated); ``gqa`` how the attention shares a KV head among H/G query heads:
    ``"repeat"`` (each KV head repeated, as Hugging Face's Llama does) or ``"grouped"``
    (the queries reshaped to [.., G, H/G, ..])."""

    layer: str
    mesh_shape: Mapping[str, int]
    sizes: Mapping[str, int]
    specs: Mapping[str, tuple[Axes, ...]]
    dtype: str = "bf16"
    label: str = "layer"
    gqa: str = "repeat"

    @property
    def name(self) -> str:
        mesh = ", ".join(f"{a}: {s}" for a, s in self.mesh_shape.items())
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"{self.label}: {_WHAT[self.layer]} on {{{mesh}}} ({sizes}, {self.dtype})"

    def dims(self, array: str) -> str:
        """The letters of ``array``'s dimensions."""
        return {**LAYER_ARRAYS[self.layer], **_EXTRA[self.layer]}[array]

    def spec(self, array: str) -> tuple[Axes, ...]:
        """``array``'s spec, one tuple of mesh axes per dimension (replicated if not given)."""
        return tuple(tuple(d) for d in self.specs.get(array, ((),) * len(self.dims(array))))


def _check(case: LayerCase) -> None:
    if case.layer not in _WHAT:
        raise ValueError(f"layer must be one of {', '.join(_WHAT)}, got {case.layer!r}")
    if case.dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {case.dtype!r}; known: {', '.join(_DTYPES)}")
    if case.gqa not in _GQA:
        raise ValueError(f"gqa must be one of {', '.join(_GQA)}, got {case.gqa!r}")
    known = {**LAYER_ARRAYS[case.layer], **_EXTRA[case.layer]}
    if case.layer.startswith("moe"):
        n, N = case.sizes, case.sizes.get("N", 0)
        if not 1 <= n.get("k", 0) <= n.get("E", 0) or N < 1 or (n["b"] * n["T"]) % N:
            raise ValueError(f"{case.name}: a MoE layer needs 1 <= k <= E experts a token "
                             f"and N groups that split the b T tokens evenly")
    if unknown := set(case.specs) - set(known):
        raise ValueError(f"{case.name}: no array {sorted(unknown)} in a {case.layer} layer; "
                         f"its arrays: {', '.join(known)}")
    for array in known:
        spec = case.spec(array)
        if len(spec) != len(known[array]):
            raise ValueError(f"{case.name}: {array} has {len(known[array])} dimensions "
                             f"({known[array]}), its spec {spec} has {len(spec)}")
        for letter, axes in zip(known[array], spec):
            if missing := set(axes) - set(case.mesh_shape):
                raise ValueError(f"{case.name}: {array} names mesh axes {sorted(missing)} "
                                 f"not in the mesh {dict(case.mesh_shape)}")
            size = 1 if letter == "1" else case.sizes[letter]
            if size % math.prod(case.mesh_shape[a] for a in axes):
                raise ValueError(f"{case.name}: {array}'s {letter} = {size} does not split "
                                 f"evenly over {axes}")


def _specs(case: LayerCase) -> dict[str, list[list[str]]]:
    """Every input's spec (and the output's), and q and o only where the case constrains them."""
    arrays = [a for a in {**LAYER_ARRAYS[case.layer], **_EXTRA[case.layer]}
              if a not in _CONSTRAINED or a in case.specs]
    return {a: [list(d) for d in case.spec(a)] for a in arrays}


def compile_layers(cases: Iterable[LayerCase], timeout: float = 600.0) -> list[XlaLayer]:
    """Compile every case in one JAX process; XLA's collectives per case (needs JAX; a case
    given twice compiles once). Bad cases are refused before JAX starts.

    >>> compile_layers([LayerCase("train", {"X": 8}, {"b": 4, "T": 8, "D": 128, "F": 512,
    ...                 "H": 8, "G": 8, "d": 16}, {"x": (("X",), (), ())})])
    Traceback (most recent call last):
    ...
    ValueError: layer: one training step ...: x's b = 4 does not split evenly over ('X',)
    """
    cases = list(cases)
    for c in cases:
        _check(c)
    if not cases:
        return []
    requests = {repr(c): {"kind": "layer", "layer": c.layer, "mesh": list(c.mesh_shape.items()),
                          "sizes": dict(c.sizes), "specs": _specs(c), "dtype": _DTYPES[c.dtype],
                          "gqa": c.gqa}
                for c in cases}  # a case given twice compiles once
    return compile_requests(cases, requests, timeout)
