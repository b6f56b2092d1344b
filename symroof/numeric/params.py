"""Parameters of the NumPy decoder: random initialisation for any family, counting, and a
shape check.

Names per layer: ``attn_norm`` (``_b`` its LayerNorm bias), ``wq wk wv`` or ``wqkv`` (biases
``bq`` ...), Qwen3's per-head ``q_norm k_norm``, MLA's ``wq_a q_a_norm wq_b`` (or ``wq``),
``wkv_a kv_a_norm wkv_b``; ``wo`` (``bo``); ``attn_post_norm``; ``mlp_norm``; ``w_gate w_up``
or ``w_gate_up``, ``w_down`` (biases ``b_...``); an MoE layer's ``w_router``
(``router_bias``), ``experts`` (a list of ``w_gate w_up w_down``), ``shared`` and
``w_shared_gate``; ``mlp_post_norm``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .config import Config

__all__ = ["init_params", "count_params", "check_params"]


class _Init:
    """Random arrays: matrices N(0, 1/fan_in), norm weights 1 + N(0, 0.1^2), biases
    N(0, 0.1^2) (perturbed so that a test notices one being ignored)."""

    def __init__(self, seed: int, dtype: Any):
        self.rng, self.dtype = np.random.default_rng(seed), dtype

    def matrix(self, n_in: int, n_out: int) -> np.ndarray:
        return (self.rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(self.dtype)

    def near_one(self, n: int) -> np.ndarray:
        return (1.0 + 0.1 * self.rng.standard_normal(n)).astype(self.dtype)

    def small(self, n: int) -> np.ndarray:
        return (0.1 * self.rng.standard_normal(n)).astype(self.dtype)

    def norm(self, layer: dict, name: str, d: int, kind: str) -> None:
        layer[name] = self.near_one(d)
        if kind == "layer":
            layer[name + "_b"] = self.small(d)

    def linear(self, layer: dict, w: str, b: str | None, n_in: int, n_out: int) -> None:
        layer[w] = self.matrix(n_in, n_out)
        if b is not None:
            layer[b] = self.small(n_out)


def _attention(init: _Init, cfg: Config, layer: dict) -> None:
    D, H, G, d_h, a = cfg.D, cfg.H, cfg.G, cfg.d_h, cfg.mla
    if a is not None:
        if a.q_rank is not None:
            init.linear(layer, "wq_a", None, D, a.q_rank)
            layer["q_a_norm"] = init.near_one(a.q_rank)
            init.linear(layer, "wq_b", None, a.q_rank, H * (a.d_nope + a.d_rope))
        else:
            init.linear(layer, "wq", None, D, H * (a.d_nope + a.d_rope))
        init.linear(layer, "wkv_a", None, D, a.kv_rank + a.d_rope)
        layer["kv_a_norm"] = init.near_one(a.kv_rank)
        init.linear(layer, "wkv_b", None, a.kv_rank, H * (a.d_nope + a.d_v))
        init.linear(layer, "wo", "bo" if cfg.o_bias else None, H * a.d_v, D)
        return
    widths = {"q": H * d_h, "k": G * d_h, "v": G * d_h}  # matrices first, then biases
    if cfg.fused_qkv:
        widths = {"qkv": (H + 2 * G) * d_h}
    for name, width in widths.items():
        init.linear(layer, f"w{name}", None, D, width)
    init.linear(layer, "wo", None, H * d_h, D)
    if cfg.qk_norm:  # one weight of d_h shared by the query heads, one by the key heads
        layer["q_norm"] = init.near_one(d_h)
        layer["k_norm"] = init.near_one(d_h)
    for name, width in widths.items():
        if cfg.qkv_bias:
            layer[f"b{name}"] = init.small(width)
    if cfg.o_bias:
        layer["bo"] = init.small(D)


def _mlp(init: _Init, cfg: Config, layer: dict, F: int, bias: bool) -> None:
    D = cfg.D
    if not cfg.gated:
        init.linear(layer, "w_up", "b_up" if bias else None, D, F)
    elif cfg.fused_gate_up:
        init.linear(layer, "w_gate_up", "b_gate_up" if bias else None, D, 2 * F)
    else:
        init.linear(layer, "w_gate", "b_gate" if bias else None, D, F)
        init.linear(layer, "w_up", "b_up" if bias else None, D, F)
    init.linear(layer, "w_down", "b_down" if bias else None, F, D)


def _moe(init: _Init, cfg: Config, layer: dict) -> None:
    moe, D = cfg.moe, cfg.D
    init.linear(layer, "w_router", None, D, moe.E)
    if moe.router_bias:
        layer["router_bias"] = init.small(moe.E)
    expert = cfg.replace(fused_gate_up=False, gated=True)  # experts: three matrices
    layer["experts"] = []
    for _ in range(moe.E):
        layer["experts"].append({})
        _mlp(init, expert, layer["experts"][-1], moe.F, False)
    if moe.shared_F:
        layer["shared"] = {}
        _mlp(init, expert, layer["shared"], moe.shared_F, False)
        if moe.shared_gate:
            init.linear(layer, "w_shared_gate", None, D, 1)


def init_params(cfg: Config, seed: int = 0, dtype: Any = np.float64) -> dict[str, Any]:
    """Random parameters for ``cfg``, scaled so that activations stay O(1).

    >>> from symroof.numeric import TINY
    >>> p = init_params(TINY)
    >>> p["embed"].shape, p["layers"][0]["wk"].shape, p["lm_head"].shape
    ((256, 64), (64, 16), (64, 256))
    """
    init = _Init(seed, dtype)
    params: dict[str, Any] = {"embed": init.rng.standard_normal((cfg.V, cfg.D)).astype(dtype),
                              "layers": []}
    if cfg.positions == "learned":
        params["pos_embed"] = (0.1 * init.rng.standard_normal((cfg.max_position, cfg.D))
                               ).astype(dtype)
    for l in range(cfg.L):
        layer: dict[str, Any] = {}
        init.norm(layer, "attn_norm", cfg.D, cfg.norm)
        _attention(init, cfg, layer)
        if cfg.post_norms:
            init.norm(layer, "attn_post_norm", cfg.D, cfg.norm)
        init.norm(layer, "mlp_norm", cfg.D, cfg.norm)
        if cfg.is_moe(l):
            _moe(init, cfg, layer)
        else:
            _mlp(init, cfg, layer, cfg.F, cfg.mlp_bias)
        if cfg.post_norms:
            init.norm(layer, "mlp_post_norm", cfg.D, cfg.norm)
        params["layers"].append(layer)
    final: dict[str, Any] = {}
    init.norm(final, "final_norm", cfg.D, cfg.norm)
    params |= final
    if not cfg.tied:
        params["lm_head"] = init.matrix(cfg.D, cfg.V)
    return params


def count_params(params: dict[str, Any]) -> int:
    """Number of scalars in every array of ``params`` (a tied embedding counts once).

    >>> from symroof.numeric import Config
    >>> cfg = Config(D=4, F=8, L=1, H=2, G=1, d_h=2, V=10, tied=True)
    >>> count_params(init_params(cfg)) == 10*4 + (4 + 4*4 + 2*4*2 + 4*4 + 4 + 3*4*8) + 4
    True
    """
    if isinstance(params, np.ndarray):
        return int(params.size)
    if isinstance(params, dict):
        return sum(count_params(v) for v in params.values())
    if isinstance(params, list | tuple):
        return sum(count_params(v) for v in params)
    raise TypeError(f"params must hold arrays in dicts and lists, got {type(params).__name__}")


def check_params(params: dict[str, Any], cfg: Config) -> None:
    """Raise ValueError when ``params`` do not fit ``cfg`` (shapes of embed, layers, head)."""
    embed = params.get("embed")
    if embed is None or embed.shape != (cfg.V, cfg.D):
        got = None if embed is None else embed.shape
        raise ValueError(f"params['embed'] must have shape (V, D) = {(cfg.V, cfg.D)}, got {got}")
    n_layers = len(params.get("layers", ()))
    if n_layers != cfg.L:
        raise ValueError(f"params must hold L = {cfg.L} layers, got {n_layers}")
    if cfg.tied == ("lm_head" in params):
        raise ValueError(f"cfg.tied is {cfg.tied} but params "
                         f"{'have' if 'lm_head' in params else 'lack'} 'lm_head'")
    first = params["layers"][0]
    if cfg.qkv_bias and not ({"bq", "bqkv"} & set(first)):
        raise ValueError("cfg.qkv_bias is True but params lack the biases bq, bk, bv")
    if cfg.is_moe(0) != ("experts" in first):
        raise ValueError("params' first layer does not match cfg.moe (experts or a dense MLP)")
