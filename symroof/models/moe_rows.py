"""Mixture-of-experts rows: the router, the routing (scores, top-k, weights), the experts
each run on the tokens routed to them, their weighted combination, and the shared expert.

How many tokens each expert gets is an input, per MoE layer: ``tokens_per_expert`` is
``"balanced"`` (every expert gets n k / E of the n = B T tokens: as even as routing can be,
so min(E, n k) experts have their weights read, the most weight bytes a step can cost),
``"worst"`` (every token picks the same k experts: those k take all n tokens, the
heaviest load one expert, and under expert parallelism one chip, can get), or counts: one
sequence of E numbers (every MoE layer) or one such sequence per MoE layer, as the NumPy
twin's router produced them. Expert FLOPs depend only on the n k assignments; weight bytes
on which experts got any token.

>>> from symroof.symbols import B
>>> loads(B, 8, 2, 1, "balanced")[0]     # (assignments, experts read, busiest expert)
(2*B, Min(8, 2*B), B/4)
>>> loads(4, 8, 2, 2, [[3, 0, 0, 1, 2, 0, 2, 0], [4, 4, 0, 0, 0, 0, 0, 0]])
[(8, 4, 3), (8, 2, 4)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy as sp

from ..cost import Cost
from . import rows as rw

__all__ = ["ROUTINGS", "loads", "route_flops", "moe_rows"]

ROUTINGS = ("balanced", "worst")


def _counts(counts: Any, E: Any, n: Any, k: Any) -> list[int]:
    if not E.is_Integer or len(counts) != int(E):
        raise ValueError(f"tokens_per_expert needs E = {E} counts per MoE layer, got "
                         f"{len(counts)}")
    out = []
    for t in counts:
        if isinstance(t, bool) or int(t) != t or t < 0:
            raise ValueError(f"tokens_per_expert counts must be non-negative integers, got "
                             f"{t!r}")
        if sp.sympify(n).is_number and t > n:
            raise ValueError(f"tokens_per_expert: an expert got {t} tokens of a step of "
                             f"n = {n} (each token visits an expert at most once)")
        out.append(int(t))
    if sp.sympify(n * k).is_number and sum(out) != n * k:
        raise ValueError(f"tokens_per_expert adds up to {sum(out)}, but a step of n = {n} "
                         f"tokens routed to k = {k} experts each makes {n * k}")
    return out


def loads(n: Any, E: Any, k: Any, layers: int, tokens_per_expert: Any) -> list[tuple]:
    """Per MoE layer: (token-expert assignments, experts whose weights are read, tokens of
    the busiest expert)."""
    E, k = sp.sympify(E), sp.sympify(k)
    if tokens_per_expert is None or tokens_per_expert == "balanced":
        return [(n * k, sp.Min(E, n * k), n * k / E)] * layers
    if tokens_per_expert == "worst":
        return [(n * k, k, n)] * layers
    if isinstance(tokens_per_expert, str) or not isinstance(tokens_per_expert, Sequence):
        raise ValueError(f"tokens_per_expert must be one of {', '.join(ROUTINGS)}, None, or "
                         f"counts per expert, got {tokens_per_expert!r}")
    nested = len(tokens_per_expert) > 0 and not isinstance(tokens_per_expert[0], (int, float)) \
        and isinstance(tokens_per_expert[0], Sequence)
    per_layer = list(tokens_per_expert) if nested else [tokens_per_expert] * layers
    if len(per_layer) != layers:
        raise ValueError(f"tokens_per_expert gives {len(per_layer)} layers of counts; the "
                         f"model has {layers} MoE layers")
    out = []
    for counts in per_layer:
        c = _counts(counts, E, n, k)
        out.append((sp.Integer(sum(c)), sp.Integer(sum(1 for t in c if t)), sp.Integer(max(c))))
    return out


def route_flops(moe: Any) -> sp.Expr:
    """FLOPs per token of turning E logits into k weights (top-k itself is selection, 0).

    softmax 5E - 2 (max, subtract, exp, sum, divide) or sigmoid 4E (negate, exp, add 1,
    reciprocal); + E for the routing bias; + 1 per group (the sum of its two best scores);
    + 2k - 1 to renormalise the k weights; + k to scale them.

    >>> from symroof.models.spec import MoE
    >>> route_flops(MoE(E=256, k=8, F=2048, router="sigmoid", router_bias=True, groups=8,
    ...                 topk_groups=4, norm_topk=True, scale=5/2))
    1311
    """
    E, k = moe.E, moe.k
    flops = 5 * E - 2 if moe.router == "softmax" else 4 * E
    flops += E if moe.router_bias else 0
    flops += moe.groups if moe.groups > 1 else 0
    flops += 2 * k - 1 if moe.norm_topk else 0
    return flops + (k if moe.scale != 1 else 0)


def _experts(act: str, D: Any, F: Any, load: list[tuple], ab: Any, wb: Any
             ) -> dict[str, Cost]:
    """gate, up, activation, down of the routed experts, summed over experts and layers:
    each expert multiplies its t tokens (2 t D F per matrix) and its weights are read if
    t > 0; so FLOPs follow the assignments, weight bytes the experts read."""
    def mm(a: Any, read: Any, d_in: Any, d_out: Any) -> Cost:
        return Cost(flops=2 * a * d_in * d_out, weight_bytes=read * d_in * d_out * wb,
                    act_bytes=a * (d_in + d_out) * ab, act_store_bytes=a * d_out * ab)

    rows = dict.fromkeys(("gate", "up", "act", "down"), Cost())
    for assigned, read, _ in load:
        rows["gate"] += mm(assigned, read, D, F)
        rows["up"] += mm(assigned, read, D, F)
        rows["act"] += rw.activation(act, gated=True, n=assigned * F, ab=ab)
        rows["down"] += mm(assigned, read, F, D)
    return rows


def _shared(e: Any, n: Any, L_moe: Any, s: Any) -> dict[str, Cost]:
    """The shared expert on every token (and Qwen2-MoE's sigmoid gate on its output:
    x . w (2D), sigmoid (4), scale (D) per token; reads x and the expert's output, writes
    the scaled one)."""
    moe, D, ab, wb = e.moe, s.D, s.ab, s.wb
    F_s, key = moe.shared_F, rw.act_key(e.act, True)
    rows = {"moe/shared/gate": rw.linear(n, D, F_s, ab=ab, wb=wb),
            "moe/shared/up": rw.linear(n, D, F_s, ab=ab, wb=wb),
            f"moe/shared/{key}": rw.activation(e.act, gated=True, n=n * F_s, ab=ab),
            "moe/shared/down": rw.linear(n, F_s, D, ab=ab, wb=wb)}
    if moe.shared_gate:
        rows["moe/shared/scale"] = Cost(flops=2 * n * D + 4 * n + n * D, weight_bytes=D * wb,
                                        act_bytes=3 * n * D * ab, act_store_bytes=n * D * ab)
    return {key: L_moe * cost for key, cost in rows.items()}


def moe_rows(e: Any, n: Any, L_moe: Any, tokens_per_expert: Any, s: Any) -> dict[str, Cost]:
    """Every row of the experts block ``e`` (its record ``e.moe``, stream ``s``), summed
    over the L_moe MoE layers (``mlp_norm`` and ``mlp/residual`` stay with the layer).

    >>> from symroof.models import model
    >>> b = model("mixtral-8x7b").blocks
    >>> rows = moe_rows(b.experts, 1, 32, None, b.stream)
    >>> rows["moe/up"].weight_bytes == 32 * 2 * 4096 * 14336 * 2   # 2 experts read
    True
    """
    moe, D, ab, wb = e.moe, s.D, s.ab, s.wb
    E, k = moe.E, moe.k
    layers = int(L_moe) if sp.sympify(L_moe).is_Integer else None
    if layers is None and tokens_per_expert not in (None, "balanced", "worst"):
        raise ValueError("per-layer tokens_per_expert needs a number of layers")
    load = loads(n, E, k, layers or 1, tokens_per_expert)
    scale = 1 if layers else L_moe
    experts = _experts(e.act, D, moe.F, load, ab, wb)
    key = rw.act_key(e.act, True)
    rows = {"moe/router": L_moe * rw.linear(n, D, E, ab=ab, wb=wb),
            "moe/route": L_moe * Cost(flops=n * route_flops(moe),  # E logits in, k weights out
                                      weight_bytes=E * wb if moe.router_bias else 0,
                                      act_bytes=n * (E + k) * ab, act_store_bytes=n * k * ab),
            "moe/gate": scale * experts["gate"], "moe/up": scale * experts["up"],
            f"moe/{key}": scale * experts["act"], "moe/down": scale * experts["down"]}
    if moe.shared_F != 0:
        rows |= _shared(e, n, L_moe, s)
    shared_add = n * D if moe.shared_F != 0 else 0
    rows["moe/combine"] = L_moe * Cost(  # reads k outputs, k weights (and the shared one)
        flops=n * D * (2 * k - 1) + shared_add,
        act_bytes=(n * k * D + n * k + n * D + shared_add) * ab, act_store_bytes=n * D * ab)
    return rows
