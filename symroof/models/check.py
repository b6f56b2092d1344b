"""``check``: run the counted NumPy model and compare every op with the symbolic formulas.

The NumPy side (:mod:`symroof.numeric`) counts FLOPs and bytes from the arrays each op
touches at run time; it never sees a formula. This module substitutes the same numbers into
:meth:`Transformer.ops` and compares five quantities per op with exact integer equality
(:func:`check` has an example).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..cost import as_dimension
from .attention_rows import CORE_MODES
from .transformer import Transformer

__all__ = ["check", "CheckReport", "Mismatch"]

QUANTITIES = ("flops", "useful_flops", "weight_bytes", "kv_bytes", "act_bytes")


@dataclass(frozen=True)
class Mismatch:
    op: str
    quantity: str
    counted: int | None
    symbolic: int | None


@dataclass
class CheckReport:
    """Counted vs symbolic figures, op by op; ``ok`` when every one is equal."""

    label: str
    counted: dict[str, dict[str, int]]
    symbolic: dict[str, dict[str, int]]
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def rows(self) -> list[str]:
        return list(dict.fromkeys([*self.symbolic, *self.counted]))

    def __str__(self) -> str:
        header = ["op", *QUANTITIES, "verdict"]
        body = []
        bad = {(m.op, m.quantity) for m in self.mismatches}
        for op in self.rows:
            c = self.counted.get(op, {})
            cells = [op]
            for q in QUANTITIES:
                cell = f"{c.get(q, '-'):,}" if q in c else "-"
                if (op, q) in bad:
                    cell += f" != {self.symbolic.get(op, {}).get(q, '-')}"
                cells.append(cell)
            cells.append("MISMATCH" if any(o == op for o, _ in bad) else "equal")
            body.append(cells)
        widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
        line = lambda r: "  ".join(str(x).rjust(w) if i else str(x).ljust(w)  # noqa: E731
                                   for i, (x, w) in enumerate(zip(r, widths)))
        verdict = ("all equal: counted == symbolic for every op and quantity" if self.ok
                   else f"{len(self.mismatches)} mismatch(es)")
        return "\n".join([self.label, line(header), *map(line, body), verdict])

    def _repr_markdown_(self) -> str:
        bad = {(m.op, m.quantity): m for m in self.mismatches}
        lines = [f"**{self.label}**", "", "| op | " + " | ".join(QUANTITIES) + " | verdict |",
                 "|---|" + "---:|" * len(QUANTITIES) + "---|"]
        for op in self.rows:
            cells = []
            for q in QUANTITIES:
                m = bad.get((op, q))
                counted = self.counted.get(op, {}).get(q)
                shown = "-" if counted is None else f"{counted:,}"
                cells.append(f"{shown} ≠ {m.symbolic}" if m else shown)
            verdict = "**mismatch**" if any(o == op for o, _ in bad) else "equal"
            lines.append(f"| `{op}` | " + " | ".join(cells) + f" | {verdict} |")
        lines += ["", "All equal." if self.ok else f"{len(self.mismatches)} mismatch(es)."]
        return "\n".join(lines)

    def to_latex(self) -> str:
        """A booktabs table of the counted figures, one row per op, with the verdict."""
        from ..derivation import tex_escape

        bad = {m.op for m in self.mismatches}
        head = " & ".join(["op", *(tex_escape(q) for q in QUANTITIES), "verdict"]) + r" \\"
        rows = [" & ".join([rf"\texttt{{{tex_escape(op)}}}",
                            *(f"{self.counted.get(op, {}).get(q, '-'):,}".replace(",", "{,}")
                              for q in QUANTITIES),
                            "mismatch" if op in bad else "equal"]) + r" \\"
                for op in self.rows]
        return "\n".join([r"\begin{tabular}{l" + "r" * len(QUANTITIES) + "l}", r"\toprule",
                          head, r"\midrule", *rows, r"\bottomrule", r"\end{tabular}"])

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "ok": self.ok, "counted": self.counted,
                "symbolic": self.symbolic,
                "mismatches": [m.__dict__ for m in self.mismatches]}


def mismatches_of(counted: dict, symbolic: dict) -> list[Mismatch]:
    """Every (op, quantity) where the two sides differ, in row order; an op only one side
    has is a mismatch of each of its quantities (None on the other side)."""
    out = []
    for op in dict.fromkeys([*symbolic, *counted]):
        for q in QUANTITIES:
            c, s = counted.get(op, {}).get(q), symbolic.get(op, {}).get(q)
            if c != s:
                out.append(Mismatch(op, q, c, s))
    return out


def _int(value: sp.Expr, what: str) -> int:
    if not value.is_Integer:
        raise ValueError(f"{what} is not an integer after substitution: {value}")
    return int(value)


def _numeric_config(model: Transformer):
    """The NumPy twin's Config for ``model``: its blocks' twin specs
    (:meth:`~symroof.models.blocks.Blocks.twin`, plain numbers: the twin never sees a
    formula)."""
    return model.blocks.twin(model.name)


def _widths(model: Transformer) -> dict[str, int]:
    out = {}
    for name in ("w_bytes", "act_bytes", "kv_bytes"):
        value = getattr(model, name)
        if not value.is_Integer:
            raise ValueError(f"check() counts whole bytes per element; {name} = {value}")
        out[name] = int(value)
    return out


def _float64_bytes(model: Transformer, B: int, T: int, S: int) -> int:
    """Rough peak memory of the NumPy run in float64: the parameters, the KV cache, the
    score matrix and its softmax temporaries, and the widest activations."""
    H, D, V = int(model.H), int(model.D), int(model.V)
    F = max(int(model.F), int(model.moe.F) if model.moe is not None else 0)
    kv = B * S * int(model.kv_bytes_per_token / model.kv_bytes)
    scores = 3 * B * H * T * S
    acts = 4 * B * T * (D + F + V + H * int(model.d_h))
    return 8 * (int(model.params) + kv + scores + acts)


def check(model: Transformer, batch: int, new_tokens: int, cached: int = 0, *,
          last_only: bool = False, attention: str = "naive", seed: int = 0,
          max_bytes: int = 2**31) -> CheckReport:
    """Run the NumPy model (``cached`` tokens uncounted into the KV cache, then
    ``new_tokens`` counted) and compare each op's five counted figures with
    ``model.ops(batch, new_tokens, cached, last_only, attention, tokens_per_expert)``,
    exactly; an MoE model's rows are evaluated at the twin's own routing (the tokens each
    expert got in each MoE layer), and under symroof's own conventions (the accounting the
    twin executes), whatever record is in force.

    ``attention``: "naive" (the twin's naive core), "flash" (its blockwise online-softmax
    kernel) or "fused": the fused row against the twin's counts, its FLOPs those the naive
    core spends on allowed entries (useful FLOPs of scores, softmax and attention x V),
    its bytes those of the blockwise kernel (which reads q, K, V once and writes o).

    The NumPy model holds everything in float64; a run estimated to need more than
    ``max_bytes`` (default 2 GiB) is refused with the estimate, not started.

    >>> import symroof as sr
    >>> report = check(sr.model("tiny"), batch=2, new_tokens=3, cached=4)
    >>> report.ok, len(report.rows)
    (True, 20)
    """
    B = int(as_dimension(batch, "batch"))
    T = int(as_dimension(new_tokens, "new_tokens"))
    if isinstance(cached, bool) or not isinstance(cached, numbers.Integral) or cached < 0:
        raise ValueError(f"cached must be a non-negative integer, got {cached!r}")
    if attention not in CORE_MODES:
        raise ValueError(f"attention must be one of {', '.join(CORE_MODES)}, got "
                         f"{attention!r}")
    cfg = _numeric_config(model)
    need = _float64_bytes(model, B, T, int(cached) + T)
    if need > max_bytes:
        raise ValueError(f"check({model.name}, batch={B}, new_tokens={T}, cached={cached}) "
                         f"would need about {need / 2**30:.1f} GiB in float64 (limit "
                         f"{max_bytes / 2**30:.1f} GiB; raise it with max_bytes=...): use a "
                         "smaller model or step; the formulas themselves hold at any size")
    run = "flash" if attention == "fused" else attention
    counted, trace = _run(model, cfg, B, T, int(cached), last_only, run, seed)
    if attention == "fused":  # FLOPs of the fused row: the naive core's useful ones
        naive, _ = _run(model, cfg, B, T, int(cached), last_only, "naive", seed)
        useful = sum(naive[k]["useful_flops"] for k in ("attn/scores", "attn/softmax",
                                                          "attn/av"))
        counted["attn/core"] |= {"flops": useful, "useful_flops": useful}
    routing = trace if model.moe is not None else None
    rows = model.ops(B, T, int(cached), last_only=last_only, attention=attention,
                     tokens_per_expert=routing, conventions="symroof")  # what the twin runs
    symbolic = {op: {q: _int(getattr(cost, q), f"{op}.{q}") for q in QUANTITIES}
                for op, cost in rows.items()}
    mismatches = mismatches_of(counted, symbolic)
    label = (f"{model.name}: batch={B}, new_tokens={T}, cached={cached}, "
             f"last_only={last_only}" + ("" if attention == "naive" else
                                         f", attention={attention}"))
    return CheckReport(label=label, counted=counted, symbolic=symbolic, mismatches=mismatches)


def _run(model: Transformer, cfg: Any, B: int, T: int, cached: int, last_only: bool,
         attention: str, seed: int) -> tuple[dict, list]:
    """The twin's counted rows for one step (after ``cached`` uncounted tokens) and its
    routing trace (tokens per expert, per MoE layer, of the counted step)."""
    counter, trace = twin_step(model, cfg, B, T, cached, last_only, attention, seed)
    counted = {op: {q: int(r[q]) for q in QUANTITIES} for op, r in counter.rows.items()}
    return counted, trace


def twin_step(model: Transformer, cfg: Any, B: int, T: int, cached: int, last_only: bool,
              attention: str, seed: int) -> tuple[Any, list]:
    """Run the twin's step: its ``Counter`` (rows counted, bytes written) after ``cached``
    uncounted tokens, and its routing trace (tokens per expert, per MoE layer)."""
    import numpy as np  # the twin's inputs: NumPy loads when a check runs, not with the module

    from ..numeric import Counter, KVCache, forward, init_params

    params = init_params(cfg, seed=seed)
    rng = np.random.default_rng(seed)
    cache = KVCache(cfg, B)
    if cached:
        forward(params, cfg, rng.integers(0, cfg.V, size=(B, cached)), cache=cache,
                attention=attention)
    counter, trace = Counter(**_widths(model)), []
    forward(params, cfg, rng.integers(0, cfg.V, size=(B, T)), cache=cache, counter=counter,
            last_only=last_only, attention=attention, trace=trace)
    return counter, [[int(t) for t in layer] for layer in trace]
