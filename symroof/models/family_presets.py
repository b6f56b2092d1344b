"""The families, each a preset of blocks (:class:`~symroof.models.blocks.Family`: the
blocks' switches, the sizes left to a release), and the presets of the families beyond
Llama, each read off its release's ``config.json`` (the source beside it);
:data:`symroof.models.MODELS` holds them with the Llama ones. A Hugging Face config of a
family starts from the same switches (``model_types``; :mod:`symroof.models.hf`,
:func:`symroof.models.from_hf_config`).

>>> {m.name: m.params for m in FAMILY_PRESETS if m.name in ("gpt2", "mixtral-8x7b")}
{'mixtral-8x7b': 46702792704, 'gpt2': 124439808}
>>> FAMILIES["qwen3"].fields()                     # Llama with per-head q/k RMSNorms
{'qk_norm': True}
>>> family_of("mistral").name
'llama'
"""

from __future__ import annotations

from typing import Any

from .blocks import Attention, DenseMLP, Embedding, Family, Learned, Norm, Residual
from .spec import MLA, MoE
from .transformer import Transformer

__all__ = ["FAMILIES", "FAMILY_PRESETS", "family_of"]

_HF = "https://huggingface.co/{}/blob/main/config.json"

_GEGLU = DenseMLP(act="gelu_tanh")
#: every family, by name: the blocks that differ from Llama's (RMSNorm, RoPE, GQA without
#: biases, SwiGLU, sequential residual, untied embedding)
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("llama", model_types=("llama", "mistral")),
    Family("qwen2", (Attention(qkv_bias=True),), model_types=("qwen2",)),
    Family("qwen3", (Attention(qk_norm=True),), model_types=("qwen3",)),
    Family("mixtral", model_types=("mixtral",)),
    Family("qwen2-moe", (Attention(qkv_bias=True),), model_types=("qwen2_moe",)),
    Family("deepseek-v3", model_types=("deepseek_v3",)),
    Family("gemma", (Embedding(scale=True, tied=True), _GEGLU), model_types=("gemma",)),
    Family("gemma-2", (Embedding(scale=True, tied=True), _GEGLU,
                       Attention(window_pattern=(True, False)),  # even layers slide
                       Residual(post_norms=True)), model_types=("gemma2",)),
    Family("gpt2", (Embedding(tied=True), Learned(), Norm("layer"),
                    Attention(fused_qkv=True, qkv_bias=True, o_bias=True),
                    DenseMLP(act="gelu_tanh", gated=False, bias=True)),
           model_types=("gpt2",)),
    Family("gpt-neox", (Norm("layer"), Attention(fused_qkv=True, qkv_bias=True, o_bias=True),
                        DenseMLP(act="gelu", gated=False, bias=True),
                        Residual(parallel=True)), model_types=("gpt_neox",)),
    Family("phi-3", (Attention(fused_qkv=True), DenseMLP(fused=True)),
           model_types=("phi3",)),
)}


def family_of(model_type: str) -> Family:
    """The family a Hugging Face ``model_type`` belongs to.

    >>> family_of("bert")
    Traceback (most recent call last):
    ...
    ValueError: model_type 'bert' belongs to no family; known: deepseek_v3, gemma, gemma2, ...
    """
    for f in FAMILIES.values():
        if model_type in f.model_types:
            return f
    known = sorted(t for f in FAMILIES.values() for t in f.model_types)
    raise ValueError(f"model_type {model_type!r} belongs to no family; known: "
                     f"{', '.join(known[:3])}, ...")


def _preset(name: str, repo: str, family: str, **sizes: Any) -> Transformer:
    """A release of ``family``: its blocks' switches and the release's sizes."""
    return Transformer(name=name, source=_HF.format(repo), **FAMILIES[family].fields() | sizes)


FAMILY_PRESETS: tuple[Transformer, ...] = (
    _preset("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", "mixtral",
            D=4096, F=14336, L=32, H=32, G=8, d_h=128, V=32000, max_position=32768,
            moe=MoE(E=8, k=2, F=14336, norm_topk=True)),
    _preset("qwen1.5-moe-a2.7b", "Qwen/Qwen1.5-MoE-A2.7B", "qwen2-moe",
            D=2048, F=5632, L=24, H=16, G=16, d_h=128, V=151936, max_position=8192,
            moe=MoE(E=60, k=4, F=1408, shared_F=5632, shared_gate=True)),
    _preset("deepseek-v3", "deepseek-ai/DeepSeek-V3", "deepseek-v3",  # fp8: 1-byte weights
            D=7168, F=18432, L=61, H=128, G=128, d_h=192, V=129280, max_position=163840,
            w_bytes=1,
            moe=MoE(E=256, k=8, F=2048, shared_F=2048, router="sigmoid", router_bias=True,
                    norm_topk=True, scale=2.5, groups=8, topk_groups=4, dense_layers=3),
            mla=MLA(kv_rank=512, d_nope=128, d_rope=64, d_v=128, q_rank=1536)),
    _preset("gemma-7b", "google/gemma-7b", "gemma",
            D=3072, F=24576, L=28, H=16, G=16, d_h=256, V=256000, max_position=8192),
    _preset("gemma-2-9b", "google/gemma-2-9b", "gemma-2",
            D=3584, F=14336, L=42, H=16, G=8, d_h=256, V=256000, max_position=8192,
            attn_softcap=50, final_softcap=30, window=4096),
    _preset("gpt2", "openai-community/gpt2", "gpt2",
            D=768, F=3072, L=12, H=12, G=12, d_h=64, V=50257, max_position=1024),
    _preset("pythia-160m", "EleutherAI/pythia-160m", "gpt-neox",
            D=768, F=3072, L=12, H=12, G=12, d_h=64, V=50304, max_position=2048,
            rotary_dim=16),
    _preset("qwen3-0.6b", "Qwen/Qwen3-0.6B", "qwen3",  # d_h 128 != D/H = 64
            D=1024, F=3072, L=28, H=16, G=8, d_h=128, V=151936, max_position=40960,
            tied=True),
    _preset("qwen3-8b", "Qwen/Qwen3-8B", "qwen3",
            D=4096, F=12288, L=36, H=32, G=8, d_h=128, V=151936, max_position=40960),
    _preset("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", "phi-3",
            D=3072, F=8192, L=32, H=32, G=32, d_h=96, V=32064, max_position=4096,
            window=2047),
)
