"""Compile a batch of sharded matmuls with JAX on virtual CPU devices; JSON in, JSON out.

Run by `symroof.xla.oracle` as `python <this file>` in a fresh process, because XLA reads
`--xla_force_host_platform_device_count` once, when JAX is first imported. Self-contained on
purpose: it imports neither symroof (slow, and being reorganised) nor anything of ours.

stdin:  {"devices": 8, "cases": [{"mesh": [["X", 4], ["Y", 2]], "lhs": [["X"], []],
          "rhs": [[], ["Y"]], "out": [["X"], ["Y"]], "M": 64, "K": 128, "N": 256,
          "dtype": "bfloat16"}, ...]}
stdout: {"jax": "0.10.2", "results": [{"hlo": "...", "flops": 1.0e6, "bytes_accessed": 4.0e5,
          "device_ids": [0, 1, ...]} or {"error": "..."}, ...]}
"""

from __future__ import annotations

import json
import math
import os
import sys


def _compile(jax, case: dict) -> dict:
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    names = tuple(name for name, _ in case["mesh"])
    sizes = tuple(size for _, size in case["mesh"])
    try:  # Auto axes: the partitioner chooses; explicit axes refuse an ambiguous contraction
        from jax.sharding import AxisType

        kw = {"axis_types": (AxisType.Auto,) * len(names)}
    except ImportError:  # older JAX: every axis is Auto already
        kw = {}
    # devices in id order, so device id == row-major mesh position == XLA's logical id
    mesh = Mesh(np.array(jax.devices()[: math.prod(sizes)]).reshape(sizes), names, **kw)

    def sharding(spec: list[list[str]]) -> NamedSharding:
        dims = [None if not d else d[0] if len(d) == 1 else tuple(d) for d in spec]
        return NamedSharding(mesh, P(*dims))

    dtype = jnp.dtype(case["dtype"])
    a = jax.ShapeDtypeStruct((case["M"], case["K"]), dtype, sharding=sharding(case["lhs"]))
    b = jax.ShapeDtypeStruct((case["K"], case["N"]), dtype, sharding=sharding(case["rhs"]))
    compiled = jax.jit(jnp.dot, out_shardings=sharding(case["out"])).lower(a, b).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost  # a list of one dict in older JAX
    return {
        "hlo": compiled.as_text(),
        "flops": cost.get("flops"),
        "bytes_accessed": cost.get("bytes accessed"),
        "device_ids": [d.id for d in mesh.devices.flat],
    }


def _compile_mlp_train(jax, case: dict) -> dict:
    """One MLP layer's training step, the book's ch. 5 model: out = gelu(x @ w_in) @ w_out,
    a squared loss, and the gradients of both weights and of the input (each sharded like
    its array: the input's gradient is what the layer below needs)."""
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    names = tuple(name for name, _ in case["mesh"])
    sizes = tuple(size for _, size in case["mesh"])
    try:
        from jax.sharding import AxisType

        kw = {"axis_types": (AxisType.Auto,) * len(names)}
    except ImportError:
        kw = {}
    mesh = Mesh(np.array(jax.devices()[: math.prod(sizes)]).reshape(sizes), names, **kw)

    def sharding(spec):
        dims = [None if not d else d[0] if len(d) == 1 else tuple(d) for d in spec]
        return NamedSharding(mesh, P(*dims))

    dtype = jnp.dtype(case["dtype"])
    B, D, F = case["B"], case["D"], case["F"]
    x = jax.ShapeDtypeStruct((B, D), dtype, sharding=sharding(case["x"]))
    w_in = jax.ShapeDtypeStruct((D, F), dtype, sharding=sharding(case["w_in"]))
    w_out = jax.ShapeDtypeStruct((F, D), dtype, sharding=sharding(case["w_out"]))

    def loss(w_in, w_out, x):
        return jnp.sum(jnp.square(jax.nn.gelu(x @ w_in) @ w_out).astype(jnp.float32))

    step = jax.jit(jax.grad(loss, argnums=(0, 1, 2)),
                   out_shardings=(sharding(case["w_in"]), sharding(case["w_out"]),
                                  sharding(case["x"])))
    compiled = step.lower(w_in, w_out, x).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return {"hlo": compiled.as_text(), "flops": cost.get("flops"),
            "bytes_accessed": cost.get("bytes accessed"),
            "device_ids": [d.id for d in mesh.devices.flat]}


def main() -> None:
    request = json.load(sys.stdin)
    flags = [
        f
        for f in os.environ.get("XLA_FLAGS", "").split()
        if not f.startswith("--xla_force_host_platform_device_count")
    ]
    flags.append(f"--xla_force_host_platform_device_count={request['devices']}")
    os.environ["XLA_FLAGS"] = " ".join(flags)
    os.environ["JAX_PLATFORMS"] = "cpu"  # the oracle is the CPU partitioner, even beside a GPU
    out, sys.stdout = sys.stdout, sys.stderr  # a stray print must not corrupt the JSON
    import jax

    results = []
    for case in request["cases"]:
        try:
            compile_one = _compile_mlp_train if case.get("kind") == "mlp_train" else _compile
            results.append(compile_one(jax, case))
        except Exception as e:  # reported per case; the parent names the case and raises
            results.append({"error": f"{type(e).__name__}: {e}"})
    json.dump({"jax": jax.__version__, "results": results}, out)


if __name__ == "__main__":
    sys.path.pop(0)  # this folder: its hlo.py etc. must not shadow anything JAX imports
    main()
