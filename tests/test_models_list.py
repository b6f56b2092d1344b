"""``symroof models``: family, attention, MLP structure, total and active parameters of each
record, against the numbers the releases publish."""

from __future__ import annotations

import json

import pytest

# (total, active) parameters as each release states them, in billions, rounded as stated:
RELEASED = {
    # Mistral AI, "Mixtral of experts" (Dec 2023): "46.7B total parameters but only uses
    # 12.9B parameters per token"
    "mixtral-8x7b": (46.7, 12.9),
    # DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv 2412.19437), abstract: "671B total
    # parameters with 37B activated for each token" (the main model, without the MTP module)
    "deepseek-v3": (671, 37),
    # Qwen team, "Qwen1.5-MoE: Matching 7B Model Performance with 1/3 Activated Parameters"
    # (Mar 2024): "14.3B parameters in total and 2.7B activated parameters during runtime"
    "qwen1.5-moe-a2.7b": (14.3, 2.7),
}


@pytest.fixture(scope="module")
def listed(cli):
    out = cli(["models", *RELEASED, "llama-3.1-8b", "gemma-2-9b", "--format", "json"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_total_and_active_parameters_are_the_released_ones(listed, name):
    total, active = RELEASED[name]
    # within one unit of the last digit stated (a release rounds, or truncates: DeepSeek's
    # "37B" is 37.55e9 here, its embedding and lm_head included)
    unit = 10 ** -len(str(total).partition(".")[2])
    assert abs(listed[name]["params"] / 1e9 - total) < unit
    assert abs(listed[name]["active_params"] / 1e9 - active) < unit


def test_dense_models_use_every_parameter(listed):
    # Llama-3.1-8B's safetensors index: 8,030,261,248 parameters, every one used per token
    assert listed["llama-3.1-8b"]["params"] == listed["llama-3.1-8b"]["active_params"] \
        == 8030261248


def test_structure_is_read_from_the_record(listed):
    # the released configs: Mixtral 8 experts, 2 per token, 32 query heads on 8 KV heads;
    # DeepSeek-V3 256 routed experts, 8 per token, one shared, first 3 layers dense, MLA with
    # kv_lora_rank 512; Gemma-2-9B 16 query heads on 8 KV heads, a 4096-token window on
    # every other layer
    assert (listed["mixtral-8x7b"]["mlp"], listed["mixtral-8x7b"]["attention"]) == \
        ("MoE 8 experts, top-2", "GQA 4:1")
    assert (listed["deepseek-v3"]["mlp"], listed["deepseek-v3"]["attention"]) == \
        ("MoE 256 experts, top-8 + shared, first 3 dense", "MLA (latent 512)")
    assert listed["deepseek-v3"]["family"] == "llama + MoE, MLA"
    assert listed["gemma-2-9b"]["attention"] == "GQA 2:1, window 4,096 on 1 of 2 layers"
    assert listed["llama-3.1-8b"]["family"] == "llama"


def test_text_table_has_the_columns(cli):
    text = cli(["models", "mixtral-8x7b"]).stdout
    head, row = text.splitlines()[:2]
    for column in ("params", "active", "attention", "MLP", "family"):
        assert column in head
    assert "12.9 G" in row and "MoE 8 experts, top-2" in row
