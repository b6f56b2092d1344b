"""symroof.numeric: a counted NumPy transformer (depends on NumPy only): Llama by default,
and the GPT-2, GPT-NeoX, Gemma, Phi-3, mixture-of-experts and latent-attention blocks.

It runs a real forward pass (and a training step: loss, hand-written backward, remat,
Adam) and records, per op, exact integer FLOPs (executed and useful)
and bytes by kind, from the arrays each op touches at run time. The conventions are those of
docs/accounting.md; ``symroof.check`` compares the counts with the symbolic formulas.

>>> import numpy as np
>>> from symroof.numeric import TINY, Counter, forward, init_params
>>> counter = Counter(w_bytes=2, act_bytes=2, kv_bytes=2)
>>> logits = forward(init_params(TINY), TINY, np.array([[1, 2, 3]]), counter=counter)
>>> list(counter.rows)[:4]
['embed', 'attn_norm', 'attn/q_proj', 'attn/k_proj']
"""

from .config import TINY, Config, MLASpec, MoESpec
from .counter import QUANTITIES, Counter
from .model import OP_GROUPS, OP_KEYS, KVCache, forward
from .optimizer import Adam, train_step
from .params import count_params, init_params
from .train import BACKWARD_READS, REMAT, loss_and_grads

__all__ = [
    "Config",
    "MoESpec",
    "MLASpec",
    "TINY",
    "init_params",
    "count_params",
    "KVCache",
    "forward",
    "Counter",
    "QUANTITIES",
    "OP_KEYS",
    "OP_GROUPS",
    "loss_and_grads",
    "train_step",
    "Adam",
    "REMAT",
    "BACKWARD_READS",
]
