"""Presets of the families beyond Llama, each read off its release's ``config.json`` (the
source beside it); :data:`symroof.models.MODELS` holds them with the Llama ones.

>>> {m.name: m.params for m in FAMILY_PRESETS if m.name in ("gpt2", "mixtral-8x7b")}
{'mixtral-8x7b': 46702792704, 'gpt2': 124439808}
"""

from __future__ import annotations

from typing import Any

from .spec import MLA, MoE
from .transformer import Transformer

__all__ = ["FAMILY_PRESETS"]

_HF = "https://huggingface.co/{}/blob/main/config.json"


def _preset(name: str, repo: str, **fields: Any) -> Transformer:
    return Transformer(name=name, source=_HF.format(repo), **fields)


_GEMMA = dict(tied=True, act="gelu_tanh", embed_scale=True)  # GeGLU, sqrt(D), tied

FAMILY_PRESETS: tuple[Transformer, ...] = (
    _preset("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1",
            D=4096, F=14336, L=32, H=32, G=8, d_h=128, V=32000, max_position=32768,
            moe=MoE(E=8, k=2, F=14336, norm_topk=True)),
    _preset("qwen1.5-moe-a2.7b", "Qwen/Qwen1.5-MoE-A2.7B",
            D=2048, F=5632, L=24, H=16, G=16, d_h=128, V=151936, qkv_bias=True,
            max_position=8192,
            moe=MoE(E=60, k=4, F=1408, shared_F=5632, shared_gate=True)),
    _preset("deepseek-v3", "deepseek-ai/DeepSeek-V3",  # released in fp8: 1-byte weights
            D=7168, F=18432, L=61, H=128, G=128, d_h=192, V=129280, max_position=163840,
            w_bytes=1,
            moe=MoE(E=256, k=8, F=2048, shared_F=2048, router="sigmoid", router_bias=True,
                    norm_topk=True, scale=2.5, groups=8, topk_groups=4, dense_layers=3),
            mla=MLA(kv_rank=512, d_nope=128, d_rope=64, d_v=128, q_rank=1536)),
    _preset("gemma-7b", "google/gemma-7b",
            D=3072, F=24576, L=28, H=16, G=16, d_h=256, V=256000, max_position=8192,
            **_GEMMA),
    _preset("gemma-2-9b", "google/gemma-2-9b",
            D=3584, F=14336, L=42, H=16, G=8, d_h=256, V=256000, max_position=8192,
            post_norms=True, attn_softcap=50.0, final_softcap=30.0, window=4096,
            window_pattern=(True, False), **_GEMMA),
    _preset("gpt2", "openai-community/gpt2",
            D=768, F=3072, L=12, H=12, G=12, d_h=64, V=50257, max_position=1024, tied=True,
            norm="layer", act="gelu_tanh", gated=False, fused_qkv=True, qkv_bias=True,
            o_bias=True, mlp_bias=True, positions="learned"),
    _preset("pythia-160m", "EleutherAI/pythia-160m",
            D=768, F=3072, L=12, H=12, G=12, d_h=64, V=50304, max_position=2048,
            norm="layer", act="gelu", gated=False, fused_qkv=True, qkv_bias=True,
            o_bias=True, mlp_bias=True, rotary_dim=16, parallel_residual=True),
    _preset("qwen3-0.6b", "Qwen/Qwen3-0.6B",  # per-head q/k norms; d_h 128 != D/H = 64
            D=1024, F=3072, L=28, H=16, G=8, d_h=128, V=151936, max_position=40960,
            tied=True, qk_norm=True),
    _preset("qwen3-8b", "Qwen/Qwen3-8B",
            D=4096, F=12288, L=36, H=32, G=8, d_h=128, V=151936, max_position=40960,
            qk_norm=True),
    _preset("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct",
            D=3072, F=8192, L=32, H=32, G=32, d_h=96, V=32064, max_position=4096,
            fused_qkv=True, fused_gate_up=True, window=2047),
)
