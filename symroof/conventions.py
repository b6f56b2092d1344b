"""Conventions as data: every accounting choice a cost makes, as one frozen record.

Calculators disagree on the same step because they count differently: FLOPs per
multiply-add, causal or all attention pairs, the lm_head on one position or all, softmax
and norm FLOPs per element, which bytes move. :class:`Conventions` names each choice as a
field; a named profile (:data:`PROFILES`) is a set of fields, and one field is overridden
on its own with :meth:`Conventions.replace` (matplotlib's style sheets are the model).
"symroof" is the default and gives every number symroof gives without it.

The row builders read the record in force (:func:`current`; ``Transformer.ops(...,
conventions=...)`` and the report set it with :func:`using`), and each field is read in
exactly one place in the code, named in its entry of :data:`FIELDS`.

>>> c = profile("llm-viewer")
>>> c.softmax_flops, c.lm_head_flops_per_mac
(5, 1)
>>> print(c.replace(softmax_flops="exact"))
conventions: llm-viewer, softmax_flops=exact
>>> profile("symroof").replace(ring_factor="bok")
Traceback (most recent call last):
...
ValueError: convention ring_factor must be one of 'exact', 'book'; got 'bok'
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Conventions", "PROFILES", "FIELDS", "LABELS", "profile", "current", "using",
           "as_conventions", "parse_assignment"]

#: field -> (allowed values, what it decides, where it is read); "int" allows an integer
#: count >= 0 (llm-analysis counts 0 softmax FLOPs), "rows" a tuple of row keys.
FIELDS: dict[str, tuple[tuple[Any, ...], str, str]] = {
    "flops_per_mac": ((2, 1), "FLOPs per multiply-add of a contraction (linear layers, "
                      "attention matmuls, and their gradient matmuls in training): 2, or 1 "
                      "as MAC counters write it",
                      "models.rows.mac_flops"),
    "attention_pairs": (("causal", "all", "new"), "useful FLOPs of the attention core over "
                        "the causal (query, key) pairs, over all T x S of them, or over the "
                        "T x T pairs of the new tokens only (the cached context unattended: "
                        "a naive core executes those T x T alone)",
                        "models.attention_rows.counted_pairs"),
    "time_flops": (("useful", "executed"), "which FLOPs a time reads: useful (masked work "
              "left out) or executed", "Conventions.counted"),
    "lm_head_positions": (("last", "all"), "positions a prefill report's lm_head runs on: "
                          "the last of each sequence, or every one",
                          "Conventions.last_only"),
    "lm_head_flops_per_mac": (("same", 2, 1), "FLOPs per multiply-add of the lm_head "
                              "(its row, its gradients in training, the whole-model cost): "
                              "'same' as flops_per_mac, or its own",
                              "models.rows.lm_head_flops"),
    "lm_head_act": (("positions", "one-row"), "activation bytes of the lm_head: its rows "
                    "in and logits out, or one row of D in and one of V out whatever the "
                    "batch", "models.rows.lm_head"),
    "activation_traffic": (("counted", "none"), "activation bytes counted, or only weights "
                           "and KV cache", "models.transformer.Transformer.ops"),
    "kv_traffic": (("read", "read+write"), "KV cache bytes of the attention core (its rows "
                   "and the whole-model cost): read once, or the whole cache read and "
                   "written back",
                   "models.attention_rows.kv_passes"),
    "softmax_flops": (("exact", "int"), "softmax FLOPs: 'exact' (scale, max, subtract, "
                      "exp, sum, divide: 6n - 2 a row) or a count per element",
                      "models.attention_rows.softmax_flops"),
    "norm_flops": (("exact", "int"), "norm FLOPs: 'exact' (RMSNorm 4d + 2 a row, LayerNorm "
                   "7d + 2) or a count per element", "models.rows.norm"),
    "act_flops": (("exact", "int"), "MLP activation FLOPs: 'exact' (as the NumPy twin "
                  "executes them: SiLU 4, GELU-tanh 9, GELU 5, + 1 for the gate) or a count "
                  "per element", "models.rows.activation"),
    "transcendentals": (("flops", "apart"), "exp, tanh, erf and sqrt in the exact counts: "
                        "FLOPs, or apart (left out of FLOPs, as XLA's cost analysis keeps "
                        "them in 'transcendentals')", "models.rows.transcendental"),
    "mlp_act_width": (("F", "D"), "elements of the MLP activation per token: F, or D",
                      "models.rows.mlp_rows"),
    "norm_weights": (("read", "not-read"), "a norm reads its weight vector, or not",
                     "models.rows.norm"),
    "residual_reads": ((2, 1), "operands a residual add reads (it writes one)",
                       "models.rows.residual"),
    "kv_written_by": (("row", "projection"), "the KV write is its own row (reads k and v, "
                 "writes them into the cache), or the k and v projections write their "
                 "outputs straight into the cache", "models.attention_rows.standard"),
    "prefill_q_heads": (("H", "G"), "heads of Q the scores row reads when nothing is "
                        "cached: H query heads, or G", "models.attention_rows.core"),
    "fused_core": (("once", "per-query-block"), "bytes of the fused attention core: Q "
                   "read, O written, K and V read once; or K and V of all H heads re-read "
                   "for each block of d_h query rows and O written twice at T x S",
                   "models.attention_rows.fused_bytes"),
    "head_dim": (("config", "D/H"), "the head width: the config's d_h, or D/H",
                 "models.transformer.Transformer._counted"),
    "omit": (("rows",), "row keys a step leaves out (e.g. embed, attn/rope, final_norm)",
             "models.transformer.Transformer.ops"),
    "ring_factor": (("exact", "book"), "the time of a ring collective (AllGather, "
                    "ReduceScatter, AllReduce over a line, a DCN ring or a GPU switch level): "
                    "with the (N - 1)/N share each member passes on, or the book's V / W "
                    "without it (bytes sent per chip stay exact)",
                    "hardware.mesh.ring_fraction"),
    "gpu_level": (("all", "one"), "the switch levels of a GPU system a collective's time "
                  "(so a GPU condition) reads: every level the group spans, the slowest "
                  "binding, or the book's one: the NVLink level inside a node, the node's "
                  "egress (W_node) beyond it", "hardware.collectives.switch_terms"),
    "allreduce_latency": (("nccl", "ring"), "the latency floor of a GPU AllReduce across "
                          "nodes: NCCL's, the lower of its ring's and its tree's (2 ((n/M - 1) "
                          "T_hop + log2 M T_tree) over M nodes, NCCL's tuner picking the faster "
                          "algorithm), or a flat ring's 2 (n - 1) steps; the bandwidth term "
                          "is the book's either way", "hardware.collectives._allreduce_latency"),
    "base_latency": (("none", "nccl"), "the constant per call of a GPU AllGather, "
                     "ReduceScatter or AllReduce: none (its latency floor is its steps', as "
                     "the book's latency-bound rings), or NCCL's (tuning.cc baseLatencies: "
                     "6.6 us a ring, 6.8 us a tree) added to it",
                     "hardware.collectives._base"),
    "optimizer_bytes": ((12, 10, 16, 18), "bytes per parameter of the training state with "
                        "bf16 weights and fp32 Adam moments: 12 (bf16 gradients), 10 (the "
                        "book's: no gradients kept), 16 (+ an fp32 master copy), 18 (fp32 "
                        "master and fp32 gradients)", "models.training_memory.state_widths"),
    "condition_layer": (("model", "mlp_block"), "the layer a training plan's parallelism "
                        "conditions are solved from: one whole layer of the model's training "
                        "rows (attention and MLP), or the book's one MLP block (ch. 5)",
                        "parallel.rows.condition_rows"),
}

#: field -> its name in plain words, for a reader who does not read code (the students'
#: notes print these; the code name stays in the teacher's edition and the CLI)
LABELS: dict[str, str] = {
    "flops_per_mac": "FLOPs per multiply-add", "attention_pairs": "attention pairs counted",
    "time_flops": "FLOPs a time counts", "lm_head_positions": "LM head positions",
    "lm_head_flops_per_mac": "LM head FLOPs per multiply-add",
    "lm_head_act": "LM head activation bytes", "activation_traffic": "activation traffic",
    "kv_traffic": "KV cache traffic", "softmax_flops": "softmax FLOPs",
    "norm_flops": "norm FLOPs", "act_flops": "activation-function FLOPs",
    "transcendentals": "transcendentals", "mlp_act_width": "MLP activation width",
    "norm_weights": "norm weight reads", "residual_reads": "residual-add reads",
    "kv_written_by": "KV cache writer", "prefill_q_heads": "query heads read in prefill",
    "fused_core": "fused attention bytes", "head_dim": "head width", "omit": "rows left out",
    "ring_factor": "ring factor", "gpu_level": "GPU switch levels",
    "allreduce_latency": "AllReduce latency", "base_latency": "collective call overhead",
    "optimizer_bytes": "optimizer bytes per parameter",
    "condition_layer": "layer the conditions are solved from",
}


def _check(name: str, value: Any) -> Any:
    allowed, _, _ = FIELDS[name]
    if allowed == ("rows",):
        if isinstance(value, str):
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(value, (list, tuple, frozenset, set)) and all(
                isinstance(v, str) and v for v in value):
            return tuple(value)
        raise ValueError(f"convention {name} must be row keys (e.g. embed,attn/rope), got "
                         f"{value!r}")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if any(type(value) is type(a) and value == a for a in allowed):  # 2.0 is no count
        return value
    if "int" in allowed and type(value) is int and value >= 0:
        return value
    shown = ", ".join(repr(v) if v != "int" else "a count per element" for v in allowed)
    raise ValueError(f"convention {name} must be one of {shown}; got {value!r}")


@dataclass(frozen=True)
class Conventions:
    """Every accounting choice of a cost, one field each (allowed values in :data:`FIELDS`,
    the default is symroof's own choice). ``name`` is the profile the record starts from;
    fields that differ from it are named wherever the record is printed.

    >>> Conventions().flops_per_mac, Conventions().attention_pairs
    (2, 'causal')
    >>> Conventions(norm_flops=-1)
    Traceback (most recent call last):
    ...
    ValueError: convention norm_flops must be one of 'exact', a count per element; got -1
    """

    name: str = "symroof"
    flops_per_mac: int = 2
    attention_pairs: str = "causal"
    time_flops: str = "useful"
    lm_head_positions: str = "last"
    lm_head_flops_per_mac: Any = "same"
    lm_head_act: str = "positions"
    activation_traffic: str = "counted"
    kv_traffic: str = "read"
    softmax_flops: Any = "exact"
    norm_flops: Any = "exact"
    act_flops: Any = "exact"
    transcendentals: str = "flops"
    mlp_act_width: str = "F"
    norm_weights: str = "read"
    residual_reads: int = 2
    kv_written_by: str = "row"
    prefill_q_heads: str = "H"
    fused_core: str = "once"
    head_dim: str = "config"
    omit: tuple[str, ...] = ()
    ring_factor: str = "exact"
    gpu_level: str = "all"
    allreduce_latency: str = "nccl"
    base_latency: str = "none"
    optimizer_bytes: int = 12
    condition_layer: str = "model"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"conventions need a name, got {self.name!r}")
        for name in FIELDS:
            object.__setattr__(self, name, _check(name, getattr(self, name)))

    def replace(self, **fields: Any) -> Conventions:
        """A copy with ``fields`` changed; unknown fields fail naming the known ones.

        >>> print(profile("book").replace(flops_per_mac=1))
        conventions: book, flops_per_mac=1
        """
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown convention field(s) {', '.join(unknown)}; fields are "
                             f"{', '.join(FIELDS)}")
        return dataclasses.replace(self, **fields)

    def changed(self) -> dict[str, Any]:
        """Fields that differ from the profile this record is named for.

        >>> profile("llm-viewer").replace(norm_flops=4).changed()
        {'norm_flops': 4}
        """
        base = PROFILES.get(self.name, Conventions())
        return {f: getattr(self, f) for f in FIELDS if getattr(self, f) != getattr(base, f)}

    def differences(self, other: Conventions) -> dict[str, tuple[Any, Any]]:
        """field -> (this value, the other's), for every field where the two differ.

        >>> profile("symroof").differences(profile("book"))["ring_factor"]
        ('exact', 'book')
        """
        return {f: (getattr(self, f), getattr(other, f)) for f in FIELDS
                if getattr(self, f) != getattr(other, f)}

    @property
    def label(self) -> str:
        """The profile's name and any field changed from it.

        >>> profile("llm-viewer").replace(norm_flops=5).label
        'llm-viewer, norm_flops=5'
        """
        extra = "".join(f", {f}={_show(v)}" for f, v in self.changed().items())
        return self.name + extra

    @property
    def title_part(self) -> str:
        """``", conventions: LABEL"`` for a title line; empty for symroof's own record.

        >>> profile("book").title_part, profile("symroof").title_part
        (', conventions: book', '')
        """
        return "" if self == SYMROOF else f", {self}"

    @property
    def last_only(self) -> bool:
        """Whether a step's lm_head runs on the last position only (``lm_head_positions``).

        >>> profile("symroof").last_only, profile("llm-analysis").last_only
        (True, False)
        """
        return self.lm_head_positions == "last"

    @property
    def counted(self) -> str:
        """The Cost field a time reads: ``useful_flops`` or ``flops`` (``time_flops``).

        >>> profile("symroof").counted, profile("llm-viewer").counted
        ('useful_flops', 'flops')
        """
        return "useful_flops" if self.time_flops == "useful" else "flops"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the name, every field, and the changed ones.

        >>> d = profile("book").as_dict()
        >>> d["name"], d["changed"], d["ring_factor"]
        ('book', [], 'book')
        """
        values = {f: list(v) if isinstance(v, tuple) else v
                  for f in FIELDS for v in [getattr(self, f)]}
        return {"name": self.name, "changed": sorted(self.changed()), **values}

    def __str__(self) -> str:
        return f"conventions: {self.label}"


def _show(value: Any) -> str:
    return ",".join(value) if isinstance(value, tuple) else str(value)


SYMROOF = Conventions()

LLM_VIEWER = Conventions(
    name="llm-viewer", attention_pairs="all", time_flops="executed", lm_head_flops_per_mac=1,
    lm_head_act="one-row", softmax_flops=5, norm_flops=7, act_flops=2, mlp_act_width="D",
    norm_weights="not-read", residual_reads=1, kv_written_by="projection", prefill_q_heads="G",
    fused_core="per-query-block", head_dim="D/H", omit=("embed", "attn/rope", "final_norm"))
LLM_VIEWER_DOC = """LLM-Viewer (hahnyuan/LLM-Viewer, model_analyzer.py at 472f71f; Llama
layers from configs/Llama.py), field by field:

- attention_pairs=all, time_flops=executed: qk_matmul and sv_matmul count seqlen x seqlen pairs
  in prefill (lines 328-329), no causal mask, and a time divides those OPs (line 71);
- lm_head_flops_per_mac=1, lm_head_act=one-row: configs/Llama.py post_process gives the
  lm_head batchsize x D x V OPs (one per MAC), load_act D and store_act V bytes, in prefill
  and in decode alike (lm_head_positions stays 'last': one token a sequence);
- softmax_flops=5 (lines 228-234, 330), norm_flops=7 (lines 292-296, 387), act_flops=2 and
  mlp_act_width=D (mlp_act: 2 OPs on batchsize x hidden_size elements, lines 315-325,
  405-415), norm_weights=not-read (the norms load no weight, lines 297, 389);
- residual_reads=1: attn_add and mlp_add load one operand (lines 304-314, 394-404);
- kv_written_by=projection: k_proj and v_proj store their outputs as KV cache, no activation
  (lines 199-221);
- prefill_q_heads=G: the prefill qk_matmul loads Q with num_key_value_heads (line 356);
- fused_core=per-query-block: fused_attention loads K and V of num_attention_heads once per
  block of block_size_r query rows and stores O twice at seqlen x seqlen (lines 236-252,
  332-348); block_size_r = min(ceil(onchip_buffer / (kv_byte d_h)), d_h) is d_h on any
  chip with d_h^2 kv_byte bytes of buffer (every preset it ships);
- head_dim=D/H: head_size = hidden_size // num_attention_heads (line 224);
- omit=embed,attn/rope,final_norm: no embedding, RoPE or final norm row (lines 197-415).
Its time of a row is OPs / min(peak, intensity x bandwidth) (roofline_model.py), the
per-op lower bound symroof's table gives."""

LLM_ANALYSIS = Conventions(
    name="llm-analysis", attention_pairs="new", time_flops="executed", lm_head_positions="all",
    kv_traffic="read+write", softmax_flops=0, norm_flops=0,
    act_flops=0, head_dim="D/H", optimizer_bytes=18,
    omit=("attn/rope", "attn/kv_write", "attn/residual", "mlp/residual"))
LLM_ANALYSIS_DOC = """llm-analysis (cli99/llm-analysis, llm_analysis/analysis.py at d841e40),
field by field:

- attention_pairs=new, time_flops=executed: attention FLOPs 4 b s^2 h a layer (line 938),
  all s x s pairs, and a decode step evaluates it at seq_len = 1 (lines 1758-1761): the
  cached context adds no FLOPs, executed or useful, whatever form the core takes (so a naive
  core's executed scores are the T x T new pairs too; PyPI's 0.2.2 has the same rule,
  analysis.py lines 894-898 and 1632-1635);
- lm_head_positions=all: the logits of every token, 2 b s h V (lines 994-995);
- softmax_flops=0, norm_flops=0, act_flops=0: only the matmuls are counted (lines 921-956);
- omit=attn/rope,attn/kv_write,attn/residual,mlp/residual: no RoPE, KV-write or residual
  work; a layer is attention, MLP and two layernorms (line 1324);
- kv_traffic=read+write: decode loads and stores the KV cache at its final length, seq_len
  + num_tokens_to_generate (kv_cache_latency = 2 x memory_kv_cache, lines 1691-1699);
- head_dim=D/H: head_dim = hidden_dim / n_head (line 907);
- optimizer_bytes=18: Adam's fp32 master copy and two moments, 12 bytes a parameter (line
  469), fp32 gradients (master_weights_dtype_bytes, lines 491-492), beside 2-byte weights.
Not modelled here: its MoE MLP FLOPs without top_k (line 955); its activation bytes, a
footprint (get_activation_memory_per_layer_attn / _mlp, lines 618-620 and 695-699), not
per-op traffic; one V x D table in every model's weights (get_num_params_embedding's
shared_embedding=True, line 249, even for untied ones); the input embedding read whole
(line 1367); layernorm time at 5 FLOPs an element over fp32 bytes (lines 1187-1191) although
its FLOP count leaves norms out; no KV traffic in prefill; its time rule (max of compute and
weight + activation memory per attention and per MLP block, lines 1082-1093, 1147-1166).
tests/data/llm_analysis_d841e40.json.gz holds its numbers on a grid of Llama-2 steps."""

BOOK = Conventions(name="book", attention_pairs="all", ring_factor="book", gpu_level="one",
                   optimizer_bytes=10, condition_layer="mlp_block")
BOOK_DOC = """How to Scale Your Model (the book), field by field:

- attention_pairs=all: training attention FLOPs over all seq^2 pairs (chapter 4's
  4 B T^2 N H a layer forward, no causal halving);
- ring_factor=book: a bidirectional ring's AllGather / ReduceScatter time V / W_ici
  without the (N - 1)/N factor (chapter 3), the form the book's printed conditions use;
  on GPUs its C / W_GPU in a node and C / W_node beyond (chapter 12);
- gpu_level=one: a GPU condition reads one switch level, W_coll = W_GPU inside the NVLink
  domain and W_node (the node's egress, the first level above it) beyond it (chapter 12,
  "Rooflines for LLM Scaling on GPUs"), not the slowest of every level the group spans;
- optimizer_bytes=10: bf16 parameters and fp32 Adam moments, 10 bytes a parameter
  (chapter 4; no gradient buffer);
- condition_layer=mlp_block: a training plan's parallelism conditions solved from one MLP
  block In[B, D] W_in[D, F] W_out[F, D] (chapter 5; chapter 12's MoE MLP), not a whole
  layer with attention."""

#: name -> profile; each profile's fields and their sources are in ``DOCS``.
PROFILES: dict[str, Conventions] = {c.name: c for c in (SYMROOF, BOOK, LLM_VIEWER, LLM_ANALYSIS)}
#: name -> the fields each profile changes and the lines of its source they come from
DOCS: dict[str, str] = {"symroof": "symroof's own choices (docs/accounting.md): every field "
                        "at its default.", "book": BOOK_DOC, "llm-viewer": LLM_VIEWER_DOC,
                        "llm-analysis": LLM_ANALYSIS_DOC}


def profile(name: str | Conventions) -> Conventions:
    """A named profile ("symroof", "book", "llm-viewer", "llm-analysis"), or the record given.

    >>> profile("llm-analysis").kv_traffic
    'read+write'
    >>> profile("xla")
    Traceback (most recent call last):
    ...
    ValueError: unknown conventions 'xla'; profiles are symroof, book, llm-viewer, llm-analysis
    """
    if isinstance(name, Conventions):
        return name
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in PROFILES:
        raise ValueError(f"unknown conventions {name!r}; profiles are {', '.join(PROFILES)}")
    return PROFILES[key]


def as_conventions(value: Any = None) -> Conventions:
    """``None`` (the record in force), a profile name, or a record.

    >>> as_conventions().name, as_conventions("book").name
    ('symroof', 'book')
    """
    if value is None:
        return current()
    if isinstance(value, (str, Conventions)):
        return profile(value)
    raise TypeError(f"conventions must be a profile name or a Conventions record, got "
                    f"{value!r}")


def parse_assignment(text: str) -> tuple[str, Any]:
    """``field=value`` as given on a command line, checked.

    >>> parse_assignment("softmax_flops=5")
    ('softmax_flops', 5)
    """
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name:
        raise ValueError(f"--convention wants FIELD=VALUE, got {text!r}; fields are "
                         f"{', '.join(FIELDS)}")
    if name not in FIELDS:
        raise ValueError(f"unknown convention field {name!r}; fields are {', '.join(FIELDS)}")
    return name, _check(name, value.strip())


_CURRENT: contextvars.ContextVar[Conventions] = contextvars.ContextVar(
    "symroof_conventions", default=SYMROOF)


def current() -> Conventions:
    """The record in force (``symroof`` unless :func:`using` set another).

    >>> current().name
    'symroof'
    """
    return _CURRENT.get()


@contextlib.contextmanager
def using(conventions: Any = None) -> Iterator[Conventions]:
    """Put ``conventions`` (a name or record; None: keep the one in force) in force inside
    the block, as ``decimal.localcontext`` does for a precision.

    >>> with using("llm-viewer") as c:
    ...     current() is c
    True
    """
    record = as_conventions(conventions)
    token = _CURRENT.set(record)
    try:
        yield record
    finally:
        _CURRENT.reset(token)
