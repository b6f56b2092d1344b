"""symroof.numeric: a counted NumPy transformer (depends on NumPy only): Llama by default,
and the GPT-2, GPT-NeoX, Gemma, Phi-3, mixture-of-experts and latent-attention blocks.

It runs a real forward pass (and a training step: loss, hand-written backward, remat,
Adam) and records, per op, exact integer FLOPs (executed and useful)
and bytes by kind, from the arrays each op touches at run time. The conventions are those of
docs/accounting.md; ``symroof.check`` compares the counts with the symbolic formulas. Its
:class:`Config` is the blocks' twin specs side by side (:mod:`symroof.numeric.spec`: one
record per block, each with its switches), so the twin lists no switch of its own.

>>> import numpy as np
>>> from symroof.numeric import TINY, Counter, forward, init_params
>>> counter = Counter(w_bytes=2, act_bytes=2, kv_bytes=2)
>>> logits = forward(init_params(TINY), TINY, np.array([[1, 2, 3]]), counter=counter)
>>> list(counter.rows)[:4]
['embed', 'attn_norm', 'attn/q_proj', 'attn/k_proj']
"""

import importlib
from typing import Any

#: public name -> its module, imported when the name is first read (PEP 562), so that reading
#: the tiny config does not load NumPy (the rest of symroof has symroof.lazy for this; the twin
#: imports nothing of symroof's, so it keeps its own four lines)
_NAMES = {
    **dict.fromkeys(("TINY", "Config"), ".config"),
    **dict.fromkeys(("EmbeddingSpec", "PositionsSpec", "ResidualSpec", "NormSpec",
                     "AttentionSpec", "MLASpec", "MLPSpec", "MoESpec", "HeadSpec"), ".spec"),
    **dict.fromkeys(("QUANTITIES", "Counter"), ".counter"),
    **dict.fromkeys(("OP_GROUPS", "OP_KEYS", "KVCache", "forward"), ".model"),
    **dict.fromkeys(("Adam", "train_step"), ".optimizer"),
    **dict.fromkeys(("count_params", "init_params"), ".params"),
    **dict.fromkeys(("backward_reads", "REMAT", "loss_and_grads"), ".train"),
}
__all__ = list(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_NAMES[name], __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(_NAMES) | set(globals()))
