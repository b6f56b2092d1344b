"""Models: the symbolic transformer, its presets and Hugging Face config import, and what is
derived from a model (step times, ctx*, per-op roofline tables, the exact check against the
counted NumPy twin).

>>> from symroof.models import model
>>> model("llama-3.1-8b").params
8030261248
"""

from .presets import MODELS, from_hf_config, model
from .transformer import OP_GROUPS, Transformer, group

__all__ = ["Transformer", "OP_GROUPS", "group", "MODELS", "model", "from_hf_config"]
