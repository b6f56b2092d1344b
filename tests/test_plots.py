"""The model plots: what they draw is checked against numbers computed here independently,
they save as PNG and SVG, labels do not overlap, and matplotlib loads only when plotting."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symroof as sr
from symroof.plots import attention_share_plot, ops_roofline_plot, throughput_plot

ROOT = Path(__file__).resolve().parents[1]
LLAMA, H100 = sr.model("llama-3.1-8b"), sr.chip("h100")


@pytest.fixture(scope="module")
def ops_fig():
    return ops_roofline_plot(LLAMA, H100, context=2048, prefill_batch=1, decode_batch=64)


@pytest.fixture(scope="module")
def tp_fig():
    return throughput_plot(LLAMA, H100, [1, 4, 16, 64, 256, 1024], context=2048)


def test_ops_roofline_places_both_phases_on_the_roof(ops_fig):
    ax = ops_fig.axes[0]
    prefill, decode = ax.collections[:2]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["h100 HBM roof (bf16)", "prefill: B=1, S=2048", "decode: B=64, S=2048"]
    # 8 groups, less the two with no FLOPs (embedding gather, KV write)
    assert len(prefill.get_offsets()) == len(decode.get_offsets()) == 6
    peak, bw = 989e12, 3.35e12
    for x, y in np.vstack([prefill.get_offsets(), decode.get_offsets()]):
        assert y == pytest.approx(min(peak, x * bw))
    # decode MLP at B = 64: 2*64*D*F*3*L FLOPs over 3*L*D*F*2 weight bytes + activations
    mlp = sr.group(LLAMA.ops(64, 1, 2047, last_only=True, attention="fused"))["MLP"]
    assert float(mlp.intensity) == pytest.approx(62.7, abs=0.05)
    assert any(x == pytest.approx(float(mlp.intensity)) for x, _ in decode.get_offsets())
    assert "embedding (prefill), KV write (prefill)" in ops_fig.texts[0].get_text()


def test_ops_roofline_labels_do_not_overlap(ops_fig):
    ax = ops_fig.axes[0]
    renderer = ops_fig.canvas.get_renderer()
    names = "MLP", "norms", "attention core", "lm_head"
    boxes = [t.get_window_extent(renderer) for t in ax.texts if any(n in t.get_text()
                                                                    for n in names)]
    assert len(boxes) >= 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_ops_roofline_per_row(tmp_path):
    fig = ops_roofline_plot("tiny", sr.chip("tpu-v5e"), context=16, groups=False,
                            attention="naive", path=tmp_path / "rows.svg")
    names = "\n".join(t.get_text() for t in fig.axes[0].texts)
    assert "attn/scores" in names and "mlp/down" in names
    assert (tmp_path / "rows.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_throughput_against_batch(tp_fig, tmp_path):
    ax = tp_fig.axes[0]
    whole, per_op = ax.get_lines()[:2]
    b, tok_whole = whole.get_data()
    _, tok_per_op = per_op.get_data()
    assert list(b) == [1, 4, 16, 64, 256, 1024]
    assert np.all(np.diff(tok_whole) > 0) and np.all(tok_per_op <= tok_whole * (1 + 1e-12))
    # B = 1: weights (2 P_mm bytes) + KV of 2048 tokens over 3.35e12 B/s, one token per step
    p_mm, kv = float(LLAMA.matmul_params), 2048 * 2 * 32 * 8 * 128 * 2
    assert tok_whole[0] == pytest.approx(3.35e12 / (2 * p_mm + kv), rel=1e-9)
    # HBM full: (80e9 - 2 * params) / (2048 tokens * 131072 B per token)
    b_max = (80e9 - 2 * 8030261248) / (2048 * 131072)
    assert ax.get_lines()[2].get_xdata()[0] == pytest.approx(b_max)
    tp_fig.savefig(tmp_path / "tp.png")
    assert (tmp_path / "tp.png").read_bytes()[:4] == b"\x89PNG"


def test_attention_share_crosses_half_at_ctx_star(tmp_path):
    fig = attention_share_plot(["llama-3.1-8b", "llama-2-7b"], path=tmp_path / "share.png")
    assert (tmp_path / "share.png").read_bytes()[:4] == b"\x89PNG"
    curve, dot = fig.axes[0].get_lines()[:2]
    s, share = curve.get_data()
    assert np.all(np.diff(share) > 0) and share[0] < 0.01 and share[-1] > 0.95
    star = float(sr.ctx_star(LLAMA))
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (pytest.approx(star), 0.5)
    assert np.interp(star, s, share) == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("call, message", [
    (lambda: ops_roofline_plot(LLAMA, H100, context=0), "context must be a positive integer"),
    (lambda: throughput_plot(LLAMA, H100, [0, 2]), "batches must be positive integers"),
    (lambda: attention_share_plot([]), "needs at least one model"),
    (lambda: attention_share_plot(["tiny"], contexts=[-1]), "contexts must be positive"),
    (lambda: ops_roofline_plot(LLAMA, H100, dtype="fp4"), "no peak for dtype 'fp4'"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_matplotlib_loads_only_when_plotting():
    code = ("import sys, symroof, symroof.surfaces.cli, symroof.surfaces.notes, symroof.plots\n"
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported at import time'")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
