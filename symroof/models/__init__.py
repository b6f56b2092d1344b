"""Models: the symbolic transformer (Llama, and by its fields MoE, MLA, sliding windows,
GPT-2, GPT-NeoX, Gemma, Phi-3), its presets and Hugging Face config import, and what is
derived from a model (step times, ctx*, per-op roofline tables, training steps and their
memory, the exact checks against the counted NumPy twin).

>>> from symroof.models import model
>>> model("llama-3.1-8b").params
8030261248
"""

from .presets import MODELS, from_hf_config, model
from .spec import MLA, MoE
from .training import train_ops
from .training_memory import REMAT_POLICIES, saved_activations, train_memory
from .transformer import OP_GROUPS, Transformer, group

__all__ = ["Transformer", "MoE", "MLA", "OP_GROUPS", "group", "MODELS", "model",
           "from_hf_config", "train_ops", "train_memory", "saved_activations",
           "REMAT_POLICIES"]
