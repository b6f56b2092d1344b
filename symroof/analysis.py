"""Time bounds, limits, leading terms and solved crossovers.

Time on a chip with peak C FLOP/s, memory bandwidth W and network bandwidth W_net:
t_math = FLOPs / C, t_mem = bytes / W, t_net = network bytes / W_net. The lower bound is
their max (perfect overlap), the upper bound their sum (no overlap); the op is bound by the
largest term. Hardware enters only here, as an argument, and stays exact (Rationals) until
a number is asked for.

>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> v5e = sr.chip("tpu-v5e")
>>> sr.critical_batch(v5e)
9850/41
>>> round(float(sr.critical_batch(v5e, w_bytes=1)), 1)
120.1
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property
from typing import Any

import sympy as sp

from .conventions import as_conventions
from .cost import Cost, as_dimension, as_exact, as_symbol, check_symbols
from .hardware import as_chip, dtype_bytes
from .hardware.chip import DTYPE_BYTES, STORAGE_BYTES
from .hardware.collectives import Collective
from .hardware.internals import ridge as ridge_of
from .hardware.internals import roof as roof_of
from .hardware.mesh import Mesh
from .ops import matmul
from .render import fmt_si, latex
from .symbols import B as _B
from .symbols import D as _D
from .symbols import F as _F
from .timerule import EXACT, SYMPY, Ops, combine, terms

__all__ = ["TimeBound", "time", "limit", "leading", "crossover", "critical_batch"]


@dataclass(frozen=True)
class TimeBound:
    """Roofline time of a :class:`Cost` on a chip (seconds, exact where the inputs are)."""

    t_math: sp.Expr
    t_mem: sp.Expr
    t_net: sp.Expr
    cost: Cost
    chip: Any
    dtype: str
    #: what the cost is on a mesh ("per chip of tpu-v5e 2x4", "spread evenly over 8 chips")
    scope: str = ""
    #: host transfers over the chip's PCIe (host) link: host_bytes / pcie_bw
    t_host: Any = sp.Integer(0)
    #: the roof the compute and memory terms are read against (``internals.ROOFS``)
    roof: str = "hbm"

    def _terms(self) -> dict[str, sp.Expr]:
        terms = {"compute": self.t_math, "memory": self.t_mem, "network": self.t_net}
        if self.t_host != 0:
            terms["host"] = self.t_host
        return terms

    @cached_property
    def _rule(self) -> tuple[Any, Any, Any]:
        """(lower, upper, index of the largest term): the time rule (:mod:`symroof.timerule`)
        exactly on numbers, symbolically (no index) otherwise."""
        values = list(self._terms().values())
        if all(t.is_Rational for t in values):  # Python's Fractions compare faster than SymPy's
            lower, upper, which = combine([Fraction(int(t.p), int(t.q)) for t in values])
            return sp.Rational(lower.numerator, lower.denominator), \
                sp.Rational(upper.numerator, upper.denominator), which
        numeric = all(t.is_number for t in values)
        return combine(values, EXACT if numeric else SYMPY)

    @property
    def lower(self) -> sp.Expr:
        """max(t_math, t_mem, t_net, t_host): the time with perfect overlap."""
        return self._rule[0]

    @property
    def upper(self) -> sp.Expr:
        """t_math + t_mem + t_net + t_host: the time with no overlap at all."""
        return self._rule[1]

    @property
    def bound(self) -> str:
        """'compute', 'memory', 'network' or 'host' (the largest term); 'undetermined'
        while the terms are symbolic and cannot be ordered."""
        which = self._rule[2]
        return "undetermined" if which is None else list(self._terms())[which]

    def subs(self, *args: Any, **kwargs: Any) -> TimeBound:
        """Substitute dimension values into the cost and recompute."""
        return replace(time(self.cost.subs(*args, **kwargs), self.chip, self.dtype,
                            roof=self.roof), scope=self.scope)

    def __float__(self) -> float:
        if not self.lower.is_number:
            raise TypeError(f"this time bound is still symbolic in "
                            f"{sorted(map(str, self.lower.free_symbols))}: substitute numbers "
                            "(or use a numeric chip) first")
        return float(self.lower)

    def _latex(self, printer: Any) -> str:
        def p(e: sp.Expr) -> str:  # readable printers give each time its unit
            return printer.quantity(e, "s") if hasattr(printer, "quantity") else printer._print(e)
        rows = [rf"t_\text{{math}} &= {p(self.t_math)}", rf"t_\text{{mem}} &= {p(self.t_mem)}"]
        if self.t_net != 0:
            rows.append(rf"t_\text{{net}} &= {p(self.t_net)}")
        if self.t_host != 0:
            rows.append(rf"t_\text{{host}} &= {p(self.t_host)}")
        rows.append(rf"t_\text{{lower}} &= {p(self.lower)}")
        rows.append(rf"t_\text{{upper}} &= {p(self.upper)}")
        return r"\begin{aligned} " + r" \\ ".join(rows) + r" \end{aligned}"

    def _repr_latex_(self) -> str:
        return "$\\displaystyle " + latex(self) + "$"

    def __str__(self) -> str:
        if not self.lower.is_number:
            return f"t_math = {self.t_math}, t_mem = {self.t_mem}, t_net = {self.t_net}"
        net = f", t_net {fmt_si(self.t_net, 's')}" if self.t_net != 0 else ""
        net += f", t_host {fmt_si(self.t_host, 's')}" if self.t_host != 0 else ""
        scope = f", {self.scope}" if self.scope else ""
        return (f"t_math {fmt_si(self.t_math, 's')}, t_mem {fmt_si(self.t_mem, 's')}{net}: "
                f"{fmt_si(self.lower, 's')} .. {fmt_si(self.upper, 's')} ({self.bound}-bound)"
                f"{scope}")


def time(cost: Cost, chip: Any, dtype: str = "bf16", *, useful: bool = False,
         per_chip: bool | None = None, roof: str = "hbm", conventions: Any = None
         ) -> TimeBound:
    """Roofline time bounds of ``cost`` on ``chip`` at ``dtype``'s peak: the one time rule
    (t_math = FLOPs / C, t_mem = bytes / W, t_net from the collectives; lower bound their
    max, upper bound their sum).

    ``useful=True`` counts useful FLOPs only (a kernel that skips masked blocks); given
    ``conventions`` (a profile name or record), their ``time_flops`` decides instead.
    ``roof`` picks the level the FLOPs and bytes are read against (``hardware.internals.
    ROOFS``): "hbm" (the default), an on-chip memory ("vmem", "l2"), the vector unit
    ("vpu"), or the host link ("pcie": every byte comes over PCIe). A cost's
    ``host_bytes`` always cross the host link: t_host = host_bytes / pcie_bw.

    >>> import symroof as sr
    >>> t = sr.time(sr.Cost(flops=10**12), sr.chip("h100"))
    >>> round(float(t.t_math) * 1e3, 2)      # 1e12 FLOPs on an H100, in ms
    1.01
    >>> t.bound
    'compute'
    >>> v6e = sr.chip("tpu-v6e")
    >>> print(sr.time(sr.Cost(host_bytes=32 * 10**9), v6e))     # 32 GB from host DRAM
    t_math 0 s, t_mem 0 s, t_host 1 s: 1 s .. 1 s (host-bound)

    On a mesh a cost is either one chip's share (the rows of ``sr.serve``, ``sr.train_plan``,
    a collective), timed with one chip's figures, or the whole model's, which has to be
    sharded first. ``per_chip=True`` says it is one chip's share; ``per_chip=False`` spreads a
    whole cost evenly over the chips (an ideal split, no collectives). Either way the bound
    says which it is:

    >>> v5e = sr.mesh("tpu-v5e", "2x4")
    >>> print(sr.time(sr.Cost(weight_bytes=70 * 10**9), v5e, per_chip=False))
    t_math 0 s, t_mem 10.7 ms: 10.7 ms .. 10.7 ms (memory-bound), spread evenly over 8 chips
    >>> sr.time(sr.Cost(weight_bytes=70 * 10**9), v5e)
    Traceback (most recent call last):
    ...
    ValueError: time(cost, mesh): is this cost one chip's share or the whole work? ...
    """
    if not isinstance(cost, Cost):
        raise TypeError(f"time() needs a Cost, got {type(cost).__name__}")
    if conventions is not None:
        useful = as_conventions(conventions).counted == "useful_flops"
    scope = ""
    if isinstance(chip, Mesh):
        cost, scope = _on_mesh(cost, chip, per_chip)
    elif per_chip is not None:
        raise ValueError("per_chip= applies to a mesh; this is one chip")
    hw = as_chip(chip)
    compute, bandwidth = roof_of(hw, roof, dtype)
    pcie = roof_of(hw, "pcie", dtype)[1] if cost.host_bytes != 0 else None
    rates = (compute, bandwidth, hw.link_bw, pcie)
    fast = _exact_time(cost, useful, rates)
    if fast is not None:
        t, rule = fast
        out = object.__new__(TimeBound)  # the fields as TimeBound(...) sets them, and the rule
        vars(out).update(t_math=t[0], t_mem=t[1], t_net=t[2], cost=cost, chip=hw, dtype=dtype,
                         scope=scope, t_host=t[3], roof=roof, _rule=rule)  # (decided on ints)
        return out
    t = terms(cost.useful_flops if useful else cost.flops, cost.bytes, cost.net_time,
              cost.net_bytes, cost.host_bytes, rates)
    return TimeBound(t_math=t["compute"], t_mem=t["memory"], t_net=sp.sympify(t["network"]),
                     cost=cost, chip=hw, dtype=dtype, scope=scope,
                     t_host=sp.sympify(t["host"]), roof=roof)


def _pair(x: Any) -> tuple[int, int] | None:
    """A rational SymPy number as (numerator, positive denominator); None otherwise."""
    return (int(x.p), int(x.q)) if x.is_Rational else None


def _pair_gt(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] * b[1] > b[0] * a[1]


#: the time rule on exact (numerator, denominator) pairs of ints: no Fraction normalised
#: per step, one SymPy Rational made per result
_PAIRS = Ops(lambda a, b: b if _pair_gt(b, a) else a,
             lambda a, b: (a[0] * b[1] + b[0] * a[1], a[1] * b[1]), _pair_gt, EXACT.where)


_RATE_PAIRS: dict[tuple, tuple] = {}


def _rate_pairs(rates: tuple[Any, ...]) -> tuple:
    """The rates as pairs (:func:`_pair`; None where absent or not rational), kept."""
    hit = _RATE_PAIRS.get(rates)
    if hit is None:
        if len(_RATE_PAIRS) >= 256:
            _RATE_PAIRS.clear()
        hit = _RATE_PAIRS[rates] = tuple(None if r is None else _pair(sp.sympify(r))
                                         for r in rates)
    return hit


def _over(n: tuple[int, int], rate: tuple[int, int]) -> tuple[int, int]:
    return n[0] * rate[1], n[1] * rate[0]


def _exact_time(cost: Cost, useful: bool, rates: tuple[Any, ...]
                ) -> tuple[list[sp.Expr], tuple[Any, Any, int]] | None:
    """The terms and the time rule's (lower, upper, index) of a cost and rates in rational
    numbers, computed on Python ints (SymPy's arithmetic on numbers is what costs most in
    ``time``), or None where anything is symbolic or irrational."""
    fields = (cost.useful_flops if useful else cost.flops, cost.weight_bytes,
              cost.act_bytes, cost.kv_bytes, cost.net_time, cost.net_bytes, cost.host_bytes)
    q = [(x.p, x.q) if x.is_Rational else None for x in fields]  # (_pair, inline)
    if None in q:
        return None
    C, W, link, pcie = _rate_pairs(rates)
    (w, dw), (a, da), (k, dk) = q[1:4]
    nbytes = (w + a + k, 1) if dw == da == dk == 1 else \
        (w * da * dk + a * dw * dk + k * dw * da, dw * da * dk)
    t = [None, None, q[4], (0, 1)]
    for i, (amount, rate) in enumerate(((q[0], C), (nbytes, W))):
        if rate is None or rate[0] <= 0:
            return None
        t[i] = _over(amount, rate)
    if q[4][0] == 0 and q[5][0] != 0:  # a collective's own seconds stand for its bytes
        if link is None or link[0] <= 0:
            return None
        t[2] = _over(q[5], link)
    if q[6][0] != 0:
        if pcie is None or pcie[0] <= 0:
            return None
        t[3] = _over(q[6], pcie)
    exact = [_ZERO if x[0] == 0 else sp.Rational(*x) for x in t]
    # a zero network or host term changes no lower, upper or index (timerule.present)
    where = [0, 1] + [i for i in (2, 3) if t[i][0] != 0]
    _, upper, which = combine([t[i] for i in where], _PAIRS)
    return exact, (exact[where[which]], sp.Rational(*upper), where[which])


_ZERO = sp.Integer(0)


def _on_mesh(cost: Cost, mesh: Mesh, per_chip: bool | None) -> tuple[Cost, str]:
    """The per-chip cost on ``mesh`` and the words that say what it is."""
    n = mesh.n_chips
    label = f"{mesh.chip.name} {'x'.join(str(a.size) for a in mesh.axes)}"
    if per_chip is None and isinstance(cost, Collective):
        per_chip = True
    if per_chip is None:
        raise ValueError(
            "time(cost, mesh): is this cost one chip's share or the whole work? A whole "
            "model's cost has to be sharded first (sr.serve(model, mesh, ...) or "
            "sr.train_plan(...) give per-chip rows); pass per_chip=True if it is one chip's "
            f"share, or per_chip=False to spread it evenly over the mesh's {n} chips")
    if per_chip:
        return cost, f"per chip of {label}"
    if cost.net_bytes != 0 or cost.net_time != 0:
        raise ValueError("time(cost, mesh, per_chip=False) spreads compute and memory over the "
                         "chips; this cost carries collectives, which are per chip already")
    return cost * (1 / sp.sympify(n)), f"spread evenly over {n} chips"


def limit(expr: Any, sym: sp.Symbol, point: Any = sp.oo) -> sp.Expr:
    """The limit of ``expr`` as ``sym`` tends to ``point`` (default infinity).

    >>> import symroof as sr
    >>> from symroof.symbols import N
    >>> sr.limit(sr.dot(N, exact=True).intensity, N)
    1/2

    Time bounds hold ``Max`` and ``Min``, which SymPy's ``limit`` cannot expand: each is
    replaced by the argument that dominates near ``point`` first (throughput ceilings):

    >>> from symroof.symbols import B
    >>> t = sr.time(sr.matmul(B, 4096, 4096), "h100").lower
    >>> sr.limit(B / t, B) == sp.Rational(989 * 10**12, 2 * 4096 * 4096)  # the compute roof
    True
    """
    expr, var = _expression(expr, "limit"), as_symbol(sym, "sym")
    while True:
        nodes = [n for n in expr.atoms(sp.Max, sp.Min) if n.has(var)
                 and not any(a.has(sp.Max, sp.Min) for a in n.args)]
        if not nodes:
            return sp.limit(expr, var, point)
        expr = expr.xreplace({n: _dominant(n, var, point) for n in nodes})


def _dominant(node: sp.Expr, var: sp.Symbol, point: Any) -> sp.Expr:
    """The argument of a Max (Min) that is largest (smallest) as ``var`` tends to
    ``point``; a clear error where that depends on other symbols."""
    sign = 1 if isinstance(node, sp.Max) else -1
    for a in node.args:
        gaps = [sp.limit(sign * (a - b), var, point) for b in node.args if b is not a]
        if all(g == 0 or g.is_nonnegative or g is sp.oo for g in gaps):
            return a
    raise ValueError(f"limit(): which term of {sp.sstr(node)} dominates as {var} -> "
                     f"{point} depends on the other symbols; substitute numbers first")


def _expression(expr: Any, where: str) -> sp.Expr:
    """A SymPy expression from the user, with a clear error for a Cost or a look-alike."""
    if isinstance(expr, Cost):
        raise TypeError(f"{where}() takes an expression, not a Cost: pass e.g. cost.intensity "
                        "or cost.flops")
    try:
        return check_symbols(sp.sympify(as_exact(expr, "expr")))
    except (sp.SympifyError, TypeError) as err:
        raise TypeError(f"{where}() takes a SymPy expression, got {expr!r}") from err


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (tuple, list, set, frozenset)) else (x,)


def leading(expr: Any, small: Any = None, large: Any = None) -> sp.Expr:
    """Leading-order term of ``expr`` in the regime where the ``small`` symbols are much
    smaller than the others, or the ``large`` ones much larger.

    Scales small symbols by eps (large ones by 1/eps) and keeps the leading term as eps -> 0.

    >>> import symroof as sr
    >>> from symroof.symbols import B, D, F
    >>> sr.leading(sr.matmul(B, D, F).intensity, small=B)
    B
    >>> sr.leading(sr.batched_matmul(B, D, F, x_bytes=1, w_bytes=1, out_bytes=1).intensity,
    ...            large=(D, F))
    2
    """
    small = tuple(as_symbol(s, "small") for s in _as_tuple(small))
    large = tuple(as_symbol(s, "large") for s in _as_tuple(large))
    if not small and not large:
        raise ValueError("leading() needs small=... or large=... (e.g. small=B for B << D, F)")
    expr = _expression(expr, "leading")
    eps = sp.Dummy("eps", positive=True)
    scaled = expr.subs({**{s: eps * s for s in small}, **{s: s / eps for s in large}},
                       simultaneous=True)
    term = sp.cancel(scaled).as_leading_term(eps)
    return sp.cancel(term.subs(eps, 1))


def _rationalize(expr: Any) -> sp.Expr:
    """Replace binary floats by the exact decimal they print as (1.97e14 -> 197*10**12)."""
    expr = sp.sympify(expr)
    return expr.xreplace({f: sp.Rational(repr(float(f))) for f in expr.atoms(sp.Float)})


def crossover(lhs: Any, rhs: Any, var: sp.Symbol, *, select: str = "positive") -> sp.Expr:
    """Solve ``lhs == rhs`` for ``var`` and return the physical root, exactly.

    ``var`` is replaced by a positive real dummy while solving (an ``integer=True`` symbol
    would make ``solve`` drop every non-integer root). Roots that are negative or not real
    are dropped; if several remain, ``select`` picks 'smallest' or 'largest' (of symbolic
    roots: their ``Min`` or ``Max``, which SymPy resolves where it can order them).

    >>> import symroof as sr
    >>> from symroof.symbols import B, D, F
    >>> two = sr.mesh(sr.chip("tpu-v5e"), {"X": 2}, wrap=False, hop_latency=0)
    >>> t = sr.shard_matmul(two, "X[B, D_X] @ W[D_X, F] -> [B, F]").time
    >>> t.t_math, t.t_net          # the book's 2-chip example: BDF/C and 2BF/W_net
    (B*D*F/197000000000000, B*F/22500000000)
    >>> d_star = sr.crossover(t.t_math, t.t_net, D)
    >>> d_star, round(float(d_star))
    (78800/9, 8756)

    Time bounds hold ``Max``: each branch is solved and its roots kept only where that
    branch is in force (chip against chip, op against op):

    >>> t_h100 = sr.time(sr.matmul(B, 8192, 8192), "h100").lower
    >>> t_b200 = sr.time(sr.matmul(B, 8192, 8192), "b200").lower
    >>> sr.crossover(2 * t_b200, t_h100, B)     # B where twice the B200 time = one H100
    Traceback (most recent call last):
    ...
    ValueError: crossover(): ... has no positive root in B: the right side is larger ...
    """
    lhs = _rationalize(_expression(lhs, "crossover"))
    rhs = _rationalize(_expression(rhs, "crossover"))
    var = as_symbol(var, "var")
    x = sp.Dummy(var.name, positive=True)
    diff = lhs.subs(var, x) - rhs.subs(var, x)
    roots = []
    for branch, conditions in _branches(diff, x):
        # the numerator's roots, less those of the denominator: what solve() finds, without
        # its checks of denominators (whose first call imports sympy.physics, 0.1 s)
        num, den = branch.as_numer_denom()
        for r in sp.solve(num, x, simplify=False):  # simplify=True costs 100x
            if r.is_real is False or r.is_positive is False:
                continue
            if den.has(x) and sp.cancel(den.subs(x, r)) == 0:
                continue
            # a root of one branch counts only where that branch is the one in force
            if any(_holds(c.subs(x, r)) is False for c in conditions):
                continue
            if not any(sp.cancel(r - q) == 0 for q in roots):
                roots.append(r)
    if not roots:
        raise ValueError(f"crossover(): {sp.sstr(lhs)} = {sp.sstr(rhs)} has no positive "
                         f"root in {var}{_which_wins(lhs, rhs, var)}")
    if len(roots) > 1:
        if select not in ("smallest", "largest"):
            raise ValueError(f"crossover(): several roots {roots}; pass select='smallest' or "
                             f"'largest' (got select={select!r})")
        if all(r.is_number for r in roots):
            roots = [min(roots) if select == "smallest" else max(roots)]
        else:  # symbolic roots: Min/Max keeps the choice exact, ordered where SymPy can
            pick = sp.Min if select == "smallest" else sp.Max
            return pick(*(_simple(r.subs(x, var)) for r in roots))
    return _simple(roots[0].subs(x, var))


def _simple(root: sp.Expr) -> sp.Expr:
    """A root in its tidiest exact form."""
    # cancel() is exact and fast for rational roots; simplify() only for radicals and such
    return _positive_form(sp.cancel(root)) if root.is_rational_function() else sp.simplify(root)


def _positive_form(expr: sp.Expr) -> sp.Expr:
    """A cancelled fraction -a/(b - c) as a/(c - b): the same value, no leading minus.

    >>> from symroof.symbols import C, D, W
    >>> _positive_form(sp.cancel(-C * D / (C - D * W)))
    C*D/(-C + D*W)
    """
    num, den = sp.fraction(expr)
    if den != 1 and num.could_extract_minus_sign():
        return sp.Mul(-num, sp.Pow(-den, -1))
    return expr


def _branches(expr: sp.Expr, x: sp.Symbol) -> list[tuple[sp.Expr, list]]:
    """``expr`` with every Max/Min that depends on ``x`` replaced by one of its arguments,
    each choice with the conditions under which it is the one in force."""
    for node in sp.preorder_traversal(expr):
        if isinstance(node, (sp.Max, sp.Min)) and node.has(x):
            out = []
            for arg in node.args:
                ge = [(arg - other) if isinstance(node, sp.Max) else (other - arg)
                      for other in node.args if other is not arg]
                for sub, conds in _branches(expr.xreplace({node: arg}), x):
                    out.append((sub, conds + [c >= 0 for c in ge]))
            return out
    return [(expr, [])]


def _holds(condition: Any) -> bool | None:
    """True/False where a condition can be decided, None where it stays symbolic."""
    if condition in (sp.true, sp.false):
        return bool(condition)
    value = sp.simplify(condition)
    return bool(value) if value in (sp.true, sp.false) else None


def _which_wins(lhs: sp.Expr, rhs: sp.Expr, var: sp.Symbol) -> str:
    """', and lhs > rhs for every positive var' where one side wins everywhere."""
    try:
        d = (lhs - rhs).subs(var, 1)
        if d.is_number and d != 0:
            side = "left" if d > 0 else "right"
            return f": the {side} side is larger for every positive {var}"
    except TypeError:
        pass
    return ""


def _operand_width(dtype: str) -> Any:
    """Bytes per operand element of a matmul "in" ``dtype``: the compute dtypes' widths, and
    the 4-bit formats (a peak such as B200's fp4) at half a byte (``STORAGE_BYTES``)."""
    key = dtype.strip().lower() if isinstance(dtype, str) else dtype
    if key in STORAGE_BYTES and key not in DTYPE_BYTES:
        return STORAGE_BYTES[key]
    try:
        return dtype_bytes(dtype)
    except ValueError:
        known = ", ".join(dict.fromkeys([*DTYPE_BYTES, *STORAGE_BYTES]))
        raise ValueError(f"unknown dtype {dtype!r}; known dtypes: {known}") from None


def critical_batch(chip: Any, *, dtype: str = "bf16", x_bytes: Any = None,
                   w_bytes: Any = None, out_bytes: Any = None, D: Any = None,
                   F: Any = None, roof: str = "hbm") -> sp.Expr:
    """The batch above which X[B,D] @ W[D,F] is compute-bound on ``chip``.

    Without D and F: the B << D, F regime, where intensity ~ 2B / w_bytes, so
    B* = (C / W) * w_bytes / 2. With D and F: the exact root of intensity(B) = C / W
    (infinity if the matmul never becomes compute-bound). Byte widths left out are the
    dtype's (int8: 1, bf16: 2; fp4: 1/2); out_bytes defaults to x_bytes. ``roof`` reads W
    off another level (``hardware.internals.ROOFS``): "vmem" (weights in VMEM), "pcie"
    (operands streamed from host memory), "vpu" (the vector unit's peak).

    >>> import symroof as sr
    >>> round(float(sr.critical_batch(sr.chip("h100"))), 1)
    295.2
    >>> round(float(sr.critical_batch(sr.chip("tpu-v5e"), dtype="int8", roof="vmem")), 1)
    10.9
    """
    chip = as_chip(chip)
    width = _operand_width(dtype)
    x_bytes = width if x_bytes is None else x_bytes
    w_bytes = width if w_bytes is None else w_bytes
    out_bytes = x_bytes if out_bytes is None else out_bytes
    ridge = ridge_of(chip, roof, dtype)
    if D is None and F is None:
        mm = matmul(_B, _D, _F, x_bytes=x_bytes, w_bytes=w_bytes, out_bytes=out_bytes)
        return crossover(leading(mm.intensity, small=_B), ridge, _B)
    if D is None or F is None:
        raise ValueError("critical_batch(): give both D and F, or neither")
    mm = matmul(_B, as_dimension(D, "D"), as_dimension(F, "F"), x_bytes=x_bytes,
                w_bytes=w_bytes, out_bytes=out_bytes)
    try:
        return crossover(mm.intensity, ridge, _B)
    except ValueError:
        return sp.oo
