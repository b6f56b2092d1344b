"""symroof.surfaces.measure_jax at the tiny size on the CPU: the JAX kernels compute what the
NumPy twin's ops compute on the same operands, every op carries the NumPy counter's FLOPs and
bytes, the result and its table, the ``--backend jax`` option; no timings are asserted (the
device's speed is what it measures).

Without JAX these tests skip with that reason; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os

import numpy as np
import pytest

import symroof as sr
from symroof.numeric import TINY, Counter, forward, init_params, layers
from symroof.numeric.primitives import PLAIN
from symroof.surfaces import measure as measure_module
from symroof.surfaces import measure_jax as mj


def need_jax() -> None:
    if importlib.util.find_spec("jax") is None:
        if os.environ.get("CI") == "true":
            pytest.fail('CI=true but jax is not installed: pip install -e ".[jax]"')
        pytest.skip('jax is not installed: pip install -e ".[jax]"')


@pytest.fixture(scope="module")
def tiny():
    """One tiny measurement on the CPU, with the CPU taken for an H100 so that the columns
    against a chip record are filled too."""
    need_jax()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mj, "known_chip", lambda kind: "h100")
        return mj.measure_jax("tiny", repeats=1, platform="cpu")


#: kernel name -> the NumPy twin's op on the same operands (uncounted primitives)
NUMPY = {
    "embed": lambda E, tokens: E[tokens],
    "norm": lambda x, w, eps: layers.rmsnorm(PLAIN, x, w, eps),
    "linear": lambda x, W: layers.linear(PLAIN, x, W),
    "rope": lambda q, k, cos, sin: layers.rope(PLAIN, q, k, cos, sin),
    "kv_write": lambda ck, cv, k, v: _kv_write(ck, cv, k, v),
    "scores": lambda q, K: _core(q, K)[0],
    "softmax": lambda s, scale: layers.softmax(PLAIN, s, np.tril(np.ones(s.shape[-2:], bool)),
                                               d_h=1, scale=scale),
    "av": lambda p, V: _core(None, V, p)[1],
    "swiglu": lambda g, u: layers.swiglu(PLAIN, g, u),
    "residual": lambda x, y: layers.residual(PLAIN, x, y),
}


def _kv_write(ck, cv, k, v):
    ck, cv = ck.copy(), cv.copy()
    layers.kv_write(PLAIN, ck, cv, 0, k, v)
    return ck, cv


def _core(q, K, probs=None):
    """The twin's scores (B, G, H/G, T, S) and probs @ V (B, T, H d_h), by its own einsums."""
    if probs is None:
        B, T, H, d = q.shape
        q = q.reshape(B, T, K.shape[2], H // K.shape[2], d)  # (B, T, G, H/G, d_h)
        return PLAIN.einsum("btgrd,bsgd->bgrts", q, K), None
    o = PLAIN.einsum("bgrts,bsgd->btgrd", probs, K)  # (B, T, G, H/G, d_h)
    return None, o.reshape(*o.shape[:2], -1)


def test_jax_kernels_compute_the_twins_ops():
    need_jax()
    import jax
    from jax import lax

    kernels = mj.ops.kernels(lax.Precision.HIGHEST)
    program = mj.ops.program(TINY, 2, 16)
    assert set(NUMPY) == set(kernels) == {name for name, *_ in program.values()}
    first = {name: key for key, (name, *_) in reversed(program.items())}  # one op per kernel
    with jax.default_device(jax.devices("cpu")[0]):
        for key in first.values():
            name, static, operands, _ = program[key]
            got = jax.jit(lambda *a, f=kernels[name], s=static: f(*a, **s))(*operands)
            want = NUMPY[name](*operands, **static)
            for g, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, want))):
                np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5, err_msg=key)


def test_every_op_carries_the_counters_flops_and_bytes(tiny):
    spec = mj.JAX_SIZES["tiny"]
    counter = Counter(w_bytes=4, act_bytes=4, kv_bytes=4)  # fp32 on the CPU: 4 B per element
    tokens = np.random.default_rng(0).integers(0, TINY.V, size=(spec["batch"], spec["tokens"]))
    forward(init_params(TINY), TINY, tokens, counter=counter)
    assert tiny.dtype == "fp32" and [op.key for op in tiny.ops] == list(counter.rows)
    for op in tiny.ops:
        row = counter.rows[op.key]
        assert (op.flops, op.bytes) == (row["flops"], row["weight_bytes"] + row["act_bytes"]
                                        + row["kv_bytes"])
    mm = {op.key: op for op in tiny.matmuls}
    assert set(mm) == {f"matmul {dt} n={n}" for dt in ("bf16", "fp32") for n in (64, 128)}
    assert (mm["matmul bf16 n=128"].flops, mm["matmul bf16 n=128"].bytes) == (
        2 * 128**3, 3 * 128 * 128 * 2)  # bf16: 2 B per element


def test_roofs_and_timings(tiny):
    chip = tiny.chip
    assert sorted(chip.peaks) == ["bf16", "fp32"]
    for figure in (chip.peak("bf16"), chip.peak("fp32"), chip.hbm_bw):
        assert figure.is_Integer and figure > 0
    assert chip.sources["peaks.bf16"].startswith("measured by symroof.surfaces.measure_jax "
                                                 "(tiny) on cpu")
    assert "donated" in chip.sources["hbm_bw"] and tiny.t_call > 0
    for op in [*tiny.matmuls, *tiny.ops]:
        assert op.measured > 0 and op.t_overhead > 0
        assert op.predicted == op.roofline + op.t_overhead
        against = tiny.on_spec[op.key]  # the same seconds against the H100's record
        assert (against.measured, against.t_overhead) == (op.measured, op.t_overhead)
        assert against.t_math == pytest.approx(op.flops / float(sr.chip("h100").peak(
            op.key.split()[1] if op.key.startswith("matmul") else "fp32")))


def test_table_and_cli_option(tiny, capsys, monkeypatch):
    assert "record h100: bf16 989 TFLOP/s" in tiny.roofs_text()
    table = tiny.table()
    assert all(op.key in table for op in [*tiny.matmuls, *tiny.ops]) and "ops (sum)" in table
    assert "record" in table.splitlines()[0]
    bare = dataclasses.replace(tiny, spec=None, on_spec={})  # a device with no record
    calls = []
    monkeypatch.setattr(mj, "measure_jax", lambda *a: calls.append(a) or bare)
    parser = argparse.ArgumentParser()
    measure_module.add_arguments(parser)
    args = parser.parse_args(["--backend", "jax", "--size", "tiny", "--repeats", "1"])
    assert measure_module.run_cli(args) == 0 and calls == [("tiny", 1, None)]
    out = capsys.readouterr().out
    assert "measured with JAX" in out and "no chip on record" in out and "attn/softmax" in out
    assert "record" not in out.splitlines()[2]  # the table's head: no record columns


def test_bad_input_is_named():
    need_jax()
    with pytest.raises(ValueError, match=r"size must be one of \['large', 'mid', 'tiny'\], "
                                         "got 'huge'"):
        mj.measure_jax("huge")
    with pytest.raises(ValueError, match="dtype must be one of \\['bf16', 'fp32'\\], got 'fp8'"):
        mj.measure_jax("tiny", dtype="fp8", platform="cpu")
    parser = argparse.ArgumentParser()
    measure_module.add_arguments(parser)
    for argv, message in ((["--size", "large"], "--size large is for --backend jax"),
                          (["--dtype", "bf16"], "--dtype bf16 is for --backend jax")):
        with pytest.raises(ValueError, match=message):
            measure_module.run_cli(parser.parse_args(argv))


def test_backend_jax_without_jax_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jax" else real(name, *a))
    parser = argparse.ArgumentParser()
    measure_module.add_arguments(parser)
    with pytest.raises(ValueError, match="--backend jax needs jax"):
        measure_module.run_cli(parser.parse_args(["--backend", "jax"]))


@pytest.mark.parametrize("kind, name", [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H100 PCIe", None), ("NVIDIA H100 NVL", None),
    ("NVIDIA H200", "h200"), ("NVIDIA H200 NVL", None), ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA A100-SXM4-40GB", None), ("Tesla V100-SXM2-16GB", "v100"), ("NVIDIA B200", "b200"),
    ("NVIDIA GB200", "gb200"), ("TPU v4", "tpu-v4p"), ("TPU v5 lite", "tpu-v5e"),
    ("TPU v5", "tpu-v5p"), ("TPU v5p", "tpu-v5p"), ("TPU v6 lite", "tpu-v6e"), ("cpu", None),
])
def test_known_chips(kind, name):
    assert mj.known_chip(kind) == name
    if name is not None:
        assert sr.chip(name).name == name  # every name the table gives is a record
