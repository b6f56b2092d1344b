"""Model presets, each with its source, and Hugging Face ``config.json`` reading (offline).

>>> model("llama-3.1-8b").params
8030261248
>>> model("llama-2-7b").params
6738415616
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from . import hf
from .family_presets import FAMILIES, FAMILY_PRESETS, family_of
from .hf import _flag, _name, _positive_int, _widths
from .transformer import Transformer

__all__ = ["MODELS", "model", "from_hf_config"]

_HF = "https://huggingface.co/{}/blob/main/config.json"


def _preset(name: str, repo: str, **dims: Any) -> Transformer:
    # max_position: the config's max_position_embeddings, from the same source
    return Transformer(name=name, source=_HF.format(repo), **dims)


def _tiny() -> Transformer:
    from ..numeric.config import TINY  # one home for the tiny config: the NumPy model's

    return Transformer(D=TINY.D, F=TINY.F, L=TINY.L, H=TINY.H, G=TINY.G, d_h=TINY.d_h,
                       V=TINY.V, tied=TINY.tied, qkv_bias=TINY.qkv_bias, name="tiny",
                       source="symroof.numeric.TINY (runs in milliseconds)")


MODELS: dict[str, Transformer] = {
    m.name: m for m in (
        _preset("llama-3.1-8b", "meta-llama/Llama-3.1-8B",
                D=4096, F=14336, L=32, H=32, G=8, d_h=128, V=128256, max_position=131072),
        _preset("llama-3.1-70b", "meta-llama/Llama-3.1-70B",
                D=8192, F=28672, L=80, H=64, G=8, d_h=128, V=128256, max_position=131072),
        _preset("llama-3.1-405b", "meta-llama/Llama-3.1-405B",
                D=16384, F=53248, L=126, H=128, G=8, d_h=128, V=128256,
                max_position=131072),
        _preset("llama-2-7b", "meta-llama/Llama-2-7b-hf",
                D=4096, F=11008, L=32, H=32, G=32, d_h=128, V=32000, max_position=4096),
        _preset("llama-2-13b", "meta-llama/Llama-2-13b-hf",
                D=5120, F=13824, L=40, H=40, G=40, d_h=128, V=32000, max_position=4096),
        _preset("mistral-7b", "mistralai/Mistral-7B-v0.1",
                D=4096, F=14336, L=32, H=32, G=8, d_h=128, V=32000, window=4096,
                max_position=32768),  # positions up to 32768, attention within the window
        *FAMILY_PRESETS,  # MoE, MLA, Gemma, GPT-2, GPT-NeoX, Phi-3 (family_presets.py)
        _tiny(),
    )
}


def model(name: str) -> Transformer:
    """A preset by name (case-insensitive), or a Transformer read from a path to a Hugging
    Face ``config.json``. Unknown names fail and list the known ones.

    >>> model("mistral-7b").G
    8
    """
    if not isinstance(name, str):
        raise ValueError(f"model name must be a string, got {name!r}")
    key = name.strip().lower()
    if key in MODELS:
        return MODELS[key]
    if key.endswith(".json") or os.path.sep in name:
        return from_hf_config(name)
    raise ValueError(f"unknown model {name!r}; known models: {', '.join(MODELS)} "
                     "(or a path to a Hugging Face config.json)")


def _supported() -> set[str]:
    """Every model type a config may name: each family's in FAMILIES (the Llama-style ones
    read here, the others by hf.py)."""
    return {t for f in FAMILIES.values() for t in f.model_types} | set(hf.FAMILIES)


_REQUIRED = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "vocab_size")


def from_hf_config(config: str | os.PathLike | Mapping[str, Any]) -> Transformer:
    """Read a Hugging Face config (a path to ``config.json`` or its dict).

    For llama, mistral, qwen2 and qwen3 (its per-head q/k norms) it reads hidden_size,
    intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default:
    MHA), head_dim (default hidden_size / heads), vocab_size, tie_word_embeddings,
    attention_bias (Qwen2 always has q/k/v biases), sliding_window (unless use_sliding_window is
    false) and max_position_embeddings; mixtral, qwen2_moe, deepseek_v3, gemma, gemma2, gpt2,
    gpt_neox and phi3 are read by :mod:`symroof.models.hf`. Another model_type, features these
    do not have (MLP biases in a llama config), a missing or malformed field fail, naming it.

    ``torch_dtype`` sets the element widths (float32: 4 bytes) and ``quantization_config``
    the weights' (its bits over 8); what cannot be honoured, and a missing ``model_type``
    (read as llama), is said in the model's ``notes``. The name is ``_name_or_path``, else
    the folder of a ``config.json`` (``org/name`` in a Hugging Face cache), else the file's.

    >>> cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    ...        "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}
    >>> m = from_hf_config(cfg | {"quantization_config": {"quant_method": "gptq", "bits": 4}})
    >>> m.params, m.w_bytes, m.notes[0]
    (6738415616, 1/2, 'quantization_config (gptq): 4-bit weights, w_bytes = 1/2 (scales and ...)')
    """
    source = "config"
    if not isinstance(config, Mapping):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as fh:
                config = json.load(fh)
        except FileNotFoundError:
            raise ValueError(f"config file not found: {path!r}") from None
        except json.JSONDecodeError as err:
            raise ValueError(f"config file {path!r} is not valid JSON: {err}") from None
        except UnicodeDecodeError as err:
            raise ValueError(f"config file {path!r} is not UTF-8 text: {err}") from None
        except IsADirectoryError:
            raise ValueError(f"config path {path!r} is a folder; give its config.json") from None
        if not isinstance(config, Mapping):
            raise ValueError(f"config file {path!r} does not hold a JSON object")
        source = path
    try:
        return _transformer(config, source)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None


def _transformer(config: Mapping[str, Any], source: str) -> Transformer:
    kind = config.get("model_type", "llama")
    if not isinstance(kind, str):  # a list or a number is no model type (and not hashable)
        raise ValueError(f"config field 'model_type' must be a string, got {json.dumps(kind)}")
    notes = [] if "model_type" in config else ["config has no model_type: read as a "
                                                 "Llama-style decoder (llama)"]
    if kind not in _supported():
        raise ValueError(f"model_type {kind!r} is not supported (supported: "
                         f"{', '.join(sorted(_supported()))})")
    if kind in hf.FAMILIES:
        return hf.read(config, source)
    for field in ("num_local_experts", "num_experts", "n_routed_experts"):
        if config.get(field):
            raise ValueError(f"field {field!r} = {config[field]!r}: experts are read from "
                             "model_type mixtral, qwen2_moe or deepseek_v3, not " + repr(kind))
    if config.get("mlp_bias"):
        raise ValueError("field 'mlp_bias' = true: MLP biases are not supported")
    if config.get("hidden_act", "silu") != "silu":
        raise ValueError(f"field 'hidden_act' = {config['hidden_act']!r}: only silu (SwiGLU) "
                         "is supported")
    missing = [f for f in _REQUIRED if f not in config]
    if missing:
        raise ValueError(f"config is missing field(s) {', '.join(missing)} (a Llama-style "
                         "config.json needs " + ", ".join(_REQUIRED) + ")")
    dims = {field: _positive_int(config, field) for field in _REQUIRED}
    H = dims["num_attention_heads"]
    G = _positive_int(config, "num_key_value_heads", default=H)  # absent or null: MHA
    head_dim = _positive_int(config, "head_dim", default=None)
    if head_dim is None:
        if dims["hidden_size"] % H:
            raise ValueError("no head_dim, and hidden_size "
                             f"({dims['hidden_size']}) is not divisible by num_attention_heads "
                             f"({H})")
        head_dim = dims["hidden_size"] // H
    window = None
    if config.get("use_sliding_window", True) is not False:
        window = _positive_int(config, "sliding_window", default=None)
    family = family_of(kind).fields()  # its blocks' switches (qwen3: the q/k norms)
    tied = _flag(config, "tie_word_embeddings", False)
    qkv_bias = _flag(config, "attention_bias", family.get("qkv_bias", False))
    widths, read = _widths(config)
    return Transformer(**family | dict(
        D=dims["hidden_size"], F=dims["intermediate_size"], L=dims["num_hidden_layers"],
        H=H, G=G, d_h=head_dim, V=dims["vocab_size"], tied=tied, qkv_bias=qkv_bias,
        window=window, name=_name(config, source, kind), source=source,
        max_position=_positive_int(config, "max_position_embeddings", default=None),
        notes=tuple(notes + read), **widths))
