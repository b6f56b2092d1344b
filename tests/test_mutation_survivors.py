"""Tests for the mutants of benchmarks/mutation_sweep.py that the suite did not catch: each
asks for the quantity the mutant changes, with the expected value from a released config or
a property computed here, not from the code under test.

- a sharded decode step reads each chip's share of the KV cache (the rows' KV bytes were
  left whole per chip, and only the plan's memory line divided them);
- a kv_write brings both k and v to the cache's partition (no layout on record writes them
  elsewhere, so only a layout built here sees a dropped v);
- a tensor named twice in a remat tuple is kept once;
- ``train``'s nearest batch below is the nearest, its narrower optimizer states are
  offered nearest first, and its fixes search again with the tensors the user keeps.
"""

from __future__ import annotations

import json

import pytest

import symroof as sr
from symroof.conventions import profile, using
from symroof.models.blocks.attention import Attention
from symroof.parallel.partition import array_layout, layer_collectives
from symroof.parallel.sharding import parse_array
from symroof.surfaces.cli_train_fixes import optimizer_widths

# Llama-3.1-70B's released config (config.json): 80 layers, 8 KV heads of head_dim 128
L70, G70, DH70 = 80, 8, 128


@pytest.mark.parametrize("shape, chips", [("2x4", 8), ("4x8", 32)])
def test_a_sharded_decode_reads_each_chips_share_of_the_kv_cache(shape, chips):
    # 64 sequences of 8192 tokens in bf16: K and V of every layer, 2 x 80 x 8 x 128 x 2 B a
    # token; 8 KV heads x 64 sequences spread over 8 or 32 chips, each holds 1/chips of it
    B, S = 64, 8192
    whole = B * S * 2 * L70 * G70 * DH70 * 2
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", shape), batch=B, context=S)
    assert plan.rows["attn/core"].kv_bytes == whole // chips == plan.memory["kv"]


def test_the_kv_write_brings_k_and_v_to_the_caches_partition():
    # k and v leave their projections split over the KV heads on X; the kv_write reads them
    # whole (a replicated cache): two AllGathers over X, one of k and one of v, each of the
    # [B, G d_h] array in bf16
    uses = Attention().uses()
    keys = ("attn/k_proj", "attn/v_proj", "attn/kv_write")
    paths = {p for k in keys for p in (*uses[k].reads, uses[k].writes, uses[k].weight,
                                       uses[k].kv) if p is not None}
    split = {"attn/k": "k[B, G_X]", "attn/v": "v[B, G_X]", "attn/W_k": "W[D, G_X]",
             "attn/W_v": "W[D, G_X]"}
    parts = {p: parse_array(split.get(p, "a[B, D]" if p == "norms/h" else "K[B, G]"))
             for p in paths}
    whole = {("attn/kv_write", "attn/k"): parse_array("k[B, G]"),
             ("attn/kv_write", "attn/v"): parse_array("v[B, G]")}
    layout = array_layout("test", {k: uses[k] for k in keys}, parts, whole)
    mesh = sr.mesh("tpu-v5e", {"X": 4}, custom=True)
    B, G = 16, 8 * 128
    comms = layer_collectives(keys, layout, mesh, {"B": B, "D": 4096, "G": G})
    assert [(count, c.kind, c.V) for count, c in comms.values()] == [
        (2, "all-gather", 2 * B * G)]


def test_a_tensor_named_twice_in_a_remat_tuple_is_kept_once():
    m, mesh = sr.model("llama-3.1-8b"), sr.mesh("tpu-v5e", "4x8")
    twice = sr.train_plan(m, mesh, "fsdp", batch_tokens=32 * 4096, seq=4096,
                          remat=("layer_input", "mlp/up", "layer_input"))
    once = sr.train_plan(m, mesh, "fsdp", batch_tokens=32 * 4096, seq=4096,
                         remat=("layer_input", "mlp/up"))
    assert twice.remat == ("layer_input", "mlp/up")
    assert twice.memory == once.memory
    assert "seq 4096, remat layer_input,mlp/up\n" in str(twice)  # its title names each once


def test_the_nearest_batch_below_that_divides_is_the_nearest(cli):
    # Qwen3-0.6B (28 layers), 39 sequences of 1,000 tokens on a v5e 4x8 under zero1+pp with
    # 8 microbatches: the data split over X (4) and the 8 stages over Y need a multiple of
    # lcm(4 x 8, 1000) = 4,000 tokens (36 or 40 sequences); over Y (8) with 4 stages over X,
    # of lcm(8 x 8, 1000) = 8,000 (32 or 40): the nearest below is 36, not 32
    run = cli(["train", "--model", "qwen3-0.6b", "--batch", "39", "--seq", "1000",
               "--mesh", "tpu-v5e:4x8", "--strategy", "zero1+pp", "--microbatches", "8",
               "--format", "json"])
    assert run.returncode == 0, run.stderr
    (fix,) = json.loads(run.stdout)["excluded"]
    assert fix["fix"] == ("a batch that divides: 36 sequences (--batch 36) or 40 sequences "
                          "(--batch 40)")


def test_narrower_optimizer_states_are_offered_nearest_first():
    # Adam's training state with bf16 weights: 18 bytes a parameter (2 weights + 4 fp32
    # gradients + 4 master + 8 moments), 16 (bf16 gradients), 12 (no master copy) and the
    # book's 10 (no gradients kept): from 18, the narrower ones nearest first
    with using(profile("symroof").replace(optimizer_bytes=18)):
        assert optimizer_widths(sr.model("tiny")) == [16, 12, 10]


def test_trains_fixes_keep_the_kept_tensors_asked_for(cli):
    # Llama-3.1-8B (its config.json: 32 layers, D = 4096, F = 14336; 8.03e9 parameters at
    # 12 B of state), zero3 on a v5e 2x2, 256k tokens keeping layer_input and mlp/up: at
    # least 2^18 x (4096 + 14336) x 2 B x 32 layers = 309 GB of kept activations and 96 GB
    # of state, more than a 4x4's 16 x 16 GB and less than a 4x8's 32 x 16 GB; under
    # remat full (268 GB less) a 4x4 would do, but the fix is asked with the tensors kept
    kept, state = 2**18 * (4096 + 14336) * 2 * 32, 8 * 10**9 * 12
    assert 16 * 16 * 10**9 < kept + state < 32 * 16 * 10**9
    run = cli(["train", "--model", "llama-3.1-8b", "--mesh", "tpu-v5e:2x2", "--tokens", "256k",
               "--remat", "layer_input,mlp/up", "--strategy", "zero3", "--format", "json"])
    assert run.returncode == 0, run.stderr
    (fix,) = json.loads(run.stdout)["excluded"]
    assert fix["fix"] == "fits on a larger slice: --mesh tpu-v5e:4x8"
