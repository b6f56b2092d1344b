"""Output of the ``symroof`` command (:mod:`symroof.surfaces.cli` parses and dispatches):
JSON numbers, tables as aligned text or Markdown, and the critical-batch answer in each format.

>>> print(table("markdown", [["a", "b"], ["1", "2"]]))
| a | b |
|---|---|
| 1 | 2 |
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..hardware import dtype_bytes
from ..render import fmt_si

__all__ = ["num", "table", "critical_batch_text", "report_widths", "report_title", "roofs",
           "network_text", "network_data", "model_structure"]

WIDTHS = ("w_bytes", "act_bytes", "kv_bytes")


def num(x: Any) -> int | float | None:
    """For JSON: exact integers stay integers, other finite values become floats, oo null."""
    x = sp.sympify(x)
    return None if not x.is_finite else int(x) if x.is_Integer else float(x)


def table(fmt: str, rows: list[list[str]], extra: str = "") -> str:
    """``rows`` (header first) as a Markdown table or as aligned text, then ``extra``."""
    if fmt == "markdown":
        head = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return "\n".join(head + ["| " + " | ".join(r) + " |" for r in rows[1:]]) + extra
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in rows) + extra


def critical_batch_text(fmt: str, head: str, shown: str, formula: str, chip_roofs: str) -> str:
    """The critical-batch answer: a heading, then B*, its formula and the chip's roofs."""
    if fmt == "markdown":
        return f"**{head}**\n\n- `B* = {shown}`\n- formula: `{formula}`\n- `{chip_roofs}`"
    return f"{head}\n  B* = {shown}\n  formula: {formula}\n  {chip_roofs}"


def report_widths(flags: dict[str, Any], dtype: str | None,
                  model: Any) -> tuple[dict[str, Any], list[str]]:
    """The byte widths a report uses: each --*-bytes flag that is set, else ``dtype``'s width
    if --dtype was given, else the model's; and the names of those that came from --dtype."""
    from_dtype = [k for k in WIDTHS if flags[k] is None] if dtype else []
    widths = {k: flags[k] if flags[k] is not None else
              dtype_bytes(dtype) if k in from_dtype else getattr(model, k) for k in WIDTHS}
    return widths, from_dtype


def report_title(name: str, phase: str, batch: int, context: int, new: int, cached: int,
                 attention: str, dtype: str, widths: dict[str, Any],
                 from_dtype: list[str]) -> str:
    """The report's title: the query, the peak's dtype and the byte widths actually used."""
    used = ", ".join(f"{k}={widths[k]}" for k in WIDTHS)
    named = "" if len(from_dtype) == len(WIDTHS) else ", ".join(from_dtype) + " "
    origin = f" ({named}from --dtype)" if from_dtype else ""
    return (f"{name} {phase}: batch {batch}, context {context} ({new} new, {cached} cached "
            f"per sequence), {attention} attention, {dtype} peak, {used}{origin}")


def roofs(peak: Any, hbm_bw: Any, ridge: sp.Expr) -> str:
    """``C = ..., W = ..., C/W = ...``: the two roofs and the ridge between them."""
    return (f"C = {fmt_si(peak, 'FLOP/s')}, W = {fmt_si(hbm_bw, 'B/s')}, "
            f"C/W = {ridge} = {float(ridge):.2f} FLOP/B")


def network_text(net: Any) -> str:
    """A chip's network in a few words: ``torus 16x16 (host 4x2), hop 1 us, DCN 3.12 G``, or
    the switch levels' degrees with W_GPU and W_node and the ring-step latencies in a node
    and across nodes (``switched 8x32x4, W_GPU 450 G, W_node 400 G, hop 600 ns / 2.7 us``)."""
    if net is None:
        return "-"
    if net.kind == "torus":
        return (f"torus {'x'.join(map(str, net.pod))} (host {'x'.join(map(str, net.host))}), "
                f"hop {fmt_si(net.hop_latency, 's')}, DCN {fmt_si(net.dcn_bw)}")
    text = f"switched {'x'.join(str(lv.degree) for lv in net.levels)}, " \
           f"W_GPU {fmt_si(net.levels[0].bw_per_gpu)}"
    if len(net.levels) > 1:
        text += f", W_node {fmt_si(net.node_egress)}"
    hops = fmt_si(net.hop_latency, "s")
    if len(net.levels) > 1 and net.net_latency != net.hop_latency:
        hops += f" / {fmt_si(net.net_latency, 's')}"
    return f"{text}, hop {hops}"


def network_data(net: Any) -> dict[str, Any] | None:
    """A chip's network for JSON: every field, numbers as ``num`` gives them."""
    if net is None:
        return None
    if net.kind == "torus":
        return {"kind": "torus", "rank": net.rank, "pod": list(net.pod),
                "pod_chips": net.pod_chips, "host": list(net.host), "wrap_rule": net.wrap_rule,
                "hop_latency": num(net.hop_latency), "pcie_bw": num(net.pcie_bw),
                "dcn_bw": num(net.dcn_bw), "slices": [list(sh) for sh in net.offered()]}
    levels = [{"name": lv.name, "degree": lv.degree, "gpus_per_child": lv.gpus_per_child,
               "bw_per_gpu": num(lv.bw_per_gpu), "sharp": net.sharp_at(i)}
              for i, lv in enumerate(net.levels)]
    return {"kind": "switched", "nvlink_ports": net.nvlink_ports, "levels": levels,
            "node_size": net.node_size, "max_gpus": net.max_gpus,
            "node_egress": num(net.node_egress) if len(net.levels) > 1 else None,
            "sharp": net.sharp, "node_bisection": num(net.node_bisection),
            "hop_latency": num(net.hop_latency), "net_latency": num(net.net_latency),
            "tree_latency": num(net.tree_latency), "net_overhead": num(net.net_overhead),
            "ring_base_latency": num(net.ring_base_latency),
            "tree_base_latency": num(net.tree_base_latency), "pcie_bw": num(net.pcie_bw)}


def _mlp(m: Any) -> str:
    act = {"silu": "SwiGLU", "gelu_tanh": "GeGLU", "gelu": "GeGLU"}[m.act] if m.gated \
        else m.act.split("_")[0].upper()
    moe = m.moe
    if moe is None:
        return f"dense {act}"
    text = f"MoE {moe.E} experts, top-{moe.k}" + (" + shared" if moe.shared_F != 0 else "")
    return text + (f", first {moe.dense_layers} dense" if moe.dense_layers else "")


def _attention(m: Any) -> str:
    if m.mla is not None:
        return f"MLA (latent {m.mla.kv_rank})"
    H, G = int(m.H), int(m.G)
    kind = "MHA" if G == H else "MQA" if G == 1 else f"GQA {H // G}:1"
    if m.window is None:
        return kind
    pattern = m.window_pattern
    share = "" if all(pattern) else f" on {sum(pattern)} of {len(pattern)} layers"
    return f"{kind}, window {int(m.window):,}{share}"


def model_structure(m: Any) -> dict[str, str]:
    """A model record's structure in words, read from its fields: ``family`` (the Llama
    decoder and what the record has beyond it: the family fields that differ, MoE, MLA),
    ``attention`` (MHA, GQA, MQA or MLA; a sliding window) and ``mlp`` (dense, or a
    mixture of experts).

    >>> from symroof.models import model
    >>> model_structure(model("mixtral-8x7b"))
    {'family': 'llama + MoE', 'attention': 'GQA 4:1', 'mlp': 'MoE 8 experts, top-2'}
    >>> model_structure(model("deepseek-v3"))["mlp"]
    'MoE 256 experts, top-8 + shared, first 3 dense'
    """
    extra = [{"moe": "MoE", "mla": "MLA"}.get(f, f) for f in m.features]
    return {"family": "llama" if not extra else "llama + " + ", ".join(extra),
            "attention": _attention(m), "mlp": _mlp(m)}
