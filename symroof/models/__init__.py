"""Models: the symbolic transformer (Llama, and by its fields MoE, MLA, sliding windows,
GPT-2, GPT-NeoX, Gemma, Phi-3), its presets and Hugging Face config import, and what is
derived from a model (step times, ctx*, per-op roofline tables, training steps and their
memory, the exact checks against the counted NumPy twin).

>>> from symroof.models import model
>>> model("llama-3.1-8b").params
8030261248
"""

from ..lazy import attach

#: public name -> its module, imported when the name is first read (see symroof.lazy)
_NAMES = {
    **dict.fromkeys(("MODELS", "model", "from_hf_config"), ".presets"),
    **dict.fromkeys(("MLA", "MoE"), ".spec"), "train_ops": ".training",
    **dict.fromkeys(("REMAT_POLICIES", "saved_activations", "train_memory"),
                    ".training_memory"),
    **dict.fromkeys(("OP_GROUPS", "Transformer", "group"), ".transformer"),
}
__getattr__, __dir__ = attach(__name__, _NAMES)
__all__ = list(_NAMES)
