"""Hugging Face ``config.json`` reading for the families beyond Llama: mixture of experts
(``mixtral``, ``qwen2_moe``), latent attention (``deepseek_v3``), ``gemma``, ``gemma2``,
``gpt2``, ``gpt_neox``, ``phi3``. :func:`symroof.models.from_hf_config` hands these model
types here; the Llama-style ones (``llama``, ``mistral``, ``qwen2``, ``qwen3``) stay with it.
Every reader starts from its family's switches
(:data:`symroof.models.family_presets.FAMILIES`) and reads the sizes and what the config
may change.

Each reader names the fields it needs; a missing one fails naming it, a malformed one
naming it and its value. What a config says that symroof's counts do not use (RoPE
scaling, dropout, initialiser ranges) is ignored; what they would need and cannot honour
is refused or said in the model's ``notes``.

>>> m = read({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
...           "n_positions": 1024, "vocab_size": 50257}, "config")
>>> m.params, m.norm, m.act, m.positions
(124439808, 'layer', 'gelu_tanh', 'learned')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import sympy as sp

from .family_presets import family_of
from .spec import MLA, MoE
from .transformer import Transformer

__all__ = ["FAMILIES", "read"]

#: the activations a config may name -> symroof's (HF's "gelu_new", "gelu_pytorch_tanh"
#: and "gelu_fast" are the tanh approximation; "gelu" is the exact erf form)
_ACTS = {"silu": "silu", "swish": "silu", "gelu": "gelu", "gelu_new": "gelu_tanh",
         "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}


def _need(config: Mapping[str, Any], kind: str, fields: tuple[str, ...]) -> dict[str, int]:
    missing = [f for f in fields if f not in config]
    if missing:
        raise ValueError(f"config is missing field(s) {', '.join(missing)} (a {kind} "
                         "config.json needs " + ", ".join(fields) + ")")
    return {f: _positive_int(config, f) for f in fields}


def _act(config: Mapping[str, Any], field: str, default: str) -> str:
    name = config.get(field) or default
    if name not in _ACTS:
        raise ValueError(f"config field {field!r} = {name!r} is not an activation symroof "
                         f"counts (known: {', '.join(_ACTS)})")
    return _ACTS[name]


def _common(config: Mapping[str, Any], source: str, kind: str, notes: list[str],
            **dims: Any) -> Transformer:
    """A Transformer with the widths, name, source and max_position every reader shares."""
    widths, read_notes = _widths(config)
    fields = family_of(kind).fields() | dims  # the family's switches, then the config's
    return Transformer(name=_name(config, source, kind), source=source,
                       max_position=_positive_int(config, "max_position_embeddings",
                                                  default=None),
                       notes=tuple(notes + read_notes), **widths, **fields)


def _llama_dims(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """D, F, L, H, G, d_h, V from the Llama-style field names."""
    n = _need(config, kind, ("hidden_size", "intermediate_size", "num_hidden_layers",
                             "num_attention_heads", "vocab_size"))
    H = n["num_attention_heads"]
    d_h = _positive_int(config, "head_dim", default=None)
    if d_h is None:
        if n["hidden_size"] % H:
            raise ValueError(f"no head_dim, and hidden_size ({n['hidden_size']}) is not "
                             f"divisible by num_attention_heads ({H})")
        d_h = n["hidden_size"] // H
    G = _positive_int(config, "num_key_value_heads", default=H)  # absent or null: MHA
    return dict(D=n["hidden_size"], F=n["intermediate_size"], L=n["num_hidden_layers"],
                H=H, G=G, d_h=d_h, V=n["vocab_size"])


def _window(config: Mapping[str, Any]) -> Any:
    if config.get("use_sliding_window", True) is False:
        return None
    return _positive_int(config, "sliding_window", default=None)


def _gpt2(config: Mapping[str, Any], source: str) -> Transformer:
    n = _need(config, "gpt2", ("n_embd", "n_layer", "n_head", "n_positions", "vocab_size"))
    D, H = n["n_embd"], n["n_head"]
    if D % H:
        raise ValueError(f"n_embd ({D}) is not divisible by n_head ({H})")
    return _common(
        {**config, "max_position_embeddings": n["n_positions"]}, source, "gpt2", [],
        D=D, F=_positive_int(config, "n_inner", default=4 * D), L=n["n_layer"], H=H, G=H,
        d_h=D // H, V=n["vocab_size"], tied=_flag(config, "tie_word_embeddings", True),
        act=_act(config, "activation_function", "gelu_new"))


def _gpt_neox(config: Mapping[str, Any], source: str) -> Transformer:
    dims = _llama_dims(config, "gpt_neox")
    pct = config.get("rotary_pct", config.get("partial_rotary_factor", 0.25))
    if isinstance(pct, bool) or not isinstance(pct, int | float) or not 0 < pct <= 1:
        raise ValueError(f"config field 'rotary_pct' must be a number in (0, 1], got {pct!r}")
    bias = _flag(config, "attention_bias", True)
    return _common(config, source, "gpt_neox", [], **dims,
                   tied=_flag(config, "tie_word_embeddings", False),
                   act=_act(config, "hidden_act", "gelu"), qkv_bias=bias, o_bias=bias,
                   rotary_dim=int(dims["d_h"] * pct),
                   parallel_residual=_flag(config, "use_parallel_residual", True))


def _gemma(config: Mapping[str, Any], source: str, kind: str = "gemma",
           **extra: Any) -> Transformer:
    notes = []
    act = _act(config, "hidden_activation" if config.get("hidden_activation") else
               "hidden_act", "gelu_pytorch_tanh")
    if act == "gelu":  # transformers runs Gemma's "gelu" as the tanh approximation
        act = "gelu_tanh"
        notes.append("hidden_act 'gelu' read as gelu_pytorch_tanh, as transformers runs it")
    return _common(config, source, kind, notes, **_llama_dims(config, kind),
                   tied=_flag(config, "tie_word_embeddings", True), act=act, **extra)


def _gemma2(config: Mapping[str, Any], source: str) -> Transformer:
    caps = {}
    for field, name in (("attn_logit_softcapping", "attn_softcap"),
                        ("final_logit_softcapping", "final_softcap")):
        value = config.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or value <= 0):
            raise ValueError(f"config field {field!r} must be a positive number or null, got "
                             f"{value!r}")
        caps[name] = value
    return _gemma(config, source, "gemma2", window=_window(config), **caps)


def _phi3(config: Mapping[str, Any], source: str) -> Transformer:
    dims = _llama_dims(config, "phi3")
    factor = config.get("partial_rotary_factor", 1.0)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= 1:
        raise ValueError(f"config field 'partial_rotary_factor' must be a number in (0, 1], "
                         f"got {factor!r}")
    return _common(config, source, "phi3", [], **dims,
                   tied=_flag(config, "tie_word_embeddings", False),
                   act=_act(config, "hidden_act", "silu"), rotary_dim=int(dims["d_h"] * factor),
                   window=_window(config))


def _mixtral(config: Mapping[str, Any], source: str) -> Transformer:
    dims = _llama_dims(config, "mixtral")
    n = _need(config, "mixtral", ("num_local_experts", "num_experts_per_tok"))
    moe = MoE(E=n["num_local_experts"], k=n["num_experts_per_tok"], F=dims["F"],
              norm_topk=True)  # Mixtral renormalises its top-2 weights
    return _common(config, source, "mixtral", [], **dims, window=_window(config), moe=moe)


def _qwen2_moe(config: Mapping[str, Any], source: str) -> Transformer:
    dims = _llama_dims(config, "qwen2_moe")
    n = _need(config, "qwen2_moe", ("num_experts", "num_experts_per_tok",
                                    "moe_intermediate_size"))
    if config.get("decoder_sparse_step", 1) != 1 or config.get("mlp_only_layers"):
        raise ValueError("fields 'decoder_sparse_step' (other than 1) and 'mlp_only_layers' "
                         "(dense layers between MoE ones) are not supported")
    shared = _positive_int(config, "shared_expert_intermediate_size", default=0) \
        if config.get("shared_expert_intermediate_size") else 0
    moe = MoE(E=n["num_experts"], k=n["num_experts_per_tok"], F=n["moe_intermediate_size"],
              shared_F=shared, shared_gate=bool(shared),
              norm_topk=_flag(config, "norm_topk_prob", False))
    return _common(config, source, "qwen2_moe", [], **dims, window=_window(config),
                   moe=moe)


def _deepseek_v3(config: Mapping[str, Any], source: str) -> Transformer:
    dims = _llama_dims(config, "deepseek_v3")
    n = _need(config, "deepseek_v3", (
        "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "kv_lora_rank",
        "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if config.get("moe_layer_freq", 1) != 1:
        raise ValueError(f"field 'moe_layer_freq' = {config['moe_layer_freq']!r}: only 1 "
                         "(every layer past the dense ones) is supported")
    scoring = config.get("scoring_func", "sigmoid")
    if scoring not in ("sigmoid", "softmax"):
        raise ValueError(f"config field 'scoring_func' = {scoring!r}: known sigmoid, softmax")
    shared = _positive_int(config, "n_shared_experts", default=0, minimum=0)
    scale = config.get("routed_scaling_factor", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not scale > 0:
        raise ValueError(f"config field 'routed_scaling_factor' must be a positive number, "
                         f"got {scale!r}")
    moe = MoE(E=n["n_routed_experts"], k=n["num_experts_per_tok"],
              F=n["moe_intermediate_size"], shared_F=shared * n["moe_intermediate_size"],
              router=scoring, router_bias=config.get("topk_method") == "noaux_tc",
              norm_topk=_flag(config, "norm_topk_prob", True), scale=scale,
              groups=_positive_int(config, "n_group", default=1),
              topk_groups=_positive_int(config, "topk_group", default=1),
              dense_layers=_positive_int(config, "first_k_dense_replace", default=0,
                                         minimum=0))
    mla = MLA(kv_rank=n["kv_lora_rank"], d_nope=n["qk_nope_head_dim"],
              d_rope=n["qk_rope_head_dim"], d_v=n["v_head_dim"],
              q_rank=_positive_int(config, "q_lora_rank", default=None))
    notes = []
    if config.get("num_nextn_predict_layers"):
        notes.append(f"num_nextn_predict_layers = {config['num_nextn_predict_layers']}: the "
                     "multi-token-prediction module is not counted (transformers drops it)")
    dims |= {"G": dims["H"], "d_h": n["qk_nope_head_dim"] + n["qk_rope_head_dim"]}
    return _common(config, source, "deepseek_v3", notes, **dims,
                   tied=_flag(config, "tie_word_embeddings", False), moe=moe, mla=mla)


#: model_type -> reader
FAMILIES: dict[str, Callable[[Mapping[str, Any], str], Transformer]] = {
    "mixtral": _mixtral, "qwen2_moe": _qwen2_moe, "deepseek_v3": _deepseek_v3,
    "gemma": _gemma, "gemma2": _gemma2, "gpt2": _gpt2, "gpt_neox": _gpt_neox, "phi3": _phi3,
}


def read(config: Mapping[str, Any], source: str) -> Transformer:
    """The Transformer a config of one of :data:`FAMILIES` describes."""
    return FAMILIES[config["model_type"]](config, source)


# The field readers every config reader shares (the Llama-style one in presets too).

def _name(config: Mapping[str, Any], source: str, kind: str) -> str:
    """``_name_or_path``; else the folder of a config.json (``org/name`` for a Hugging Face
    cache snapshot), else the file's name; else the model_type."""
    given = config.get("_name_or_path")
    if isinstance(given, str) and given.strip():
        return given.strip()
    if source == "config":  # a dict, no file
        return str(kind)
    path = Path(os.path.abspath(source))
    if path.name != "config.json":
        return path.name.removesuffix(".json").removesuffix(".config") or str(kind)
    snapshot = path.parent.parent
    if snapshot.name == "snapshots" and snapshot.parent.name.startswith("models--"):
        return snapshot.parent.name.removeprefix("models--").replace("--", "/")
    return path.parent.name or str(kind)


#: torch_dtype (``dtype`` in newer configs) -> bytes per element
_TORCH_WIDTHS = {"bfloat16": 2, "float16": 2, "float32": 4}


def _widths(config: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The element widths a config states (torch_dtype, quantization_config), and notes
    on what it changed or what could not be honoured."""
    widths: dict[str, Any] = {}
    notes = []
    dtype = config.get("torch_dtype", config.get("dtype"))
    if dtype is not None:
        width = _TORCH_WIDTHS.get(str(dtype).removeprefix("torch."))
        if width is None:
            notes.append(f"torch_dtype {dtype!r} is not a width symroof reads: weights, "
                         "activations and KV cache at 2 bytes (set --w-bytes, --act-bytes, "
                         "--kv-bytes)")
        elif width != 2:
            widths = dict.fromkeys(("w_bytes", "act_bytes", "kv_bytes"), width)
            notes.append(f"torch_dtype {dtype}: weights, activations and KV cache at "
                         f"{width} bytes")
    if config.get("quantization_config") is not None:
        bits, method = _quant_bits(config["quantization_config"])
        if bits:
            widths["w_bytes"] = sp.Rational(bits, 8)
            notes.append(f"quantization_config ({method}): {bits}-bit weights, w_bytes = "
                         f"{widths['w_bytes']} (scales and zero points not counted)")
        else:
            notes.append(f"quantization_config ({method}) is not modelled: weights at "
                         f"w_bytes = {widths.get('w_bytes', 2)} (set --w-bytes)")
    return widths, notes


def _quant_bits(quant: Any) -> tuple[int | None, str]:
    """Bits per weight of a quantization_config (GPTQ/AWQ ``bits``, bitsandbytes, fp8)."""
    if not isinstance(quant, Mapping):
        return None, repr(quant)
    method = str(quant.get("quant_method", "no quant_method"))
    for key in ("bits", "w_bit", "weight_bits"):
        if type(quant.get(key)) is int and 1 <= quant[key] <= 16:
            return quant[key], method
    if quant.get("load_in_4bit") is True or quant.get("load_in_8bit") is True:
        return (4 if quant.get("load_in_4bit") is True else 8), method
    return (8, method) if "fp8" in method.lower() else (None, method)


def _positive_int(config: Mapping[str, Any], field: str, default: Any = ...,
                  minimum: int = 1) -> Any:
    """``config[field]`` as an int >= ``minimum`` (a positive one by default); absent or
    null gives ``default`` (if any)."""
    value = config.get(field)
    if value is None and default is not ...:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"config field {field!r} must be {what}, got {value!r}")
    return value


def _flag(config: Mapping[str, Any], field: str, default: bool) -> bool:
    value = config.get(field, default)
    if not isinstance(value, bool):
        raise ValueError(f"config field {field!r} must be true or false, got {value!r}")
    return value
