"""Golden strings: the exact LaTeX, Markdown and text that symroof renders, and the notebook
hooks (``_repr_latex_``, ``_repr_markdown_``) of its values.

A change to a rendering (or to the accounting behind the tiny-model table) shows up here as a
diff. To regenerate a golden string, print the same call and paste it after checking it.
"""

import os
import shutil
import subprocess

import pytest

import symroof as sr
from symroof.derivation import Derivation
from symroof.models.table import RooflineTable, roofline_table
from symroof.ops import add
from symroof.render import document
from symroof.symbols import B, C, D, F, W


@pytest.fixture(scope="module")
def matmul_derivation():
    d = Derivation("Matmul intensity", source="How to Scale Your Model, ch. 1")
    i = d.step("Intensity of X[B,D] @ W[D,F] in bf16", r"\text{AI}",
               sr.matmul(B, D, F).intensity)
    d.step("B much smaller than D and F", r"\text{AI}", sr.leading(i, small=B),
           because="B << D, F")
    v5e = sr.chip("tpu-v5e")
    b = d.step("Critical batch $C/W$, on a TPU v5e", "B^*", C / W,
               at={C: v5e.peak(), W: v5e.hbm_bw})
    d.claim(r"$B^*$ is about 240 on a TPU v5e ``critical_batch``",
            abs(float(b) - 240.24) < 0.01 and b == sr.critical_batch(v5e))
    return d


DERIVATION_LATEX = r"""\subsection*{Matmul intensity}
\noindent\emph{Source: How to Scale Your Model, ch. 1}
\begin{align*}
\intertext{Intensity of X[B,D] @ W[D,F] in bf16}
\text{AI} &= \frac{B D F}{B D + B F + D F} \\
\intertext{B much smaller than D and F}
\text{AI} &= B && \text{B $\ll$ D, F} \\
\intertext{Critical batch $C/W$, on a TPU v5e}
B^* &= \frac{C}{W} \\*
&= \frac{9850}{41} \approx 240.244
\end{align*}
\begin{itemize}
\item[\checkmark] $B^*$ is about 240 on a TPU v5e \texttt{critical\_batch}
\end{itemize}"""

DERIVATION_MARKDOWN = r"""### Matmul intensity
*Source: How to Scale Your Model, ch. 1*

Intensity of X[B,D] @ W[D,F] in bf16

$$ \text{AI} = \frac{B D F}{B D + B F + D F} $$

B much smaller than D and F *(B << D, F)*

$$ \text{AI} = B $$

Critical batch $C/W$, on a TPU v5e

$$ B^* = \frac{C}{W} = \frac{9850}{41} \approx 240.244 $$

- ✓ $B^*$ is about 240 on a TPU v5e ``critical_batch``"""

DERIVATION_TEXT = r"""Matmul intensity
================
source: How to Scale Your Model, ch. 1
- Intensity of X[B,D] @ W[D,F] in bf16
    AI = B*D*F/(B*D + B*F + D*F)
    LaTeX: \text{AI} = \frac{B D F}{B D + B F + D F}
- B much smaller than D and F   [B << D, F]
    AI = B
    LaTeX: \text{AI} = B
- Critical batch C/W, on a TPU v5e
    B^* = C/W = 9850/41  ~ 240.244
    LaTeX: B^* = \frac{C}{W} = \frac{9850}{41}
[ok] B^* is about 240 on a TPU v5e ``critical_batch``"""

DERIVATION_REPR = (r"$\begin{aligned} \text{AI} &= \frac{B D F}{B D + B F + D F} \\ "
                   r"\text{AI} &= B \\ B^* &= \frac{C}{W} = \frac{9850}{41} \end{aligned}$")


def test_derivation_renders(matmul_derivation):
    d = matmul_derivation
    assert d.to_latex() == DERIVATION_LATEX
    assert d.to_markdown() == DERIVATION_MARKDOWN == d._repr_markdown_()
    assert str(d) == DERIVATION_TEXT
    assert d._repr_latex_() == DERIVATION_REPR


@pytest.fixture(scope="module")
def two_ops():
    """A table by hand: bf16 X[64,4096] @ W[4096,14336] (2*64*4096*14336 = 7.52 GFLOP over
    4096*14336*2 = 117 MB of weights) and a residual add of 64*4096 elements (3 x 2 bytes
    each), on an H100 (989e12 FLOP/s, 3.35e12 B/s)."""
    rows = {"mlp/up": sr.matmul(64, 4096, 14336), "mlp/residual": add(64 * 4096)}
    return RooflineTable(rows=rows, chip=sr.chip("h100"), title="two ops")


TWO_OPS_MARKDOWN = """**two ops** (conventions: symroof)

| op | FLOPs | weight B | KV B | act B | intensity | bound | time |
|---|---|---|---|---|---|---|---|
| mlp/up | 7.52 G | 117 M | 0 | 2.36 M | 62.7 | memory | 35.8 us |
| mlp/residual | 262 k | 0 | 0 | 1.57 M | 0.167 | memory | 470 ns |
| **total** | **7.52 G** | **117 M** | **0** | **3.93 M** | **61.9** | **memory** | **36.2 us (sum)** |

- per-op sum 36.2 us; totals as one roofline: 36.2 us (max, full overlap) .. 43.8 us (sum, no overlap)
- memory-bound: 'mlp/up' takes 99% of the per-op time (35.8 us of 36.2 us), memory-bound at intensity 62.7 against the ridge 295 FLOP/B"""  # noqa: E501

TWO_OPS_LATEX = r"""\begin{table}[H] % needs \usepackage{booktabs,float}
\centering
\small
\begin{tabular}{lrrrrrrr}
\toprule
op & FLOPs & weight B & KV B & act B & intensity & bound & time \\
\midrule
mlp/up & 7.52 G & 117 M & 0 & 2.36 M & 62.7 & memory & 35.8 $\mu$s \\
mlp/residual & 262 k & 0 & 0 & 1.57 M & 0.167 & memory & 470 ns \\
\midrule
total & 7.52 G & 117 M & 0 & 3.93 M & 61.9 & memory & 36.2 $\mu$s (sum) \\
\bottomrule
\end{tabular}
\caption{two ops; conventions: symroof}
\par\smallskip\footnotesize\raggedright
per-op sum 36.2 $\mu$s; totals as one roofline: 36.2 $\mu$s (max, full overlap) to 43.8 $\mu$s (sum, no overlap)\par
memory-bound: `mlp/up' takes 99\% of the per-op time (35.8 $\mu$s of 36.2 $\mu$s), memory-bound at intensity 62.7 against the ridge 295 FLOP/B\par
\end{table}"""  # noqa: E501

TWO_OPS_TEXT = """two ops
h100, bf16: ridge 295 FLOP/B; conventions: symroof
op             FLOPs  weight B  KV B   act B  intensity   bound           time
------------------------------------------------------------------------------
mlp/up        7.52 G     117 M     0  2.36 M       62.7  memory        35.8 us
mlp/residual   262 k         0     0  1.57 M      0.167  memory         470 ns
------------------------------------------------------------------------------
total         7.52 G     117 M     0  3.93 M       61.9  memory  36.2 us (sum)

per-op sum 36.2 us; totals as one roofline: 36.2 us (max, full overlap) .. 43.8 us (sum, no overlap)
memory-bound: 'mlp/up' takes 99% of the per-op time (35.8 us of 36.2 us), memory-bound at intensity 62.7 against the ridge 295 FLOP/B"""  # noqa: E501


def test_hand_built_table_renders(two_ops):
    assert two_ops.to_markdown() == TWO_OPS_MARKDOWN == two_ops._repr_markdown_()
    assert two_ops.to_latex() == TWO_OPS_LATEX
    assert two_ops.to_text() == TWO_OPS_TEXT == str(two_ops)


TINY_DECODE_MARKDOWN = """**tiny decode on H100** (conventions: symroof)

> **warning:** tiny's maximum context is not known (no max_position): the context and the crossovers are not checked against it

| op | FLOPs | weight B | KV B | act B | intensity | bound | time |
|---|---|---|---|---|---|---|---|
| embed | 0 | 256 | 0 | 256 | 0 | memory | 0.153 ns |
| attn_norm | 1.03 k | 256 | 0 | 1.02 k | 0.806 | memory | 0.382 ns |
| attn/q_proj | 32.8 k | 16.4 k | 0 | 1.02 k | 1.88 | memory | 5.2 ns |
| attn/k_proj | 8.19 k | 4.1 k | 0 | 640 | 1.73 | memory | 1.41 ns |
| attn/v_proj | 8.19 k | 4.1 k | 0 | 640 | 1.73 | memory | 1.41 ns |
| attn/rope | 960 | 0 | 0 | 1.31 k | 0.732 | memory | 0.392 ns |
| attn/kv_write | 0 | 0 | 256 | 256 | 0 | memory | 0.153 ns |
| attn/core | 9.66 k | 0 | 2.05 k | 1.02 k | 3.15 | memory | 0.917 ns |
| attn/o_proj | 32.8 k | 16.4 k | 0 | 1.02 k | 1.88 | memory | 5.2 ns |
| attn/residual | 256 | 0 | 0 | 1.54 k | 0.167 | memory | 0.459 ns |
| mlp_norm | 1.03 k | 256 | 0 | 1.02 k | 0.806 | memory | 0.382 ns |
| mlp/gate | 88.1 k | 44 k | 0 | 1.89 k | 1.92 | memory | 13.7 ns |
| mlp/up | 88.1 k | 44 k | 0 | 1.89 k | 1.92 | memory | 13.7 ns |
| mlp/swiglu | 3.44 k | 0 | 0 | 4.13 k | 0.833 | memory | 1.23 ns |
| mlp/down | 88.1 k | 44 k | 0 | 1.89 k | 1.92 | memory | 13.7 ns |
| mlp/residual | 256 | 0 | 0 | 1.54 k | 0.167 | memory | 0.459 ns |
| final_norm | 516 | 128 | 0 | 512 | 0.806 | memory | 0.191 ns |
| lm_head | 65.5 k | 32.8 k | 0 | 1.28 k | 1.92 | memory | 10.2 ns |
| **total** | **429 k** | **207 k** | **2.3 k** | **22.9 k** | **1.85** | **memory** | **69.2 ns (sum)** |

- per-op sum 69.2 ns; totals as one roofline: 69.2 ns (max, full overlap) .. 69.7 ns (sum, no overlap)
- whole-model bound (weights + KV only) 62.1 ns; per-op sum is 1.12x of it
- memory-bound: 'mlp/gate' takes 20% of the per-op time (13.7 ns of 69.2 ns), memory-bound at intensity 1.92 against the ridge 295 FLOP/B
- attention core: fused (FlashAttention-style: scores stay on chip, masked blocks skipped); norms and elementwise ops unfused; useful FLOPs; lm_head on the last position"""  # noqa: E501


def test_tiny_decode_table_on_h100():
    """tiny (D=64, F=172, L=2, H=8, G=2, d_h=8, V=256), B=2, one new token after 7 cached.
    By hand: q_proj = 2 L B T D H d_h = 2*2*2*64*64 = 32768 FLOPs over L D H d_h wb =
    16384 weight bytes; the KV write moves L 2 B T G d_h kvb = 256 bytes."""
    t = roofline_table(sr.model("tiny"), sr.chip("h100"), batch=2, new_tokens=1, cached=7,
                       title="tiny decode on H100")
    assert t.rows["attn/q_proj"].flops == 32768 and t.rows["attn/q_proj"].weight_bytes == 16384
    assert t.rows["attn/kv_write"].kv_bytes == 256
    assert t.to_markdown() == TINY_DECODE_MARKDOWN


def test_notebook_hooks_of_values():
    # readable numbers with units; by hand: 2*4096*4096 = 33.6 M FLOPs per row of B, 4096^2 * 2
    # = 33.6 MB of weights; on the H100 (989e12 FLOP/s, 3.35e12 B/s) 2*64*4096^2 FLOPs take
    # 2.17 us and 2*(2*64*4096 + 4096^2) bytes 10.3 us
    c = sr.matmul(B, 4096, 4096)
    assert c._repr_latex_() == (
        r"$\displaystyle \begin{aligned} \text{FLOPs} &= 33.6\,\mathrm{MFLOP} \cdot B \\ "
        r"\text{weight bytes} &= 33.6\,\mathrm{MB} \\ "
        r"\text{activation bytes} &= 16.4\,\mathrm{kB} \cdot B \end{aligned}$")
    assert sr.latex(c, exact=True) == (  # exact when asked
        r"\begin{aligned} \text{FLOPs} &= 33554432 B \\ "
        r"\text{weight bytes} &= 33554432 \\ \text{activation bytes} &= 16384 B \end{aligned}")
    t = sr.time(sr.matmul(64, 4096, 4096), sr.chip("h100"))
    assert t._repr_latex_() == (
        r"$\displaystyle \begin{aligned} t_\text{math} &= 2.17\,\mu\mathrm{s} \\ "
        r"t_\text{mem} &= 10.3\,\mu\mathrm{s} \\ t_\text{lower} &= 10.3\,\mu\mathrm{s} \\ "
        r"t_\text{upper} &= 12.5\,\mu\mathrm{s} \end{aligned}$")
    assert sr.latex(t, exact=True).endswith(
        r"t_\text{upper} &= \frac{202228736}{16177490234375} \end{aligned}")


def test_check_report_renders_in_notebooks():
    report = sr.check(sr.model("tiny"), batch=1, new_tokens=2)
    if not hasattr(report, "_repr_markdown_"):
        pytest.skip("CheckReport._repr_markdown_ is not in this tree yet (check.py)")
    md = report._repr_markdown_()
    assert md.startswith("**tiny: batch=1, new_tokens=2, cached=0")
    assert "| `attn/q_proj` | 32,768 | 32,768 | 16,384 | 0 | 1,024 | equal |" in md


def test_step_time_renders_in_notebooks():
    st = sr.step_time(sr.model("tiny"), sr.chip("h100"), 1, 1, 3)
    hooks = [h for h in ("_repr_markdown_", "_repr_latex_", "_repr_html_") if hasattr(st, h)]
    if not hooks:
        pytest.skip("StepTime has no notebook repr yet (inference.py)")
    assert all(getattr(st, h)() for h in hooks)


@pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                    reason="pdflatex is not on the PATH (CI installs it, and there this fails)")
def test_golden_latex_compiles(tmp_path, matmul_derivation, two_ops):
    body = "\n\n".join([DERIVATION_LATEX, TWO_OPS_LATEX,
                         f"\\[ {sr.latex(sr.matmul(B, D, F))} \\]"])
    (tmp_path / "golden.tex").write_text(document(body), encoding="utf-8")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                          "golden.tex"], cwd=tmp_path, capture_output=True, text=True,
                         errors="replace", timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
