"""Names and units as a student reads them: chips and models by their product names, code
names (the conventions' fields, a row key) in words, and a quantity divided by its unit.

The handout (:mod:`symroof.surfaces.handout`) reads them from here; the teacher's edition
prints the keys.

>>> row_words("attn/q_proj"), product_name("tpu-v5e")
('attention: Q projection', 'TPU v5e')
"""

from __future__ import annotations

import re
from typing import Any

import sympy as sp

from ..conventions import LABELS
from ..hardware import CHIPS
from ..models.presets import MODELS

__all__ = ["product_name", "WORDS", "in_words", "PASSES", "BLOCKS", "pass_and_block",
           "ROW_WORDS", "row_words", "per_unit"]


def product_name(name: str) -> str:
    """A chip or model preset's name as people write it: ``tpu-v5e`` is "TPU v5e",
    ``llama-3.1-70b`` "Llama-3.1-70B"; any other name as it is.

    >>> product_name("h100"), product_name("tpu-v5e"), product_name("llama-3.1-70b")
    ('H100', 'TPU v5e', 'Llama-3.1-70B')
    >>> product_name("mixtral-8x7b"), product_name("gpt2"), product_name("the 8B")
    ('Mixtral-8x7B', 'GPT-2', 'the 8B')
    """
    if name in CHIPS and "/" not in name:
        return "TPU " + name[4:] if name.startswith("tpu-") else name.upper()
    if name not in MODELS:
        return name
    if name in _MODEL_NAMES:
        return _MODEL_NAMES[name]
    return name[0].upper() + re.sub(r"(?<=[-x])(a?\d+(?:\.\d+)?[bm])$", lambda m: m[1].upper(),
                                    name[1:])


#: the presets whose names no rule gives
_MODEL_NAMES = {"gpt2": "GPT-2", "deepseek-v3": "DeepSeek-V3", "qwen1.5-moe-a2.7b":
                "Qwen1.5-MoE-A2.7B", "phi-3-mini": "Phi-3-mini", "tiny": "tiny"}
#: code names a handout says in words: the conventions' fields (their labels,
#: :data:`symroof.conventions.LABELS`), the lm_head row, the chip and model presets
WORDS = {**{f: label for f, label in LABELS.items() if "_" in f}, "lm_head": "LM head",
         **{n: product_name(n) for n in (*CHIPS, *MODELS) if product_name(n) != n}}
_NAMES = "|".join(re.escape(w) for w in sorted(WORDS, key=len, reverse=True))
_WORD = re.compile(r"(?<![\w/.-])(?:fields? (?=(?:" + _NAMES + r")\b))?(" + _NAMES
                   + r")(?![\w/-]|\.\w)")


def in_words(text: str) -> str:
    """``text`` with the code names of :data:`WORDS` in words (a field's label stands for
    "field NAME"); LaTeX's escaped ``lm\\_head`` too.

    >>> in_words("one FLOP a multiply-add (field lm_head_flops_per_mac) in the lm_head")
    'one FLOP a multiply-add (LM head FLOPs per multiply-add) in the LM head'
    >>> in_words(r"\\text{FLOPs}_\\text{lm\\_head}")
    '\\\\text{FLOPs}_\\\\text{LM head}'
    >>> in_words("llama-3.1-8b on a tpu-v5e, not llm-viewer/nvidia-h100")
    'Llama-3.1-8B on a TPU v5e, not llm-viewer/nvidia-h100'
    """
    text = _WORD.sub(lambda m: WORDS[m.group(1)], text)
    return re.sub("|".join(re.escape(w.replace("_", r"\_")) for w in WORDS if "_" in w),
                  lambda m: WORDS[m.group().replace(r"\_", "_")], text)


#: a row key's pass, by its first part (``bwd/mlp/down/dx``: backward); a key with none of
#: these (an inference step's ``attn/q_proj``) is a forward row. "kept" rows are the
#: activations a training step keeps for its backward: bytes held, not bytes moved.
PASSES = {"fwd": "forward", "bwd": "backward", "recompute": "recompute",
          "optimizer": "optimizer", "saved": "kept"}
#: a row's block, by the first word of its key past the pass (``attn_norm``, ``attn/av``:
#: attention); a word not listed here is its own block
BLOCKS = {"embed": "embedding", "pos": "embedding", "layer": "attention", "attn": "attention",
          "mlp": "MLP", "moe": "MLP", "final": "head", "lm": "head", "logit": "head",
          "loss": "head", "adam": "Adam"}


def pass_and_block(key: str) -> tuple[str, str]:
    """The pass and the block of a row key (:data:`PASSES`, :data:`BLOCKS`).

    >>> pass_and_block("bwd/mlp/down/dx"), pass_and_block("saved/layer_input")
    (('backward', 'MLP'), ('kept', 'attention'))
    >>> pass_and_block("attn/q_proj"), pass_and_block("optimizer/adam")
    (('forward', 'attention'), ('optimizer', 'Adam'))
    """
    first, _, rest = key.partition("/")
    step, rest = (PASSES[first], rest) if first in PASSES and rest else ("forward", key)
    word = re.split(r"[/_]", rest)[0]
    return step, BLOCKS.get(word, word)


#: the words of a row key's parts (``attn/q_proj``: "attention: Q projection"), the one
#: place a handout reads them from; the teacher's edition prints the keys
ROW_WORDS = {
    "attn": "attention", "mlp": "MLP", "moe": "MoE", "shared": "shared expert",
    "embed": "embedding", "pos_embed": "position embedding", "attn_norm": "attention norm",
    "mlp_norm": "MLP norm", "final_norm": "final norm", "lm_head": "LM head",
    "logit_softcap": "logit soft-cap", "loss": "loss", "adam": "Adam update",
    "q_proj": "Q projection", "k_proj": "K projection", "v_proj": "V projection",
    "qkv_proj": "QKV projection", "o_proj": "output projection", "rope": "RoPE",
    "kv_write": "KV cache write", "scores": "scores $QK^T$", "softmax": "softmax",
    "av": "probabilities times V", "residual": "residual add", "post_norm": "post-norm",
    "q_norm": "Q norm", "k_norm": "K norm",
    "gate": "gate projection", "up": "up projection", "down": "down projection",
    "gate_up": "gate and up projection", "swiglu": "SwiGLU", "geglu": "GeGLU",
    "gelu": "GELU", "router": "router", "route": "dispatch to experts",
    "combine": "combine experts", "q_a_proj": "Q down-projection", "q_a_norm": "Q latent norm",
    "q_b_proj": "Q up-projection", "kv_a_proj": "KV down-projection",
    "kv_a_norm": "KV latent norm", "kv_b_proj": "KV up-projection",
    "q_absorb": "Q absorbed into the latent", "scale": "scaled by its gate",
    "o_absorb": "output absorbed from the latent", "gate_up_sum": "gate and up gradients summed",
    "qkv_sum": "Q, K and V gradients summed", "k_rope_sum": "RoPE key gradients summed",
    "dx_sum": "input gradients summed", "layer_input": "layer input",
    "final_input": "final norm input",
    # a gradient, the last part of a backward row
    "dx": "input gradient", "dw": "weight gradient", "dp": "probabilities' gradient",
    "dv": "V gradient", "dq": "Q gradient", "dk": "K gradient"}


def row_words(key: str) -> str:
    """A row key in words (:data:`ROW_WORDS`): the pass first for a training row, then the
    block, then the op; a name in words already (a table's group) stays as it is.

    >>> row_words("attn/q_proj"), row_words("lm_head"), row_words("attention core")
    ('attention: Q projection', 'LM head', 'attention core')
    >>> row_words("bwd/mlp/down/dw"), row_words("moe/shared/gate")
    ('backward, MLP: down projection, weight gradient', 'MoE shared expert: gate projection')
    """
    parts = key.split("/")
    if len(parts) == 1 and "_" not in key:
        return ROW_WORDS.get(key, key)
    step = PASSES[parts.pop(0)] if len(parts) > 1 and parts[0] in PASSES else ""
    grad = ROW_WORDS[parts.pop()] if len(parts) > 1 and parts[-1] in ("dx", "dw", "dp", "dv",
                                                                     "dq", "dk") else ""
    said = [ROW_WORDS.get(p, p.replace("_", " ")) for p in parts]
    words = (" ".join(said[:-1]) + ": " if len(said) > 1 else "") + said[-1]
    return ", ".join(w for w in (step, words, grad) if w)


#: a left side divided by its unit (``T_\text{AG} / \mu\text{s}``, ``W / (\text{GB/s})``)
_PER = re.compile(r"^(.+?)\s*/\s*(?:(\\mu)\\text\{s\}|\\text\{\(?([\w/]+?)\)?\}|"
                  r"\(\\text\{([\w/]+)\}\))$")
#: the base units a divided left side may name, with SI prefixes (and those without)
_BASES, _WORD_UNITS = ("FLOP/s", "B/s", "s", "B", "Hz"), {"byte": "B", "days": "days",
                                                         "years": "years"}
_SCALE = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
          "m": sp.Rational(1, 10**3), "u": sp.Rational(1, 10**6), "n": sp.Rational(1, 10**9)}


def per_unit(lhs: str) -> tuple[str, str, str, Any] | None:
    r"""A left side divided by a unit, as (the quantity, the unit as written, its base unit,
    the unit in base units), or None: the handout writes ``T_\text{AG} = 23.3\,\mu\mathrm{s}``
    for ``T_\text{AG} / \mu\text{s} = 23.3``.

    >>> per_unit(r"T_\text{AG} / \mu\text{s}"), per_unit(r"W / (\text{GB/s})")
    (('T_\\text{AG}', 'us', 's', 1/1000000), ('W', 'GB/s', 'B/s', 1000000000))
    >>> per_unit(r"P / 10^{9}"), per_unit(r"\text{bytes} / \text{KiB}")
    (None, None)
    """
    m = _PER.match(lhs)
    if m is None:
        return None
    said = "us" if m[2] else m[3] or m[4]
    if said in _WORD_UNITS:
        return m[1], said, _WORD_UNITS[said], 1
    base = next((b for b in _BASES if said.endswith(b) and said[:-len(b)] in _SCALE), None)
    return None if base is None else (m[1], said, base, _SCALE[said[:-len(base)]])
