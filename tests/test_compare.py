"""sr.compare and ``symroof compare``: every cell is the same quantity the Python API gives
when the question is asked alone, on every surface (table, JSON, plot)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from fractions import Fraction

import pytest
import sympy as sp

import symroof as sr
from symroof.hardware import CHIPS as CHIP_RECORDS
from symroof.hardware.prices import PRICES
from symroof.models.table import roofline_table
from symroof.parallel import cost_per_million_tokens
from symroof.parallel.serving import width
from symroof.render import document, fmt_si
from symroof.surfaces.compare import AXES, QUESTIONS
from symroof.surfaces.solve import solve_step

CHIPS = ["h100", "tpu-v5e", "b200"]
M70 = "llama-3.1-70b"


@pytest.fixture(scope="module")
def decode():
    return sr.compare("decode", "chips", CHIPS, model=M70, batch=64, context=8192)


def test_decode_cells_are_the_report_totals(decode):
    m = sr.model(M70)
    assert decode.labels == tuple(CHIPS)
    for name in CHIPS:
        t = roofline_table(m, sr.chip(name), batch=64, new_tokens=1, cached=8191)
        cells, total = decode.cells[name], t.as_dict()["total"]
        assert (cells["lower"], cells["upper"]) == t.bounds
        assert cells["per_op_sum"] == t.per_op_sum
        assert (cells["t_math"], cells["t_mem"], cells["bound"]) == \
            (total["t_math_s"], total["t_mem_s"], total["bound"])
        assert list(cells["notes"]) == list(t.warnings)  # 313 GB fits no single chip here
    # the table prints those cells: the H100 row reads its step's bounds
    row = next(r for r in decode.rows() if r[0] == "h100")
    assert row[3:6] == [fmt_si(decode.cells["h100"]["lower"], "s"),
                        fmt_si(decode.cells["h100"]["upper"], "s"), "memory"]


def test_json_and_every_format_carry_the_same_numbers(decode):
    data = json.loads(decode.to_json())
    assert list(data["rows"]) == CHIPS
    for name in CHIPS:
        assert data["rows"][name]["lower"] == float(decode.cells[name]["lower"])
        assert data["rows"][name]["lower_exact"] == str(decode.cells[name]["lower"])
    head = " & ".join(["chip", "t\\_math", "t\\_mem", "step (max)", "step (sum)", "bound",
                       "per-op sum"])
    assert head in decode.to_latex() and "\\begin{table}" not in decode.to_latex()
    assert decode.to_markdown().count("\n| ") == 1 + len(CHIPS)  # header + one row each


def test_decode_on_meshes_is_the_serving_plans_step():
    c = sr.compare("decode", "meshes", ["tpu-v5e:4x4", "tpu-v5e:4x8"], model=M70, batch=32,
                   context=8192, weights="int8")
    for label, shape in (("tpu-v5e:4x4", "4x4"), ("tpu-v5e:4x8", "4x8")):
        t = sr.serve(M70, sr.mesh("tpu-v5e", shape), batch=32, context=8192,
                     weights="int8").time
        assert [c.cells[label][k] for k in ("t_math", "t_mem", "t_net", "lower", "upper")] == \
            [t.t_math, t.t_mem, t.t_net, t.lower, t.upper]
    assert c.cells["tpu-v5e:4x8"]["t_net"] != c.cells["tpu-v5e:4x4"]["t_net"]


def test_critical_batch_by_dtype_is_the_books():
    c = sr.compare("critical-batch", "dtypes", ["bf16", "int8"], chip="tpu-v5e",
                   model="llama-3.1-8b", context=4096)
    for dtype in ("bf16", "int8"):
        assert c.cells[dtype]["b_star"] == sr.critical_batch(sr.chip("tpu-v5e"),
                                                             w_bytes=width(dtype, "weights"))
    # How to Scale Your Model, ch. 1: B > 240 for bf16 on a v5e, B > 120 with int8 weights
    assert (c.cells["bf16"]["b_star"], c.cells["int8"]["b_star"]) == \
        (sp.Rational(9850, 41), sp.Rational(4925, 41))
    m8 = sr.model("llama-3.1-8b").replace(w_bytes=width("int8", "weights"))
    root = solve_step("t_math = t_mem", "batch", m8, chip=sr.chip("tpu-v5e"), context=4096)
    assert c.cells["int8"]["b_decode"] == (root.root if root.root is not None else "never")


def test_serving_plans_with_prices():
    meshes = ["tpu-v5e:4x4", "h100:8", "b200:8"]
    c = sr.compare("serve", "meshes", meshes, model=M70, batch=32, context=8192,
                   weights="int8", kv="int8")
    for label in meshes:
        chip, shape = label.split(":")
        plan = sr.serve(M70, sr.mesh(chip, shape), batch=32, context=8192, weights="int8",
                        kv="int8")
        cells = c.cells[label]
        assert (cells["tokens_per_s_per_chip"], cells["hbm_used"], cells["max_batch"]) == \
            (plan.tokens_per_s_per_chip, plan.hbm_used, plan.max_batch)
        price = PRICES.get(chip)
        assert cells["usd_per_mtok"] == (price and cost_per_million_tokens(
            plan, price.usd_per_chip_hour, price.source))
    assert c.cells["b200:8"]["usd_per_mtok"] is None  # no price on record: no cell
    priced = sr.compare("serve", "meshes", meshes[:2], model=M70, batch=32, context=8192,
                        weights="int8", price=Fraction(2))
    plan = sr.serve(M70, sr.mesh("h100", "8"), batch=32, context=8192, weights="int8")
    assert priced.cells["h100:8"]["usd_per_mtok"] == cost_per_million_tokens(plan, 2, "x")


def test_training_plans_are_the_searchs_choice():
    meshes = ["tpu-v5p:4x4x4", "tpu-v5p:8x8x8"]
    c = sr.compare("train", "meshes", meshes, model="llama-3.1-8b", batch=256, context=4096)
    for label in meshes:
        best = sr.strategy_search("llama-3.1-8b", sr.mesh("tpu-v5p", label.split(":")[1]),
                                  batch_tokens=2**20, seq=4096).choice(0)
        assert c.cells[label]["strategy"] == str(best["candidate"])
        assert (c.cells[label]["lower"], c.cells[label]["memory"]) == \
            (best["lower"], best["memory"])


def test_models_side_by_side_in_prefill():
    c = sr.compare("prefill", "models", ["llama-3.1-8b", "mixtral-8x7b"], chip="h100",
                   batch=1, context=2048)
    t = roofline_table(sr.model("mixtral-8x7b"), sr.chip("h100"), batch=1, new_tokens=2048)
    assert c.cells["mixtral-8x7b"]["lower"] == t.bounds[0]


@pytest.mark.parametrize("call, words", [
    (lambda: sr.compare("decode", "chips", ["h100"], model=M70, batch=1, context=8),
     "two or more chips"),
    (lambda: sr.compare("decoding", "chips", CHIPS), "unknown question 'decoding'"),
    (lambda: sr.compare("decode", "gpus", CHIPS), "unknown axis 'gpus'; axes: chips"),
    (lambda: sr.compare("train", "dtypes", ["bf16", "int8"], model=M70, mesh="tpu-v5p:4x4x4",
                        batch=256, context=4096), "train does not depend on dtypes"),
    (lambda: sr.compare("decode", "chips", CHIPS, model=M70, context=8), "needs --batch"),
    (lambda: sr.compare("serve", "chips", CHIPS, model=M70, batch=1, context=8),
     "a serving plan shards over a mesh: give --mesh"),
    (lambda: sr.compare("decode", "dtypes", ["bf16", "int3"], model=M70, chip="h100", batch=1,
                        context=8), "unknown weights dtype 'int3'"),
    (lambda: sr.compare("decode", "chips", ["h100", "h100"], model=M70, batch=1, context=8),
     "'h100' is given twice"),
])
def test_bad_input_is_named(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_every_question_and_axis_is_listed_in_the_cli(cli):
    text = cli(["compare", "--help"]).stdout
    assert all(f"--{a}" in text for a in AXES) and all(q in text for q in QUESTIONS)


def test_cli_prints_one_table_and_writes_one_plot(cli, tmp_path, decode):
    png = tmp_path / "cmp.png"
    r = cli(["compare", "--chips", "h100,tpu-v5e,b200", "--model", M70, "--phase", "decode",
             "--batch", "64", "--context", "8k", "--plot", str(png)])
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout == decode.to_text() + f"\nwrote {png}\n"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = cli(["compare", "--chips", "h100,tpu-v5e", "--models", "a,b", "--batch", "1"])
    assert r.returncode == 2 and "compare varies one thing" in r.stderr
    r = cli(["compare", "--chips", "h100,tpu-v5e", "--model", M70, "--batch", "1",
             "--context", "8", "--price", "2"])
    assert r.returncode == 2 and "--price prices a serving plan" in r.stderr


def test_plot_draws_each_plotted_column(decode):
    from symroof.plots.overlaps import text_overlaps

    fig = decode.plot()
    assert text_overlaps(fig) == []
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == CHIPS
    heights = sorted(p.get_height() for p in ax.patches)
    expected = sorted(float(decode.cells[n][k]) * 1e3 for n in CHIPS for k in ("t_math", "t_mem"))
    assert heights == pytest.approx(expected, rel=1e-12)


def test_price_records_are_sourced_and_match_the_books_flops_per_dollar():
    for name, p in PRICES.items():
        assert name in CHIP_RECORDS and p.usd_per_chip_hour > 0
        assert "http" in p.source and len(p.date) == 7 and p.date[4] == "-"
    # How to Scale Your Model, ch. 8 (Feb 2025 table): FLOPs per dollar = C * 3600 / price,
    # H100 3.3e17, v5p 3.9e17 (its v5e entry, 5.8e17, does not follow from its own row)
    per_dollar = {n: sr.chip(n).peak() * 3600 / p.usd_per_chip_hour for n, p in PRICES.items()}
    assert round(float(per_dollar["h100"]) / 1e17, 1) == 3.3
    assert round(float(per_dollar["tpu-v5p"]) / 1e17, 1) == 3.9


def test_serve_price_is_the_python_cost_per_million_tokens(cli):
    args = ["serve", "--model", M70, "--mesh", "tpu-v5e:4x4", "--batch", "32", "--context",
            "8k", "--weights", "int8", "--kv", "int8"]
    plan = sr.serve(M70, sr.mesh("tpu-v5e", "4x4"), batch=32, context=8192, weights="int8",
                    kv="int8")
    v5e = PRICES["tpu-v5e"]
    cost = cost_per_million_tokens(plan, v5e.usd_per_chip_hour, v5e.source)
    text = cli([*args, "--price", "record"]).stdout
    assert f"  ${float(cost):.3g} per million tokens at $1.20 per chip-hour ({v5e.source}" in text
    data = json.loads(cli([*args, "--price", "2.5", "--format", "json"]).stdout)
    assert data["price"] == {"usd_per_chip_hour": 2.5, "source": "--price on the command line",
                             "usd_per_million_tokens": float(cost_per_million_tokens(
                                 plan, sp.Rational(5, 2), "x"))}
    assert "per million tokens" not in cli(args).stdout  # no price, no cost line
    for bad, words in (("-1", "--price must be a positive number of US dollars"),
                       ("record", "no price on record for chip 'b200'")):
        r = cli([*args[:4], "b200:8", *args[5:], "--price", bad])
        assert r.returncode == 2 and words in r.stderr


@pytest.mark.skipif(shutil.which("pdflatex") is None and not os.environ.get("CI"),
                    reason="pdflatex is not on the PATH (CI installs it)")
def test_latex_tables_compile(decode, tmp_path):
    served = sr.compare("serve", "meshes", ["tpu-v5e:4x4", "h100:8"], model=M70, batch=32,
                        context=8192, weights="int8")
    body = decode.to_latex() + "\n\n" + served.to_latex()
    usd = served.cells["tpu-v5e:4x4"]["usd_per_mtok"]
    assert f"& \\${float(usd):.3g} \\\\" in body  # the dollar sign escaped, last column
    (tmp_path / "t.tex").write_text(document(body))
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
