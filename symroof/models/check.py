"""``check``: run the counted NumPy model and compare every op with the symbolic formulas.

The NumPy side (:mod:`symroof.numeric`) counts FLOPs and bytes from the arrays each op
touches at run time; it never sees a formula. This module substitutes the same numbers into
:meth:`Transformer.ops` and compares five quantities per op with exact integer equality.

>>> import symroof as sr
>>> report = sr.check(sr.model("tiny"), batch=2, new_tokens=3, cached=4)
>>> report.ok, len(report.rows)
(True, 20)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from ..cost import as_dimension
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


def _int(value: sp.Expr, what: str) -> int:
    if not value.is_Integer:
        raise ValueError(f"{what} is not an integer after substitution: {value}")
    return int(value)


def _numeric_config(model: Transformer):
    from ..numeric import Config

    dims = {}
    for name in ("D", "F", "L", "H", "G", "d_h", "V"):
        value = getattr(model, name)
        if not value.is_Integer:
            raise ValueError(f"check() needs numbers for every dimension; {name} = {value} "
                             "(use model.subs(...) or a preset)")
        dims[name] = int(value)
    return Config(**dims, tied=model.tied, qkv_bias=model.qkv_bias, name=model.name)


def _widths(model: Transformer) -> dict[str, int]:
    out = {}
    for name in ("w_bytes", "act_bytes", "kv_bytes"):
        value = getattr(model, name)
        if not value.is_Integer:
            raise ValueError(f"check() counts whole bytes per element; {name} = {value}")
        out[name] = int(value)
    return out


def _float64_bytes(cfg: Any, B: int, T: int, S: int) -> int:
    """Rough peak memory of the NumPy run in float64: weights, the KV cache, the score
    matrix and its softmax temporaries, and the widest activations."""
    params = cfg.L * (cfg.D * (cfg.H + 2 * cfg.G) * cfg.d_h + cfg.H * cfg.d_h * cfg.D
                      + 3 * cfg.D * cfg.F) + 2 * cfg.V * cfg.D
    kv = 2 * cfg.L * B * S * cfg.G * cfg.d_h
    scores = 3 * B * cfg.H * T * S
    acts = 4 * B * T * (cfg.D + cfg.F + cfg.V)
    return 8 * (params + kv + scores + acts)


def check(model: Transformer, batch: int, new_tokens: int, cached: int = 0, *,
          last_only: bool = False, seed: int = 0, max_bytes: int = 2**31) -> CheckReport:
    """Run the NumPy model (``cached`` tokens uncounted into the KV cache, then
    ``new_tokens`` counted) and compare each op's five counted figures with
    ``model.ops(batch, new_tokens, cached, last_only)``, exactly.

    The NumPy model holds everything in float64; a run estimated to need more than
    ``max_bytes`` (default 2 GiB) is refused with the estimate, not started.
    """
    from ..numeric import Counter, KVCache, forward, init_params

    B = int(as_dimension(batch, "batch"))
    T = int(as_dimension(new_tokens, "new_tokens"))
    if isinstance(cached, bool) or not isinstance(cached, (int, np.integer)) or cached < 0:
        raise ValueError(f"cached must be a non-negative integer, got {cached!r}")
    cfg = _numeric_config(model)
    need = _float64_bytes(cfg, B, T, int(cached) + T)
    if need > max_bytes:
        raise ValueError(f"check({model.name}, batch={B}, new_tokens={T}, cached={cached}) "
                         f"would need about {need / 2**30:.1f} GiB in float64 (limit "
                         f"{max_bytes / 2**30:.1f} GiB; raise it with max_bytes=...): use a "
                         "smaller model or step; the formulas themselves hold at any size")
    params = init_params(cfg, seed=seed)
    rng = np.random.default_rng(seed)
    cache = KVCache(cfg, B)
    if cached:
        forward(params, cfg, rng.integers(0, cfg.V, size=(B, int(cached))), cache=cache)
    counter = Counter(**_widths(model))
    forward(params, cfg, rng.integers(0, cfg.V, size=(B, T)), cache=cache, counter=counter,
            last_only=last_only)
    rows = model.ops(B, T, int(cached), last_only=last_only, attention="naive")
    symbolic = {op: {q: _int(getattr(cost, q), f"{op}.{q}") for q in QUANTITIES}
                for op, cost in rows.items()}
    counted = {op: {q: int(r[q]) for q in QUANTITIES} for op, r in counter.rows.items()}
    mismatches = []
    for op in dict.fromkeys([*symbolic, *counted]):
        for q in QUANTITIES:
            c, s = counted.get(op, {}).get(q), symbolic.get(op, {}).get(q)
            if c != s:
                mismatches.append(Mismatch(op, q, c, s))
    label = (f"{model.name}: batch={B}, new_tokens={T}, cached={cached}, "
             f"last_only={last_only}")
    return CheckReport(label=label, counted=counted, symbolic=symbolic, mismatches=mismatches)
