"""The model as a composition of blocks: the blocks say everything the Transformer's fields
say (a model rebuilt from its blocks is the same model), their operand arrays hold exactly
the parameters the released checkpoints have, and a family is its blocks' switches."""

import dataclasses

import pytest
import sympy as sp
from test_families import RELEASED

import symroof as sr
from symroof.models import MLA, MODELS, MoE, Transformer, from_hf_config
from symroof.models.blocks import KINDS, Attention, Blocks, DenseMLP, Family, Norm
from symroof.models.family_presets import FAMILIES, family_of
from symroof.models.spec import spec_fields
from symroof.numeric import MLASpec, MoESpec

_RELEASE = ("name", "source", "max_position", "notes")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_rebuilt_from_its_blocks_is_the_same_model(name):
    m = MODELS[name]
    rebuilt = Transformer.from_blocks(m.blocks, **{k: getattr(m, k) for k in _RELEASE})
    assert rebuilt == m and Blocks.of(rebuilt) == m.blocks


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_weight_arrays_hold_every_parameter(name):
    """Sum over the declared weight arrays of (product of their sizes) x copies == the
    released count (tests/test_families.py's, each with its source outside symroof; the
    other presets: their parameter count, pinned elsewhere)."""
    b = MODELS[name].blocks
    total = 0
    for path, array in b.arrays().items():
        assert array.kind in KINDS, path
        shape = b.shape(path)
        if array.kind == "weight":
            total += b.repeats(path) * sp.Mul(*shape)
        else:  # an activation or the cache: the step's B, T or S in it
            assert {"B", "T", "S"} & {str(s) for x in shape for s in sp.sympify(x).free_symbols}
    assert total == (RELEASED[name][1] if name in RELEASED else MODELS[name].params)


def test_llama_8b_weights_add_up_to_its_release():
    # Llama-3.1-8B: 8,030,261,248 parameters (safetensors total of meta-llama/Llama-3.1-8B)
    m = sr.model("llama-3.1-8b")
    arrays = m.blocks.arrays()
    assert str(arrays["attn/W_q"]) == "[D, H, d_h] weight"
    assert arrays["attn/K"].dims == ("B", "S", "G", "d_h") and arrays["attn/K"].kind == "kv"
    assert m.params == 8030261248


def test_gqa_mha_mqa_are_one_block():
    """G = H is multi-head attention, G = 1 multi-query: the same block, fewer KV heads."""
    from symroof.symbols import B, H, T

    mha, mqa = Transformer(G=H), Transformer(G=1)
    assert mha.blocks.attention.heads().k_elems == mha.H * mha.d_h
    assert mqa.ops(B, T, 0)["attn/k_proj"].flops == 2 * B * T * mqa.L * mqa.D * mqa.d_h


def test_a_family_is_its_blocks_switches():
    assert family_of("qwen3").fields() == {"qk_norm": True}
    assert FAMILIES["gpt2"].fields()["positions"] == "learned"
    qwen3 = Transformer(**FAMILIES["qwen3"].fields(), D=1024, F=3072, L=28, H=16, G=8,
                        d_h=128, V=151936, tied=True)
    # Qwen/Qwen3-0.6B: 596,049,920 parameters (transformers' sum of p.numel(), the figure
    # tests/test_families.py pins with its source)
    assert qwen3.params == 596_049_920
    assert Family("x", (Attention(), DenseMLP())).fields() == {}


def test_every_preset_belongs_to_a_family_that_makes_it():
    """A preset's switches are its family's: the same model comes back from the family's
    fields and the preset's sizes."""
    for name, family in (("gemma-2-9b", "gemma-2"), ("pythia-160m", "gpt-neox"),
                         ("qwen3-8b", "qwen3"), ("phi-3-mini", "phi-3")):
        m = MODELS[name]
        for field, value in FAMILIES[family].fields().items():
            assert getattr(m, field) == value, (name, field)


def test_moe_and_mla_records_and_the_twin_specs_share_their_fields():
    for record, spec in ((MoE, MoESpec), (MLA, MLASpec)):
        assert [f.name for f in dataclasses.fields(record)] == \
            [f.name for f in dataclasses.fields(spec)]


#: the twin's own fields: the run's numerics, which no count depends on
_RUN = {"rope_theta", "eps", "name"}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_twins_config_is_its_blocks_twin_specs(name):
    """One list of switches: every field of the twin's Config but the run's numerics is a
    block's, under the model's field name with the model's value, and every field of the
    blocks is in it but the byte widths (the Counter's) and the other kind of positions'."""
    m = MODELS[name]
    model = {"moe": None} | m.blocks.fields()  # (no experts block: no moe field)
    cfg = m.blocks.twin(name)
    twin = {f.name for f in dataclasses.fields(cfg)} - _RUN
    other = {"rope": "max_position", "learned": "rotary_dim"}[m.positions]
    assert set(model) - twin == {"w_bytes", "act_bytes", "kv_bytes"}
    assert twin - set(model) == {other} and getattr(cfg, other) is None
    for field in twin - {other, "moe", "mla"}:
        assert getattr(cfg, field) == model[field], field
    for field in ("moe", "mla"):
        record, spec = model[field], getattr(cfg, field)
        assert (record is None) == (spec is None), field
        if record is not None:
            assert {k: _exact(v) for k, v in spec_fields(record).items()} == \
                {k: _exact(v) for k, v in spec_fields(spec).items()}, field


def _exact(value):
    """A field's value to compare: a number as a Rational (the twin's 2.5, the record's 5/2)."""
    return value if value is None or isinstance(value, bool | str) else sp.Rational(str(value))


def test_bad_block_input_names_it():
    b = sr.model("tiny").blocks
    odd = dataclasses.replace(b, attention=_Odd(**{f.name: getattr(b.attention, f.name)
                                                    for f in dataclasses.fields(Attention)}))
    with pytest.raises(ValueError, match="array attn/nope: dimension 'Q' is not one of D, F"):
        odd.shape("attn/nope")
    b = sr.model("gpt2").blocks
    with pytest.raises(ValueError, match="one norm kind for the whole model: the layers' is "
                                         "'layer', the head's 'rms'"):
        dataclasses.replace(b, head=dataclasses.replace(b.head, norm=Norm()))
    with pytest.raises(ValueError, match="act must be one of"):
        DenseMLP(act="relu")
    with pytest.raises(ValueError, match="belongs to no family"):
        family_of("bert")


def test_a_new_family_is_one_family_entry(monkeypatch):
    """A family made of existing blocks is one `Family` in family_presets.FAMILIES: a config
    naming its model type imports with its switches, and the twin checks it exactly."""
    from symroof.models.blocks import Embedding, Residual

    toy = Family("toy", (Attention(qk_norm=True, qkv_bias=True), Residual(parallel=True),
                         Embedding(scale=True), DenseMLP(act="gelu_tanh")),
                 model_types=("toy_lm",))
    config = {"model_type": "toy_lm", "hidden_size": 64, "intermediate_size": 172,
              "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
              "head_dim": 16, "vocab_size": 256}
    with pytest.raises(ValueError, match="model_type 'toy_lm' is not supported"):
        from_hf_config(config)
    monkeypatch.setitem(FAMILIES, "toy", toy)
    m = from_hf_config(config)
    assert (m.qk_norm, m.qkv_bias, m.parallel_residual, m.embed_scale, m.act) == \
        (True, True, True, True, "gelu_tanh")
    assert sr.check(m, batch=2, new_tokens=3, cached=4).ok


class _Odd(Attention):
    """An attention block that declares an array over an unknown dimension."""

    def arrays(self):
        return super().arrays() | {"nope": super().arrays()["W_q"]._replace(dims=("Q",))}
