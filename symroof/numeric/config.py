"""Model configuration and parameters of the NumPy Llama-family decoder.

Notation (docs/accounting.md): D model width, F MLP width, L layers, H query heads, G KV heads
(H % G == 0; query head h reads KV head h // (H // G)), d_h head dim (not assumed D / H),
V vocabulary.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

_DIMS = ("D", "F", "L", "H", "G", "d_h", "V")


@dataclass(frozen=True)
class Config:
    """Shape of a Llama-style decoder; every dimension a positive integer.

    >>> cfg = Config(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256)
    >>> cfg.H // cfg.G  # query heads per KV head
    4
    >>> Config(D=64, F=172, L=2, H=-2, G=2, d_h=8, V=256)
    Traceback (most recent call last):
    ...
    ValueError: H must be a positive integer, got -2
    """

    D: int
    F: int
    L: int
    H: int
    G: int
    d_h: int
    V: int
    tied: bool = False
    qkv_bias: bool = False
    rope_theta: float = 10000.0
    eps: float = 1e-5
    name: str = "custom"

    def __post_init__(self) -> None:
        for name in _DIMS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            object.__setattr__(self, name, operator.index(value))
        if self.H % self.G:
            raise ValueError(f"H ({self.H}) must be divisible by G ({self.G}): "
                             f"each KV head serves H/G query heads")
        if self.d_h % 2:
            raise ValueError(f"d_h must be even (RoPE rotates pairs), got {self.d_h}")
        for name in ("tied", "qkv_bias"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name in ("rope_theta", "eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a string, got {self.name!r}")

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed (validated again).

        >>> TINY.replace(G=8).G
        8
        """
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise ValueError(f"unknown Config fields {sorted(unknown)}")
        return Config(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **changes})


TINY = Config(D=64, F=172, L=2, H=8, G=2, d_h=8, V=256, name="tiny")


def init_params(cfg: Config, seed: int = 0, dtype: Any = np.float64) -> dict[str, Any]:
    """Random parameters for ``cfg``, scaled so that activations stay O(1).

    Matrices are N(0, 1/fan_in); the embedding is N(0, 1); norm weights are 1 + N(0, 0.1^2)
    and biases N(0, 0.1^2) (perturbed so that a test notices one being ignored).

    >>> p = init_params(TINY)
    >>> p["embed"].shape, p["layers"][0]["wk"].shape, p["lm_head"].shape
    ((256, 64), (64, 16), (64, 256))
    """
    rng = np.random.default_rng(seed)
    D, F, H, G, d_h, V = cfg.D, cfg.F, cfg.H, cfg.G, cfg.d_h, cfg.V

    def matrix(n_in: int, n_out: int) -> np.ndarray:
        return (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(dtype)

    def near_one(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(dtype)

    def small(n: int) -> np.ndarray:
        return (0.1 * rng.standard_normal(n)).astype(dtype)

    params: dict[str, Any] = {"embed": rng.standard_normal((V, D)).astype(dtype), "layers": []}
    for _ in range(cfg.L):
        layer = {"attn_norm": near_one(D), "wq": matrix(D, H * d_h), "wk": matrix(D, G * d_h),
                 "wv": matrix(D, G * d_h), "wo": matrix(H * d_h, D)}
        if cfg.qkv_bias:
            layer.update(bq=small(H * d_h), bk=small(G * d_h), bv=small(G * d_h))
        layer.update(mlp_norm=near_one(D), w_gate=matrix(D, F), w_up=matrix(D, F),
                     w_down=matrix(F, D))
        params["layers"].append(layer)
    params["final_norm"] = near_one(D)
    if not cfg.tied:
        params["lm_head"] = matrix(D, V)
    return params


def count_params(params: dict[str, Any]) -> int:
    """Number of scalars in every array of ``params`` (a tied embedding counts once).

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
    if cfg.qkv_bias and "bq" not in params["layers"][0]:
        raise ValueError("cfg.qkv_bias is True but params lack the biases bq, bk, bv")
