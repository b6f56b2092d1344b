"""Compile sharded matmuls with JAX on a virtual CPU mesh and read the collectives XLA chose.

A case is `(mesh_shape, lhs_spec, rhs_spec, out_spec, M, K, N, dtype)`: the matmul
`A[M, K] @ B[K, N] -> C[M, N]`, each spec a pair (one entry per array dimension) of tuples of
mesh-axis names, `(("X",), ())` meaning `[M_X, K]` and `(("X", "Y"), ())` meaning `[M_XY, K]`
(X major). JAX is imported only in a child process, one per batch (its startup is seconds and
the virtual device count is fixed at import), so this module imports without JAX.

>>> case = MatmulCase({"X": 4}, ((), ("X",)), (("X",), ()), ((), ()), 64, 128, 256, "bf16")
>>> case.name
'A[M, K_X] @ B[K_X, N] -> C[M, N] on {X: 4} (M=64, K=128, N=256, bf16)'
>>> [r] = compile_matmuls([case])  # doctest: +SKIP
>>> [(c.kind, c.axes, c.elements_in) for c in r.collectives]  # doctest: +SKIP
[('all-reduce', ('X',), 16384)]

(Skipped here because it starts JAX; tests/test_xla.py compiles this case and many more in
one batch.)
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .hlo import HloCollective, parse_collectives

_INSTALL = 'the XLA oracle needs JAX: pip install -e ".[jax]" (or pip install jax)'
_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64"}
Spec = tuple[tuple[str, ...], tuple[str, ...]]


def array_name(letter: str, dims: str, spec: Spec) -> str:
    """An array in the book's notation: ``array_name("A", "MK", (("X",), ()))`` is
    ``A[M_X, K]``."""
    parts = (d + "_" * bool(s) + "".join(s) for d, s in zip(dims, spec))
    return f"{letter}[{', '.join(parts)}]"


class MatmulCase(NamedTuple):
    """One sharded matmul `A[M, K] @ B[K, N] -> C[M, N]` on a named mesh."""

    mesh_shape: Mapping[str, int]
    lhs_spec: Spec
    rhs_spec: Spec
    out_spec: Spec
    M: int
    K: int
    N: int
    dtype: str = "bf16"

    @property
    def name(self) -> str:
        arr = array_name

        mesh = ", ".join(f"{a}: {s}" for a, s in self.mesh_shape.items())
        return (
            f"{arr('A', 'MK', self.lhs_spec)} @ {arr('B', 'KN', self.rhs_spec)} -> "
            f"{arr('C', 'MN', self.out_spec)} on {{{mesh}}} "
            f"(M={self.M}, K={self.K}, N={self.N}, {self.dtype})"
        )


@dataclass(frozen=True)
class XlaMatmul:
    """What XLA made of one case: partitioned HLO, its collectives, per-device cost."""

    case: MatmulCase
    hlo: str
    collectives: tuple[HloCollective, ...]
    flops: float  # per device, XLA's cost_analysis; includes elementwise ops (e.g. converts)
    bytes_accessed: float
    jax_version: str

    @property
    def name(self) -> str:
        return self.case.name


def matmul_case(case: MatmulCase | tuple) -> MatmulCase:
    """Check a case and normalise it (specs to tuples of tuples, dtype to a short name).

    >>> matmul_case(({"X": 4}, ("X", None), (None, "X"), ("X", None), 64, 128, 256, "f32")).lhs_spec
    (('X',), ())
    >>> matmul_case(({"X": 4}, (("Z",), ()), ((), ()), ((), ()), 64, 128, 256))
    Traceback (most recent call last):
    ...
    ValueError: lhs_spec (('Z',), ()) names mesh axes {'Z'} that are not in the mesh {'X': 4}
    """
    mesh, lhs, rhs, out, M, K, N, *dtype = case
    if not mesh or any(not isinstance(s, int) or s < 1 for s in dict(mesh).values()):
        raise ValueError(f"mesh_shape must map axis names to positive ints, got {mesh!r}")
    mesh = dict(mesh)
    specs = [_spec(s) for s in (lhs, rhs, out)]
    for label, spec, dims in zip(
        ("lhs_spec", "rhs_spec", "out_spec"), specs, ((M, K), (K, N), (M, N))
    ):
        used = [a for d in spec for a in d]
        if unknown := set(used) - set(mesh):
            raise ValueError(
                f"{label} {spec} names mesh axes {unknown} that are not in the mesh {mesh}"
            )
        if len(used) != len(set(used)):
            raise ValueError(f"{label} {spec} uses a mesh axis twice in one array")
        for size, d in zip(dims, spec):
            if size < 1 or size % math.prod(mesh[a] for a in d):
                raise ValueError(f"{label} {spec}: dimension {size} is not split evenly over {d}")
    name = (dtype or ["bf16"])[0]
    short = {v: k for k, v in _DTYPES.items()}.get(name, name)
    if short not in _DTYPES:
        raise ValueError(
            f"unknown dtype {name!r}; known: {sorted(_DTYPES)} or {sorted(_DTYPES.values())}"
        )
    return MatmulCase(mesh, *specs, M, K, N, short)


def _spec(spec) -> Spec:
    if not isinstance(spec, (tuple, list)) or len(spec) != 2:
        raise ValueError(f"a spec has one entry per array dimension (2), got {spec!r}")
    return tuple(() if d is None else (d,) if isinstance(d, str) else tuple(d) for d in spec)


def compile_matmuls(cases: Iterable[MatmulCase | tuple], timeout: float = 600.0) -> list[XlaMatmul]:
    """Compile every case in one fresh JAX process; return XLA's collectives and cost per case.

    The process gets as many virtual CPU devices as the largest mesh in the batch.
    """
    cases = [matmul_case(c) for c in cases]
    if not cases:
        return []
    if importlib.util.find_spec("jax") is None:
        raise ImportError(_INSTALL)
    request = {
        "devices": max(math.prod(c.mesh_shape.values()) for c in cases),
        "cases": [
            dict(
                mesh=list(c.mesh_shape.items()),
                lhs=c.lhs_spec,
                rhs=c.rhs_spec,
                out=c.out_spec,
                M=c.M,
                K=c.K,
                N=c.N,
                dtype=_DTYPES[c.dtype],
            )
            for c in cases
        ],
    }
    reply = run_worker(request, timeout)
    errors = [f"{c.name}: {r['error']}" for c, r in zip(cases, reply["results"]) if "error" in r]
    if errors:
        raise RuntimeError("XLA could not compile:\n" + "\n".join(errors))
    return [_result(c, r, reply["jax"]) for c, r in zip(cases, reply["results"])]


def run_worker(request: dict, timeout: float = 600.0) -> dict:
    """Run the JAX worker once on ``request`` (``{"devices": n, "cases": [...]}``)."""
    if importlib.util.find_spec("jax") is None:
        raise ImportError(_INSTALL)
    worker = Path(__file__).with_name("_worker.py")
    proc = subprocess.run(
        [sys.executable, str(worker)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"the JAX worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout)


def _result(case: MatmulCase, r: dict, version: str) -> XlaMatmul:
    n = math.prod(case.mesh_shape.values())
    if r["device_ids"] != list(range(n)):  # ids in the HLO are mesh positions; see hlo.py
        raise RuntimeError(f"{case.name}: mesh devices {r['device_ids']} are not in id order")
    collectives = tuple(parse_collectives(r["hlo"], case.mesh_shape))
    return XlaMatmul(case, r["hlo"], collectives, r["flops"], r["bytes_accessed"], version)
