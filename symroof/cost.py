"""``Cost``: the FLOPs and bytes of a piece of work, as SymPy expressions.

A ``Cost`` is a small frozen value with algebra. It adds (so ``sum()`` works over a breakdown),
scales by an integer or a symbol (``L * layer``), substitutes values, and prints through
SymPy's LaTeX printer. Conventions (docs/accounting.md): 2 FLOPs per multiply-accumulate;
bytes split by kind, weights / activations / KV cache in memory, network bytes apart; of the
activation and KV bytes, the part written (stored) is a field of its own, so loads are the
rest (LLM-Viewer's five kinds: load_weight, load_act, store_act, load_kv_cache,
store_kv_cache).

>>> from symroof.symbols import B, D, F, L
>>> layer = Cost(flops=2*B*D*F, weight_bytes=2*D*F, act_bytes=2*B*D + 2*B*F)
>>> (L * layer).flops
2*B*D*F*L
>>> layer.intensity
B*D*F/(B*D + B*F + D*F)
>>> layer.subs({B: 1, D: 4, F: 4}).bytes
48
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from .symbols import DIMENSIONS, as_exact, lookup  # noqa: F401  (as_exact: its home is symbols)

__all__ = ["Cost", "as_dimension", "as_exact", "as_symbol", "check_symbols"]

#: The fields of a Cost, in print order.
FIELDS = ("flops", "useful_flops", "weight_bytes", "act_bytes", "kv_bytes", "net_bytes",
          "net_time", "host_bytes", "act_store_bytes", "kv_store_bytes")
_DIMENSION_SYMBOLS = {sym for sym, _ in DIMENSIONS.values()}


def check_symbols(expr: Any) -> Any:
    """Return ``expr`` unchanged, or fail if it holds a look-alike of a table symbol: a
    ``Symbol("D")`` without the table's assumptions is another symbol to SymPy, and
    substituting or solving for the table's ``D`` would silently miss it.

    >>> import sympy as sp
    >>> check_symbols(sp.Symbol("D") + 1)
    Traceback (most recent call last):
    ...
    ValueError: symbol 'D' is not the table's D (its assumptions differ); import it ...
    """
    for sym in getattr(expr, "free_symbols", ()):
        if sym.name in DIMENSIONS and sym is not DIMENSIONS[sym.name][0]:
            raise ValueError(f"symbol {sym.name!r} is not the table's {sym.name} (its "
                             "assumptions differ); import it from symroof.symbols")
    return expr


def as_symbol(value: Any, name: str = "symbol") -> sp.Symbol:
    """A symbol given as itself or by its name in the table (``"d_h"``); look-alikes fail.

    >>> as_symbol("d_h")
    d_h
    """
    if isinstance(value, str):
        return lookup(value)
    if isinstance(value, sp.Symbol):
        return check_symbols(value)
    raise TypeError(f"{name} must be a symbol or the name of one, got {value!r}")


def as_dimension(value: Any, name: str) -> sp.Expr:
    """Validate a dimension: a positive integer, a symbol name from the table, or a positive
    SymPy expression. Anything else raises ``ValueError`` naming ``name`` and the value.

    >>> as_dimension(4096, "D"), as_dimension("B", "b")
    (4096, B)
    >>> as_dimension(-3, "D")
    Traceback (most recent call last):
    ...
    ValueError: D must be a positive integer or a positive symbol, got -3
    """
    if isinstance(value, sp.Symbol) and value.is_positive:  # the table's symbols: most calls
        return check_symbols(value)

    given = value

    def msg() -> str:  # printed only for an error: an expression's repr costs more than the rest
        return f"{name} must be a positive integer or a positive symbol, got {given!r}"

    if isinstance(value, bool):
        raise ValueError(msg())
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(msg())
        value = int(value)
    if isinstance(value, str):
        value = value.strip()
        if value.lstrip("-").isdigit():
            value = int(value)
        else:
            try:
                return lookup(value)
            except ValueError:
                raise ValueError(msg() + " (not a number, nor a symbol of the table)") from None
    if isinstance(value, numbers.Integral):
        if value <= 0:
            raise ValueError(msg())
        return sp.Integer(int(value))
    if isinstance(value, sp.Expr):
        if value.is_number and not (value.is_integer and value.is_positive):
            raise ValueError(msg())
        if value.is_positive is False:
            raise ValueError(msg())
        return check_symbols(value)
    raise ValueError(msg())


def _check_substitution(mapping: Mapping[Any, Any]) -> dict[sp.Symbol, sp.Expr]:
    """Turn a user's substitution into ``{Symbol: exact value}``; dimension symbols must get
    positive integers (or positive expressions)."""
    out: dict[sp.Symbol, sp.Expr] = {}
    for key, value in mapping.items():
        sym = lookup(key) if isinstance(key, str) else key
        if not isinstance(sym, sp.Symbol):
            raise TypeError(f"substitution keys must be symbols or names, got {key!r}")
        check_symbols(sym)
        if sym in _DIMENSION_SYMBOLS:
            out[sym] = as_dimension(value, sym.name)
        else:
            out[sym] = as_exact(value, sym.name)
    return out


@dataclass(frozen=True)
class Cost:
    """FLOPs and bytes of a piece of work; every field a SymPy expression (default 0).

    ``flops`` are executed FLOPs; ``useful_flops`` (default: ``flops``) leave out work on
    masked entries. Memory bytes are split into ``weight_bytes``, ``act_bytes`` and
    ``kv_bytes``; ``net_bytes`` are bytes sent between chips. ``net_time`` (seconds) is set
    by collectives on a mesh, whose time depends on the links and rings they use; where it
    is 0, ``time()`` takes ``net_bytes`` over the chip's link bandwidth instead.
    ``host_bytes`` cross the host link (PCIe: a load from host DRAM, an offload), timed at
    the chip record's ``pcie_bw``; memory bytes (``bytes``) leave them out.

    ``act_store_bytes`` and ``kv_store_bytes`` are the parts of ``act_bytes`` and
    ``kv_bytes`` the work writes (the rest it reads: ``act_load_bytes``,
    ``kv_load_bytes``); each forward row sets them where it is built (symroof.ops,
    models.rows, attention_rows, moe_rows). Weights are only read in a forward step, so
    ``weight_bytes`` is not split. Training's rows (models.training, models.backward) keep
    both store fields 0 by design: their ``act_bytes`` are one total, not split.

    >>> from symroof.symbols import N
    >>> c = Cost(flops=2*N - 1, act_bytes=4*N + 2)
    >>> c.intensity
    (2*N - 1)/(4*N + 2)
    >>> sum([c, c]).flops
    4*N - 2
    """

    flops: Any = 0
    useful_flops: Any = None
    weight_bytes: Any = 0
    act_bytes: Any = 0
    kv_bytes: Any = 0
    net_bytes: Any = 0
    net_time: Any = 0
    host_bytes: Any = 0
    act_store_bytes: Any = 0
    kv_store_bytes: Any = 0

    def __post_init__(self) -> None:
        for name in FIELDS:  # (subclasses such as Collective add fields of their own)
            value = getattr(self, name)
            if name == "useful_flops" and value is None:
                value = self.flops
            if not isinstance(value, sp.Basic):  # (a SymPy value is kept as it is)
                value = sp.Integer(value) if type(value) is int else \
                    sp.sympify(as_exact(value, name))
            object.__setattr__(self, name, value)

    @classmethod
    def _of(cls, values: tuple[sp.Expr, ...]) -> Cost:
        """A Cost of its fields' values in ``FIELDS`` order, each already a SymPy number or
        expression (nothing to convert: the fast path of compiled code)."""
        out = object.__new__(cls)
        vars(out).update(zip(FIELDS, values))
        return out

    # -- algebra: a few primitives, everything else on top -----------------------------
    def _map(self, fn) -> Cost:
        return Cost(**{name: fn(getattr(self, name)) for name in FIELDS})

    def __add__(self, other: Cost) -> Cost:
        if isinstance(other, numbers.Number) and other == 0:
            return self  # so that sum() can start from 0
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(**{name: getattr(self, name) + getattr(other, name) for name in FIELDS})

    __radd__ = __add__

    def __mul__(self, k: Any) -> Cost:
        if isinstance(k, Cost):
            return NotImplemented
        factor = as_exact(k, "factor")
        return self._map(lambda v: v * factor)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cost):
            return NotImplemented
        return all(sp.cancel(getattr(self, n) - getattr(other, n)) == 0 for n in FIELDS)

    def __hash__(self) -> int:
        # cancel() is a canonical form for rational functions, so equal Costs hash equally
        return hash(tuple(sp.cancel(getattr(self, n)) for n in FIELDS))

    def subs(self, *args: Any, **kwargs: Any) -> Cost:
        """Substitute values: ``c.subs({B: 1, D: 4096})`` or ``c.subs(B=1, D=4096)``.
        Dimensions must get positive integers; floats are made exact first."""
        mapping: dict[Any, Any] = {}
        if args:
            if len(args) == 1 and isinstance(args[0], Mapping):
                mapping.update(args[0])
            elif len(args) == 2:
                mapping[args[0]] = args[1]
            else:
                raise TypeError("subs takes a mapping, a (symbol, value) pair, or keywords")
        mapping.update(kwargs)
        exact = _check_substitution(mapping)
        return self._map(lambda v: v.subs(exact))

    def simplify(self) -> Cost:
        return self._map(sp.factor)

    # -- derived quantities ------------------------------------------------------------
    @property
    def bytes(self) -> sp.Expr:
        """Memory bytes: weights + activations + KV cache (network bytes apart)."""
        return self.weight_bytes + self.act_bytes + self.kv_bytes

    @property
    def act_load_bytes(self) -> sp.Expr:
        """Activation bytes read: ``act_bytes`` less the ones written (``act_store_bytes``).

        >>> from symroof.ops import matmul
        >>> from symroof.symbols import B, D, F
        >>> m = matmul(B, D, F)
        >>> m.act_load_bytes, m.act_store_bytes          # reads X[B, D], writes Z[B, F]
        (2*B*D, 2*B*F)
        """
        return self.act_bytes - self.act_store_bytes

    @property
    def kv_load_bytes(self) -> sp.Expr:
        """KV cache bytes read: ``kv_bytes`` less the ones written (``kv_store_bytes``)."""
        return self.kv_bytes - self.kv_store_bytes

    @property
    def intensity(self) -> sp.Expr:
        """Arithmetic intensity: executed FLOPs per memory byte, as a cancelled fraction."""
        return _ratio(self.flops, self.bytes)

    @property
    def useful_intensity(self) -> sp.Expr:
        """Useful FLOPs per memory byte."""
        return _ratio(self.useful_flops, self.bytes)

    @property
    def net_intensity(self) -> sp.Expr:
        """FLOPs per byte sent over the network (the book's inter-chip intensity)."""
        return _ratio(self.flops, self.net_bytes)

    @property
    def free_symbols(self) -> set[sp.Symbol]:
        return set().union(*(getattr(self, n).free_symbols for n in FIELDS))

    def as_dict(self) -> dict[str, sp.Expr]:
        return {name: getattr(self, name) for name in FIELDS}

    # -- printing ----------------------------------------------------------------------
    def __repr__(self) -> str:
        parts = [f"{n}={getattr(self, n)}" for n in FIELDS if getattr(self, n) != 0]
        if self.useful_flops == self.flops and self.flops != 0:
            parts = [p for p in parts if not p.startswith("useful_flops=")]
        return "Cost(" + ", ".join(parts) + ")"

    def _latex(self, printer: Any) -> str:
        rows = [(r"\text{FLOPs}", self.flops, "FLOP")]
        if self.useful_flops != self.flops:
            rows.append((r"\text{useful FLOPs}", self.useful_flops, "FLOP"))
        for label, name in (("weight", "weight_bytes"), ("activation", "act_bytes"),
                            ("KV", "kv_bytes"), ("network", "net_bytes"),
                            ("host", "host_bytes")):
            if getattr(self, name) != 0:
                rows.append((rf"\text{{{label} bytes}}", getattr(self, name), "B"))
        if self.net_time != 0:
            rows.append((r"t_\text{net}", self.net_time, "s"))
        readable = hasattr(printer, "quantity")  # symroof's readable printer: with units
        body = r" \\ ".join(
            f"{label} &= {printer.quantity(value, unit) if readable else printer._print(value)}"
            for label, value, unit in rows)
        return r"\begin{aligned} " + body + r" \end{aligned}"

    def _repr_latex_(self) -> str:
        from .render import latex  # render imports this module: the readable rule, late

        return "$\\displaystyle " + latex(self) + "$"


def _ratio(num: sp.Expr, den: sp.Expr) -> sp.Expr:
    if den == 0:
        return sp.oo if num != 0 else sp.nan
    return sp.cancel(num / den)
