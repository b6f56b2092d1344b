"""Compile a batch of sharded programs with JAX on virtual CPU devices; JSON in, JSON out:
matmuls (``oracle``), the book's MLP training step (``training``) and whole Llama-style layers,
a decode step's forward or a training step, dense or with a mixture of experts (``layers``;
their arrays in ``LAYER_ARRAYS``).

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


def _sharding_of(jax, case: dict):
    """``sharding(spec)``: a NamedSharding on the case's mesh (``sharding.mesh``), a spec
    being one list of mesh-axis names per array dimension."""
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

    sharding.mesh = mesh
    return sharding


def _result(compiled, mesh) -> dict:
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost  # a list of one dict in older JAX
    return {"hlo": compiled.as_text(), "flops": cost.get("flops"),
            "bytes_accessed": cost.get("bytes accessed"),
            "device_ids": [d.id for d in mesh.devices.flat]}


def _compile(jax, case: dict) -> dict:
    import jax.numpy as jnp

    sharding = _sharding_of(jax, case)
    dtype = jnp.dtype(case["dtype"])
    a = jax.ShapeDtypeStruct((case["M"], case["K"]), dtype, sharding=sharding(case["lhs"]))
    b = jax.ShapeDtypeStruct((case["K"], case["N"]), dtype, sharding=sharding(case["rhs"]))
    compiled = jax.jit(jnp.dot, out_shardings=sharding(case["out"])).lower(a, b).compile()
    return _result(compiled, sharding.mesh)


def _compile_mlp_train(jax, case: dict) -> dict:
    """One MLP layer's training step, the book's ch. 5 model: out = gelu(x @ w_in) @ w_out,
    a squared loss, and the gradients of both weights and of the input (each sharded like
    its array: the input's gradient is what the layer below needs)."""
    import jax.numpy as jnp

    sharding = _sharding_of(jax, case)
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
    return _result(step.lower(w_in, w_out, x).compile(), sharding.mesh)


_MOE_LAYER = {"x": "bTD", "wq": "DHd", "wk": "DGd", "wv": "DGd", "wo": "HdD", "w_router": "DE",
              "w_gate": "EDF", "w_up": "EDF", "w_down": "EFD"}
#: each array of a layer case, by its dimensions' letters (d: head dim d_h, b: sequences,
#: T: tokens per sequence); a spec gives the mesh axes of each letter's dimension
LAYER_ARRAYS = {
    "decode": {"x": "BD", "norm_attn": "D", "wq": "DHd", "wk": "DGd", "wv": "DGd",
               "wo": "HdD", "norm_mlp": "D", "w_gate": "DF", "w_up": "DF", "w_down": "FD",
               "k_cache": "BSGd", "v_cache": "BSGd"},
    "train": {"x": "bTD", "wq": "DHd", "wk": "DGd", "wv": "DGd", "wo": "HdD",
              "w_gate": "DF", "w_up": "DF", "w_down": "FD"},
    # a mixture of experts' layer (E experts of width F): its forward pass or training step
    "moe_forward": _MOE_LAYER,
    "moe_train": _MOE_LAYER,
}


def _rms(x, gain=None):
    import jax.numpy as jnp

    y = x * (1 / jnp.sqrt(jnp.mean(jnp.square(x.astype(jnp.float32)), -1, keepdims=True)
                          + 1e-6)).astype(x.dtype)
    return y if gain is None else y * gain


def _attend(q, k, v, causal: bool, gqa: str = "repeat"):
    """q[b, T, H, d_h] over k, v[b, S, G, d_h] (GQA: H/G query heads per KV head).

    ``gqa="repeat"``: each KV head repeated for its H/G query heads, the attention over H
    heads (Hugging Face Llama's ``repeat_kv``); ``"grouped"``: the queries reshaped to
    [b, T, G, H/G, d_h] (no copy of the cache). The same numbers; XLA's partitioner moves
    them differently when a mesh axis splits the query heads across the G | H/G boundary
    (tests/test_xla_layers.py)."""
    import jax
    import jax.numpy as jnp

    b, T, H, dh = q.shape
    G = k.shape[2]
    if gqa == "repeat":
        k, v = (jnp.repeat(a, H // G, axis=2) for a in (k, v))  # (b, S, H, d_h)
        s = jnp.einsum("bthd,bshd->bhts", q, k).astype(jnp.float32) / dh**0.5
    else:
        q = q.reshape(b, T, G, H // G, dh)  # (b, T, G, H/G, d_h)
        s = jnp.einsum("btgrd,bsgd->bgrts", q, k).astype(jnp.float32) / dh**0.5
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((T, k.shape[1]), bool)), s, -1e30)
    p = jax.nn.softmax(s, axis=-1).astype(v.dtype)
    if gqa == "repeat":
        return jnp.einsum("bhts,bshd->bthd", p, v)  # (b, T, H, d_h)
    return jnp.einsum("bgrts,bsgd->btgrd", p, v).reshape(b, T, H, dh)  # (b, T, H, d_h)


def _attention(x, wq, wk, wv, wo, gqa: str):
    """The training layer's attention block with its residual: RMSNorm (no gain), q, k, v,
    causal attention over T, o_proj."""
    import jax.numpy as jnp

    h = _rms(x)                                       # (b, T, D)
    q = jnp.einsum("btd,dhe->bthe", h, wq)            # (b, T, H, d_h)
    k = jnp.einsum("btd,dge->btge", h, wk)            # (b, T, G, d_h)
    v = jnp.einsum("btd,dge->btge", h, wv)
    return x + jnp.einsum("bthe,hed->btd", _attend(q, k, v, True, gqa), wo)


def _moe(x, w_router, w_gate, w_up, w_down, n: dict, at):
    """A mixture of experts' block with its residual, capacity-based (GShard, Switch): the
    tokens in N groups (one a data shard), a softmax router, each token's top k experts;
    a token takes the next of its expert's C slots in its group (token order, then rank),
    or is dropped past C; one-hot dispatch into a dense [E, N, C, D] buffer, each expert's
    SwiGLU, and the combine weighted by the router's probabilities. The buffer is held in
    the tokens' layout (``at("by_group")``) as the dispatch writes it and the combine reads
    it, and in the experts' layout (``at("by_expert")``) as the experts read and write it:
    the two AllToAlls."""
    import jax
    import jax.numpy as jnp

    b, T, D = x.shape
    N, C, k, E = n["N"], n["C"], n["k"], w_router.shape[1]
    xg = _rms(x).reshape(N, b * T // N, D)            # (N, n, D)
    p = jax.nn.softmax(jnp.einsum("gnd,de->gne", xg, w_router).astype(jnp.float32), -1)
    top, idx = [], []  # the top k: k rounds of argmax, as GShard's top-2 (XLA's CPU
    for _ in range(k):  # partitioner gathers every group for a lax.top_k)
        top.append(p.max(-1))
        idx.append(p.argmax(-1))
        p = jnp.where(jax.nn.one_hot(idx[-1], E, dtype=bool), -1.0, p)
    top, idx = jnp.stack(top, -1), jnp.stack(idx, -1)  # (N, n, k)
    chosen = jax.nn.one_hot(idx, E, dtype=jnp.int32).reshape(N, -1, E)  # (N, n k, E)
    slot = jnp.cumsum(chosen, axis=1) * chosen - 1    # its slot in the expert; -1: not chosen
    place = jax.nn.one_hot(slot, C, dtype=x.dtype).reshape(N, -1, k, E, C)  # (N, n, k, E, C)
    dispatch = place.sum(2)                           # (N, n, E, C), 0 or 1
    combine = (place * top[..., None, None].astype(x.dtype)).sum(2)
    xe = jnp.einsum("gnd,gnec->egcd", xg, dispatch)  # (E, N, C, D)
    xe = at("by_expert", at("by_group", xe))
    h = jax.nn.silu(jnp.einsum("egcd,edf->egcf", xe, w_gate)) * jnp.einsum(
        "egcd,edf->egcf", xe, w_up)                   # (E, N, C, F)
    ye = at("by_group", at("by_expert", jnp.einsum("egcf,efd->egcd", h, w_down)))
    return x + jnp.einsum("egcd,gnec->gnd", ye, combine).reshape(b, T, D)


def _compile_layer(jax, case: dict) -> dict:
    """One Llama-style layer: a decode step's forward (RMSNorm, q/k/v with GQA, attention of
    the new token over a KV cache of S, o_proj, residual, RMSNorm, SwiGLU, residual) or a
    training step (causal attention over T, SwiGLU, squared loss;
    gradients of every weight and of x, each sharded like its array)."""
    import jax.numpy as jnp

    kind, n = case["layer"], case["sizes"]
    sharding = _sharding_of(jax, case)
    dtype = jnp.dtype(case["dtype"])
    arrays = LAYER_ARRAYS[kind]
    names = list(arrays)
    args = [jax.ShapeDtypeStruct(tuple(n[c] for c in arrays[a]), dtype,
                                 sharding=sharding(case["specs"][a])) for a in names]

    def at(name, value):  # an intermediate where the case's layout puts it, if it says
        spec = case["specs"].get(name)
        return value if spec is None else jax.lax.with_sharding_constraint(value, sharding(spec))

    if kind == "decode":
        def step(x, g1, wq, wk, wv, wo, g2, w_gate, w_up, w_down, k_cache, v_cache):
            h = at("h", _rms(x, g1))                          # (B, D)
            q = at("q_proj", jnp.einsum("bd,dhe->bhe", h, wq)[:, None])  # (B, 1, H, d_h)
            k = jnp.einsum("bd,dge->bge", h, wk)              # (B, G, d_h)
            v = jnp.einsum("bd,dge->bge", h, wv)
            k_cache = k_cache.at[:, -1].set(k)                # the new token at S - 1
            v_cache = v_cache.at[:, -1].set(v)
            q = at("q", q)  # the queries in the KV cache's layout
            o = at("o", _attend(q, k_cache, v_cache, False, case["gqa"])[:, 0])  # (B, H, d_h)
            x = x + jnp.einsum("bhe,hed->bd", o, wo)
            h = _rms(x, g2)
            x = x + (jax.nn.silu(h @ w_gate) * (h @ w_up)) @ w_down
            return x, k_cache, v_cache

        outs = (sharding(case["specs"]["x_out"]), sharding(case["specs"]["k_cache"]),
                sharding(case["specs"]["v_cache"]))
        fn = jax.jit(step, out_shardings=outs)
    elif kind.startswith("moe"):
        def layer(x, wq, wk, wv, wo, w_router, w_gate, w_up, w_down):
            x = _attention(x, wq, wk, wv, wo, case["gqa"])
            return _moe(x, w_router, w_gate, w_up, w_down, n, at)

        if kind == "moe_forward":
            fn = jax.jit(layer, out_shardings=sharding(case["specs"]["x_out"]))
        else:
            fn = jax.jit(jax.grad(lambda *a: jnp.sum(jnp.square(layer(*a)).astype(jnp.float32)),
                                  argnums=tuple(range(len(names)))),
                         out_shardings=tuple(sharding(case["specs"][a]) for a in names))
    else:
        def loss(x, wq, wk, wv, wo, w_gate, w_up, w_down):
            x = _attention(x, wq, wk, wv, wo, case["gqa"])
            h = _rms(x)
            out = x + (jax.nn.silu(h @ w_gate) * (h @ w_up)) @ w_down
            return jnp.sum(jnp.square(out).astype(jnp.float32))

        fn = jax.jit(jax.grad(loss, argnums=tuple(range(len(names)))),
                     out_shardings=tuple(sharding(case["specs"][a]) for a in names))
    return _result(fn.lower(*args).compile(), sharding.mesh)


def main() -> None:
    request = json.load(sys.stdin)
    flags = [
        f
        for f in os.environ.get("XLA_FLAGS", "").split()
        if not f.startswith("--xla_force_host_platform_device_count")
    ]
    flags.append(f"--xla_force_host_platform_device_count={request['devices']}")
    # the oracle reads the partitioned HLO and never runs it: LLVM's optimisation of the CPU
    # code is skipped (the same collectives, about a third less compile time)
    flags.append("--xla_backend_optimization_level=0")
    os.environ["XLA_FLAGS"] = " ".join(flags)
    os.environ["JAX_PLATFORMS"] = "cpu"  # the oracle is the CPU partitioner, even beside a GPU
    out, sys.stdout = sys.stdout, sys.stderr  # a stray print must not corrupt the JSON
    import jax

    results = []
    for case in request["cases"]:
        try:
            compile_one = {"mlp_train": _compile_mlp_train,
                           "layer": _compile_layer}.get(case.get("kind"), _compile)
            results.append(compile_one(jax, case))
        except Exception as e:  # reported per case; the parent names the case and raises
            results.append({"error": f"{type(e).__name__}: {e}"})
    json.dump({"jax": jax.__version__, "results": results}, out)


if __name__ == "__main__":
    sys.path.pop(0)  # this folder: its hlo.py etc. must not shadow anything JAX imports
    main()
