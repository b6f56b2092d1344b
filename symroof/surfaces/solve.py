"""Equations between named quantities of one forward step, solved for batch, context or new
tokens (``symroof solve``).

A step is the sum of the rows of ``model.ops(B, T, S - T)`` (decode: T new tokens per
sequence on S - T cached; prefill: T = S), the rows a report tables and a serving plan
shards; its quantities are ``flops`` (useful), ``bytes``, ``weight_bytes``, ``kv_bytes``,
``act_bytes``, ``intensity`` (flops / bytes) and, on a chip, ``t_math`` and ``t_mem`` (the
step's totals as one roofline), ``t_lower`` (their max),
``t_upper`` (their sum) and ``ridge`` (peak / HBM bandwidth). Every quantity but the one
variable is substituted by its number; ``sr.crossover`` solves what is left (Max/Min
branches included). Where there is no root, :func:`solve_step` says which side wins and
looks for the boundary that does exist: the value of another variable at which the
ratio of the two sides, in the limit of the solved variable, reaches 1.

>>> import symroof as sr
>>> s = solve_step("kv_bytes = weight_bytes", "context", sr.model("llama-3.1-8b"),
...                batch=1, view="whole")          # lecture 1's terms: sr.kv_crossover
>>> s.root, s.above
(114512, 'kv_bytes > weight_bytes')
>>> s = solve_step("t_math = t_mem", "batch", sr.model("llama-3.1-8b"), chip=sr.chip("h100"),
...                context=4096)                   # the step's rows, as report and serve
>>> print(s.never)
t_mem > t_math at every batch; as batch grows t_math/t_mem tends to 0.106
>>> [(b.variable, round(float(b.value), 1)) for b in s.boundaries]
[('context', 297.8)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sympy as sp
from sympy.parsing.sympy_parser import (
    convert_xor,
    parse_expr,
    rationalize,
    standard_transformations,
)

from ..analysis import crossover, time
from ..conventions import as_conventions, using
from ..cost import Cost
from ..hardware import as_chip
from ..hardware.mesh import Mesh
from ..parallel.serving import serve
from ..symbols import B as _B
from ..symbols import S as _S
from ..symbols import T as _T
from ..symbols import quantity
from ..workload import Step

__all__ = ["QUANTITIES", "VARIABLES", "VIEWS", "Boundary", "Solution", "solve_step",
           "step_cost", "step_quantities"]

#: quantity -> what it is (the ones marked "chip" need a chip)
QUANTITIES = {
    "t_math": "useful FLOPs / peak, seconds (chip)",
    "t_mem": "bytes / HBM bandwidth, seconds (chip)",
    "t_net": "the collectives' time, seconds (mesh; 0 on one chip)",
    "t_lower": "max(t_math, t_mem, t_net) (chip)",
    "t_upper": "t_math + t_mem + t_net (chip)",
    "ridge": "peak / HBM bandwidth, FLOP/B (chip)",
    "flops": "useful FLOPs",
    "bytes": "weight + KV + activation bytes",
    "weight_bytes": "weight bytes read",
    "kv_bytes": "KV-cache bytes read and written",
    "act_bytes": "activation bytes",
    "intensity": "flops / bytes, FLOP/B"}
#: variable -> its symbol
VARIABLES = {"batch": _B, "context": _S, "new_tokens": _T}
_ON_CHIP = ("t_math", "t_mem", "t_net", "t_lower", "t_upper", "ridge")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_SAFE = re.compile(r"[\w\s.+\-*/()^]*")
_PARSE = standard_transformations + (convert_xor, rationalize)


#: what a step's quantities sum: the step's rows (the default, as a report tables them and a
#: serving plan shards them) or lecture 1's whole-model roofline (weights + KV read only)
VIEWS = {"rows": "every row of the step: weights, KV read and written, activations, "
                 "elementwise FLOPs", "whole": "lecture 1's whole-model roofline: matmul and "
                 "attention FLOPs, weight and KV-read bytes only"}


def step_cost(model: Any, phase: str = "decode", view: str = "rows") -> Cost:
    """The cost of one step in B, S (and T in decode) that every quantity reads: the sum of
    ``model.ops`` (lm_head on the last position, a fused attention core), or with
    ``view="whole"`` ``model.whole`` under the same lm_head rule.

    >>> from symroof.models import Transformer
    >>> step_cost(Transformer(), view="whole").kv_bytes
    4*B*G*L*S*d_h
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    T = _S if phase == "prefill" else _T
    if view == "whole":
        return model.whole(_B, T, _S - T, last_only=True)
    return sum(model.ops(_B, T, _S - T, last_only=True, attention="fused").values(), Cost())


def step_quantities(model: Any, chip: Any = None, dtype: str = "bf16",
                    phase: str = "decode", view: str = "rows",
                    conventions: Any = None) -> dict[str, sp.Expr]:
    """Every quantity as an expression in B, S (and T in decode), from :func:`step_cost`:
    by default the sums of the step's rows, the same rows that ``symroof report`` tables and
    ``sr.serve`` shards, timed by the one time rule (``sr.time``, useful FLOPs). ``chip`` may
    be a mesh: then the quantities are one chip's share of a decode step, the rows of
    ``sr.serve(model, mesh, ...)`` with their collectives (``t_net``). ``conventions`` (a
    profile name or record; default the one in force) builds the rows, and its
    ``time_flops`` picks the FLOPs that ``flops``, ``intensity`` and the times read."""
    cv = as_conventions(conventions)
    if isinstance(chip, Mesh):
        if phase != "decode" or view != "rows":
            raise ValueError("on a mesh, solve reads the serving plan of a decode step: "
                             "phase decode, view rows")
        plan = serve(model, chip, Step(_B, context=_S), compute_dtype=dtype, conventions=cv)
        total, t = plan.cost, plan.time
    else:
        with using(cv):
            total = step_cost(model, phase, view)
        t = None if chip is None else time(total, chip, dtype, conventions=cv)
    flops = getattr(total, cv.counted)
    out = {"flops": flops, "bytes": total.bytes,
           "weight_bytes": total.weight_bytes, "kv_bytes": total.kv_bytes,
           "act_bytes": total.act_bytes, "intensity": flops / total.bytes}
    if t is not None:
        out.update(t_math=t.t_math, t_mem=t.t_mem, t_net=t.t_net, t_lower=t.lower,
                   t_upper=t.upper, ridge=as_chip(chip).critical_intensity(dtype))
    return out


def _parse(text: str, equation: str) -> sp.Expr:
    known = {**{q: quantity(q) for q in QUANTITIES}, **VARIABLES}
    if not text.strip() or not _SAFE.fullmatch(text):
        raise ValueError(f"cannot read {text.strip()!r} in {equation!r}: write quantities, "
                         "numbers and + - * / ^ ( )")
    for name in _TOKEN.findall(re.sub(r"\d+\.?\d*[eE][+-]?\d+", "", text)):
        if name not in known:
            raise ValueError(f"unknown quantity {name!r} in {equation!r}; known: "
                             f"{', '.join(QUANTITIES)} (and the variables "
                             f"{', '.join(VARIABLES)})")
    try:
        return parse_expr(text, local_dict=known, transformations=_PARSE)
    except (SyntaxError, TypeError, ValueError):
        raise ValueError(f"cannot read {text.strip()!r} in {equation!r}") from None


@dataclass(frozen=True)
class Boundary:
    """Where a root in the solved variable starts to exist: ``variable`` on the ``side``
    ("below" or "above") of ``value``."""

    variable: str
    value: sp.Expr
    side: str


@dataclass(frozen=True)
class Solution:
    """``lhs = rhs`` (quantities substituted; ``typed``: the sides as written) in ``symbol``
    (the variable ``variable``): the ``root`` and ``above`` ("lhs > rhs", the side that is
    larger past it); or ``never`` (why there is none) with the ``boundaries`` that exist."""

    equation: str
    sides: tuple[str, str]
    variable: str
    symbol: sp.Symbol
    lhs: sp.Expr
    rhs: sp.Expr
    typed: tuple[sp.Expr, sp.Expr] = (sp.Integer(0), sp.Integer(0))
    root: sp.Expr | None = None
    above: str = ""
    never: str = ""
    boundaries: tuple[Boundary, ...] = field(default=())


def _sign(expr: sp.Expr, x: sp.Symbol, at: Any) -> int:
    value = sp.sympify(expr).subs(x, at)
    return 0 if value == 0 else 1 if value > 0 else -1


def _branch_at(expr: sp.Expr, x: sp.Symbol, end: Any) -> sp.Expr | None:
    """``expr`` with each Max/Min in ``x`` replaced by the argument that wins as x -> end
    (innermost first); None where a winner cannot be told."""
    while True:
        nodes = [n for n in sp.postorder_traversal(expr)
                 if isinstance(n, (sp.Max, sp.Min)) and n.has(x)]
        if not nodes:
            return expr
        node, pick = nodes[0], (max if isinstance(nodes[0], sp.Max) else min)
        ends = [_limit(a, x, end, plain=True) for a in node.args]
        if any(e is None or e.free_symbols for e in ends) or len(set(ends)) < len(ends):
            return None
        expr = expr.xreplace({node: node.args[ends.index(pick(ends))]})


def _limit(ratio: sp.Expr, x: sp.Symbol, end: Any, plain: bool = False) -> sp.Expr | None:
    if not plain:
        ratio = _branch_at(ratio, x, end)
        if ratio is None:
            return None
    try:
        value = sp.limit(ratio, x, end, "+") if end == 0 else sp.limit(ratio, x, end)
    except (NotImplementedError, ValueError, TypeError):
        return None
    return None if value.has(sp.Limit) else value


def _boundaries(lhs: sp.Expr, rhs: sp.Expr, x: sp.Symbol, given: dict) -> list[Boundary]:
    """For batch or context (whichever is given): where the limit (x -> 0 or oo) of lhs/rhs
    reaches 1, kept where a root in x exists on the far side of it from the given value."""
    ratio = lhs / rhs
    out: list[Boundary] = []
    for name, v in ((n, VARIABLES[n]) for n in ("batch", "context")
                    if n in given and VARIABLES[n] in ratio.free_symbols):
        others = {VARIABLES[n]: val for n, val in given.items() if n != name}
        r = ratio.subs(others)

        for end in (sp.oo, 0):
            lim = _limit(r, x, end)
            if lim is None or not lim.free_symbols:
                continue
            try:
                star = crossover(lim, 1, v)
            except ValueError:
                continue
            side = "below" if given[name] > star else "above"
            probe = star / 2 if side == "below" else 2 * star
            if _has_root(r.subs(v, probe), x) and not any(b.variable == name for b in out):
                out.append(Boundary(name, star, side))
    return out


def _has_root(ratio: sp.Expr, x: sp.Symbol) -> bool:
    """Whether ``ratio`` crosses 1 between x -> 0 and x -> oo."""
    ends = [_limit(ratio, x, e) for e in (0, sp.oo)]
    return None not in ends and bool((ends[0] - 1) * (ends[1] - 1) < 0)


def _never(lhs: str, rhs: str, var: str, hi: sp.Expr | None, x: sp.Symbol,
           diff: sp.Expr) -> str:
    """Which side wins everywhere, and what lhs/rhs tends to as the variable grows."""
    s = _sign(diff, x, 1) or _sign(diff, x, 10**6)
    big, small = (lhs, rhs) if s > 0 else (rhs, lhs)
    text = f"{big} > {small} at every {var}"
    if hi is not None and hi.is_number and hi.is_finite:
        text += f"; as {var} grows {lhs}/{rhs} tends to {float(hi):.4g}"
    return text


def solve_step(equation: str, variable: str, model: Any, *, chip: Any = None,
               dtype: str = "bf16", phase: str = "decode", batch: Any = None,
               context: Any = None, new_tokens: Any = None, view: str = "rows",
               conventions: Any = None) -> Solution:
    """Solve ``equation`` ("t_math = t_mem", "kv_bytes = 2*weight_bytes") for ``variable``
    ("batch", "context", "new_tokens"), the other variables given (module docstring);
    ``view``: "rows" (the step's rows, default) or "whole" (lecture 1's roofline);
    ``conventions`` as in :func:`step_quantities`."""
    variable = variable.strip().lower().replace("-", "_")
    if variable not in VARIABLES:
        raise ValueError(f"cannot solve for {variable!r}; variables: {', '.join(VARIABLES)}")
    if phase == "prefill" and (variable == "new_tokens" or new_tokens is not None):
        raise ValueError("a prefill step's new tokens are its context: solve for batch or "
                         "context")
    parts = re.split(r"==?", equation)
    if len(parts) != 2:
        raise ValueError(f"write one equation 'lhs = rhs', got {equation!r}")
    sides = [_parse(p, equation) for p in parts]
    names = {s.name for side in sides for s in side.free_symbols}
    if chip is None and names & set(_ON_CHIP):
        raise ValueError(f"{', '.join(sorted(names & set(_ON_CHIP)))} need a chip: add --chip")
    quantities = step_quantities(model, chip, dtype, phase, view, conventions)
    subs = {quantity(q): e for q, e in quantities.items()}
    exprs = [side.xreplace(subs) for side in sides]
    given = {n: v for n, v in (("batch", batch), ("context", context),
                               ("new_tokens", 1 if new_tokens is None and phase == "decode"
                                else new_tokens)) if v is not None and n != variable}
    x = VARIABLES[variable]
    values = {VARIABLES[n]: v for n, v in given.items()}
    lhs, rhs = (sp.sympify(e).subs(values) for e in exprs)
    names_of = {v: n for n, v in VARIABLES.items()}
    left = sorted(names_of.get(s, s.name) for s in (lhs - rhs).free_symbols if s != x)
    if left:
        flags = ", ".join("--" + n.replace("_", "-") for n in left)
        raise ValueError(f"{equation!r} for {variable} also depends on {', '.join(left)}: "
                         f"give {flags}")
    if x not in (lhs - rhs).free_symbols:
        raise ValueError(f"{equation!r} does not depend on {variable} here")
    texts = tuple(p.strip() for p in parts)
    base = Solution(equation, texts, variable, x, lhs, rhs, tuple(sides))
    try:
        root = crossover(lhs, rhs, x, select="smallest")
    except ValueError:
        diff = lhs - rhs
        hi = _limit(lhs / rhs, x, sp.oo)
        return Solution(**{**vars(base), "never": _never(*texts, variable, hi, x, diff),
                           "boundaries": tuple(_boundaries(exprs[0], exprs[1], x, given))})
    s = _sign(lhs - rhs, x, 2 * root + 1)
    big, small = texts if s > 0 else texts[::-1]
    return Solution(**{**vars(base), "root": root,
                       "above": f"{big} > {small}"})
