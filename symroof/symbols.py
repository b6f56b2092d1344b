"""The one symbol table of symroof.

Every dimension is a SymPy symbol declared here, once, with its assumptions (positive
integers). Creating a second ``Symbol("D")`` elsewhere makes a *different* symbol that
``subs`` silently ignores, so everything imports from this module.

Translation to the other notations in use:

=========================  =========  ==========================  ==============
meaning                    symroof    How to Scale Your Model     CS349E lecture
=========================  =========  ==========================  ==============
batch (sequences)          B          B                           B
new tokens this step       T          T                           T
context (KV length)        S          S                           ctx
model width                D          D                           d
MLP hidden width           F          F                           f
layers                     L          L                           L
query heads                H          N                           H
KV heads                   G          K                           G
query heads per KV head    H/G        G                           H/G
head dimension             d_h        H                           dh
vocabulary                 V          V                           V
generic length             N          N                           N
mesh axis sizes            X, Y, Z    X, Y, Z (|X|)               -
bytes a collective moves   V_b        V                           -
chip peak FLOP/s           C          C                           C
HBM bandwidth (B/s)        W          W_hbm                       W
link bandwidth (B/s)       W_net      W_ici                       -
HBM capacity (bytes)       M          -                           -
=========================  =========  ==========================  ==============

The chip's symbols (``ROOFS``) are positive reals, not integers; ``symbolic_chip()`` is built
from them, so ``critical_batch(symbolic_chip())`` comes out in this table's ``C`` and ``W``.

The book writes V for a collective's bytes; symroof's V is the vocabulary, so the bytes are
``V_b``.

``S`` and ``N`` shadow ``sympy.S`` and ``sympy.N``: import sympy as ``sp``, never with ``*``.

>>> from symroof.symbols import B, D, F
>>> (2 * B * D * F).is_positive
True
>>> lookup("d_h")
d_h
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import sympy as sp

__all__ = ["B", "T", "S", "D", "F", "L", "H", "G", "d_h", "V", "N", "X", "Y", "Z", "V_b",
           "C", "W", "W_net", "M", "DIMENSIONS", "ROOFS", "lookup", "dimension", "quantity",
           "PLAN", "PLAN_ROLES", "as_exact"]


def _dim(name: str) -> sp.Symbol:
    return sp.Symbol(name, positive=True, integer=True)


B = _dim("B")
T = _dim("T")
S = _dim("S")
D = _dim("D")
F = _dim("F")
L = _dim("L")
H = _dim("H")
G = _dim("G")
d_h = _dim("d_h")
V = _dim("V")
N = _dim("N")
X = _dim("X")
Y = _dim("Y")
Z = _dim("Z")
V_b = _dim("V_b")

#: name -> (symbol, meaning), in the order of the table above.
DIMENSIONS: dict[str, tuple[sp.Symbol, str]] = {
    "B": (B, "batch: sequences (or tokens, for a bare matmul)"),
    "T": (T, "new tokens per sequence in this step"),
    "S": (S, "context length attended per sequence, new tokens included"),
    "D": (D, "model width (d_model)"),
    "F": (F, "MLP hidden width (d_ff)"),
    "L": (L, "layers"),
    "H": (H, "query heads"),
    "G": (G, "KV heads"),
    "d_h": (d_h, "head dimension"),
    "V": (V, "vocabulary"),
    "N": (N, "generic length"),
    "X": (X, "size of mesh axis X (ch. 5: the data-parallel / FSDP degree)"),
    "Y": (Y, "size of mesh axis Y (ch. 5: the tensor-parallel degree)"),
    "Z": (Z, "size of mesh axis Z"),
    "V_b": (V_b, "bytes of the array a collective moves, per group (the book's V)"),
}


C = sp.Symbol("C", positive=True)
W = sp.Symbol("W", positive=True)
W_net = sp.Symbol("W_net", positive=True)
M = sp.Symbol("M", positive=True)

#: name -> (symbol, meaning): the figures of a symbolic chip.
ROOFS: dict[str, tuple[sp.Symbol, str]] = {
    "C": (C, "peak FLOP/s of the chip (dense, at the dtype of the computation)"),
    "W": (W, "HBM bandwidth, bytes/s"),
    "W_net": (W_net, "bandwidth of one link between chips, bytes/s, one direction"),
    "M": (M, "HBM capacity, bytes"),
}


def lookup(name: str) -> sp.Symbol:
    """Return the table's symbol called ``name`` (a dimension or a chip figure); unknown
    names fail and list the known ones.

    >>> lookup("W") / lookup("C")
    W/C
    """
    try:
        return DIMENSIONS[name][0] if name in DIMENSIONS else ROOFS[name][0]
    except (KeyError, TypeError):
        known = ", ".join([*DIMENSIONS, *ROOFS])
        raise ValueError(f"unknown symbol {name!r}; the symbol table has: {known}") from None


def dimension(name: str) -> sp.Symbol:
    """The table's dimension called ``name``, or, for a size the table does not name (the
    ``I``, ``J``, ``K`` of a sharded matmul's text), a new one with the same assumptions:
    a positive integer. One rule, so that two spellings of ``I`` are one symbol.

    >>> dimension("D") is D, dimension("I") == dimension("I"), dimension("I").is_integer
    (True, True, True)
    """
    return DIMENSIONS[name][0] if name in DIMENSIONS else _dim(name)


def quantity(name: str) -> sp.Symbol:
    """A named positive real that is not a size: a time, a rate or a chip figure given by
    name (``t_math`` in ``symroof solve``, a symbolic chip's ``C_int8``).

    >>> quantity("t_math").is_positive, quantity("t_math").is_integer
    (True, None)
    """
    return ROOFS[name][0] if name in ROOFS else sp.Symbol(name, positive=True)


#: The training-plan template's symbols (:mod:`symroof.parallel.layout`; a plan substitutes
#: them, the strategy search evaluates them over arrays of splits), per parallel role
#: (``PLAN_ROLES``): n_<role> its degree; k_<role> seconds per byte of its collectives;
#: lat_<role> their latency floor (lar_<role>: an AllReduce's, which NCCL's tree may
#: lower); a_ep seconds per byte of an AllToAll over the ep axes;
#: n_mb microbatches; z1, z2, z3 are 1 where ZeRO shards the optimizer state, the gradients,
#: the weights (0 elsewhere); ``dp+ep``: the dp and ep axes together (the gradient AllReduce
#: of a weight EP replicates), its k, lat, lar named k_dp_ep, lat_dp_ep, lar_dp_ep.
PLAN_ROLES = ("dp", "fsdp", "tp", "pp", "ep")
PLAN: dict[str, sp.Symbol] = {
    **{f"n_{r}": _dim(f"n_{r}") for r in PLAN_ROLES},
    **{f"k_{r}": sp.Symbol(f"k_{r}", nonnegative=True) for r in PLAN_ROLES},
    **{f"lat_{r}": sp.Symbol(f"lat_{r}", nonnegative=True) for r in PLAN_ROLES},
    **{f"lar_{r}": sp.Symbol(f"lar_{r}", nonnegative=True) for r in PLAN_ROLES},
    **{f"{t}_dp+ep": sp.Symbol(f"{t}_dp_ep", nonnegative=True) for t in ("k", "lat", "lar")},
    "a_ep": sp.Symbol("a_ep", nonnegative=True),
    "n_mb": _dim("n_mb"),
    **{f"z{i}": sp.Symbol(f"z{i}", nonnegative=True) for i in (1, 2, 3)},
}


def as_exact(value: Any, name: str = "value") -> sp.Expr:
    """Turn a user number into an exact SymPy number: ints stay ints, ``8.1e11`` becomes
    ``810000000000`` and ``0.5`` becomes ``1/2`` (through its shortest decimal repr, so no
    binary float noise enters a formula).

    >>> as_exact(8.1e11), as_exact(0.1)
    (810000000000, 1/10)
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number or expression, got {value!r}")
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, numbers.Integral):
        return sp.Integer(int(value))
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        return sp.Rational(repr(float(value)))
    if isinstance(value, str):
        try:
            return sp.Rational(value)
        except (TypeError, ValueError, ZeroDivisionError):  # "1/0" is no number either
            pass
        try:
            return lookup(value)
        except ValueError:
            raise ValueError(f"{name} must be a number or a symbol of the table, "
                             f"got {value!r}") from None
    raise TypeError(f"{name} must be a number or expression, got {value!r} "
                    f"({type(value).__name__})")
