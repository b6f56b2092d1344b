"""Every field of each command's JSON output, cross-checked against the same quantity asked
of the Python API, units included (seconds as seconds, bytes as bytes): a field written in
milliseconds, or from a second formula, fails here. Each test also asserts the set of
fields, so a new field must be checked before it ships."""

import contextlib
import io
import json

import pytest
import sympy as sp

import symroof as sr
from symroof.hardware import CHIPS
from symroof.models import MODELS
from symroof.surfaces.cli import main


def cli_json(line: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*line.split(), "--format", "json"]) == 0
    return json.loads(out.getvalue())


def close(a: float, b) -> bool:
    return a == pytest.approx(float(b), rel=1e-12, abs=0)


def test_serve_json():
    d = cli_json("serve --model llama-3.1-70b --mesh tpu-v5e:4x4 --batch 32 --context 8k "
                 "--weights int8 --kv fp8")
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), batch=32, context=8192,
                    weights="int8", kv="fp8")
    t, m = plan.time, plan.model
    assert set(d) == {"query", "fits", "max_batch", "min_chips_weights", "min_chips",
                      "bytes_needed", "memory_per_chip", "hbm_bytes", "smallest_slice",
                      "lines", "t_math_s", "t_mem_s", "t_net_s", "lower_s", "upper_s",
                      "bound", "book_s", "tokens_per_s_per_chip", "collectives", "warnings",
                      "conventions"}
    assert d["query"] == {"model": "llama-3.1-70b", "model_name": "llama-3.1-70b",
                          "chip": "tpu-v5e", "mesh": "4x4", "chips": 16, "batch": 32,
                          "context": 8192, "weights": "int8", "kv": "fp8", "dtype": "bf16"}
    assert d["fits"] is plan.fits and d["max_batch"] == plan.max_batch
    assert d["min_chips_weights"] == plan.min_chips
    needed = m.params * m.w_bytes + 32 * 8192 * m.kv_bytes_per_token
    assert d["bytes_needed"] == needed and d["min_chips"] == -(-needed // (16 * 10**9))
    assert d["memory_per_chip"] == {k: int(v) for k, v in plan.memory.items()}
    assert d["hbm_bytes"] == 16 * 10**9
    for key in ("t_math", "t_mem", "t_net"):  # seconds
        assert close(d[f"{key}_s"], getattr(t, key))
    assert close(d["lower_s"], t.lower) and close(d["upper_s"], t.upper)
    assert d["bound"] == t.bound and close(d["book_s"], plan.book_time)
    assert close(d["tokens_per_s_per_chip"], 32 / (t.lower * 16))
    assert set(d["collectives"]) == {k.removeprefix("comm/") for k in plan.collectives}
    for key, c in plan.collectives.items():
        row = d["collectives"][key.removeprefix("comm/")]
        assert row["net_bytes"] == c.net_bytes and close(row["t_s"], c.net_time)
        assert row["bound"] == plan.bounds[key]
    assert sum(r["t_s"] for r in d["collectives"].values()) == pytest.approx(d["t_net_s"])
    assert d["warnings"] == list(plan.warnings)
    assert d["smallest_slice"] == {w: sr.smallest_slice("llama-3.1-70b", "tpu-v5e",
                                                         weights=w, kv="fp8", batch=32,
                                                         context=8192)
                                   for w in ("bf16", "int8", "int4")}


def test_train_json():
    d = cli_json("train --model llama-3.1-8b --mesh tpu-v5p:2x2x2 --tokens 1M")
    assert set(d) == {"query", "strategies", "excluded", "chosen", "answer", "nearby",
                      "slices_by_optimizer_bytes"}
    mesh = sr.mesh("tpu-v5p", "2x2x2")
    assert d["query"]["chips"] == mesh.n_chips == 8 and d["query"]["batch_tokens"] == 2**20
    for row in d["strategies"]:
        axes = {r: tuple(a) for r, a in row["axes"].items()}
        plan = sr.train_plan("llama-3.1-8b", mesh, row["strategy"], batch_tokens=2**20,
                             **axes)
        assert set(row) == {"strategy", "split", "axes", "degrees", "lower_s", "upper_s",
                            "bound", "memory_bytes", "fits", "conditions", "notes", "plan"}
        assert close(row["lower_s"], plan.lower) and close(row["upper_s"], plan.upper)
        assert close(row["memory_bytes"], plan.memory_total) and row["fits"] is plan.fits
        assert row["degrees"] == plan.degrees and row["bound"] == plan.bound
        assert row["plan"] == str(plan) and row["notes"] == list(plan.notes)
        by_name = {c.name: c for c in plan.conditions.values()}
        for c in row["conditions"]:
            cond = by_name[c["name"]]
            assert c["holds"] is cond.holds and c["threshold_exact"] == str(cond.threshold)
    assert d["chosen"] == d["strategies"][0]


def test_train_json_nearby_is_sr_nearby():
    d = cli_json("train --model llama-3.1-70b --mesh tpu-v5p:16x20x28 --tokens 4M")
    near = sr.nearby("llama-3.1-70b", sr.mesh("tpu-v5p", "16x20x28"), batch_tokens=2**22)
    assert set(d["nearby"]) == {"below", "above", "uneven"}
    for key in ("below", "above", "uneven"):
        row, c = d["nearby"][key], getattr(near, key)
        assert row["batch_tokens"] == c["batch"] and row["strategy"] == c["candidate"].strategy
        assert close(row["lower_s"], c["lower"]) and close(row["upper_s"], c["upper"])
        assert close(row["memory_bytes"], c["memory"])
    u = d["nearby"]["uneven"]
    assert u["padded_tokens"] % u["shards"] == 0 and u["padded_tokens"] - 2**22 < u["shards"]
    assert close(u["idle"], (u["padded_tokens"] - 2**22) / u["padded_tokens"])


def test_critical_batch_json():
    d = cli_json("critical-batch --chip b200 --dtype fp8 --x-bytes 2")
    c = sr.chip("b200")
    value = sr.critical_batch(c, dtype="fp8", x_bytes=2, w_bytes=1, out_bytes=2)
    assert set(d) == {"chip", "dtype", "x_bytes", "w_bytes", "out_bytes", "D", "F", "roof",
                      "critical_batch", "critical_batch_exact", "ridge", "ridge_exact",
                      "formula"}
    assert (d["x_bytes"], d["w_bytes"], d["out_bytes"]) == (2, 1, 2)
    assert d["critical_batch_exact"] == str(value) and close(d["critical_batch"], value)
    ridge = c.peak("fp8") / c.hbm_bw  # FLOP per byte
    assert d["ridge_exact"] == str(ridge) and close(d["ridge"], ridge)


def test_chips_json():
    d = cli_json("chips")
    assert set(d) == set(CHIPS)
    for name, row in d.items():
        c = sr.chip(name)
        assert set(row) == {"peaks", "hbm_bw", "hbm_bytes", "link_bw", "ridge", "ridge_exact",
                            "network", "sources"}
        assert row["peaks"] == {k: int(v) for k, v in c.peaks.items()}
        assert (row["hbm_bw"], row["hbm_bytes"], row["link_bw"]) == (c.hbm_bw, c.hbm_bytes,
                                                                    c.link_bw)
        for dtype, value in row["ridge"].items():
            assert close(value, c.critical_intensity(dtype))
            assert row["ridge_exact"][dtype] == str(c.critical_intensity(dtype))
        assert row["sources"] == dict(c.sources)
        net, got = c.network, row["network"]
        if net is None:
            assert got is None
        elif net.kind == "torus":
            assert set(got) == {"kind", "rank", "pod", "pod_chips", "host", "wrap_rule",
                                "hop_latency", "pcie_bw", "dcn_bw", "slices"}
            assert (tuple(got["pod"]), tuple(got["host"]), got["rank"]) == (
                tuple(net.pod), tuple(net.host), net.rank)
            assert got["pod_chips"] == net.pod_chips and got["wrap_rule"] == net.wrap_rule
            assert got["slices"] == [list(s) for s in net.offered()]
            for key in ("hop_latency", "pcie_bw", "dcn_bw"):  # seconds, bytes/s
                assert close(got[key], getattr(net, key)), (name, key)
        else:
            scalars = ("node_bisection", "hop_latency", "net_latency", "tree_latency",
                       "net_overhead", "ring_base_latency", "tree_base_latency", "pcie_bw")
            assert set(got) == {"kind", "nvlink_ports", "levels", "node_size", "max_gpus",
                                "node_egress", "sharp", *scalars}
            assert (got["nvlink_ports"], got["node_size"], got["max_gpus"], got["sharp"]) == (
                net.nvlink_ports, net.node_size, net.max_gpus, net.sharp)
            assert [(lv["name"], lv["degree"], lv["gpus_per_child"], lv["bw_per_gpu"])
                    for lv in got["levels"]] == [(lv.name, lv.degree, lv.gpus_per_child,
                                                  lv.bw_per_gpu) for lv in net.levels]
            assert [lv["sharp"] for lv in got["levels"]] == [
                net.sharp_at(i) for i in range(len(net.levels))]
            egress = net.node_egress if len(net.levels) > 1 else None
            assert got["node_egress"] == egress
            for key in scalars:  # seconds (latencies), bytes/s
                assert close(got[key], getattr(net, key)), (name, key)


def test_models_json():
    d = cli_json("models")
    assert set(d) == set(MODELS)
    for name, row in d.items():
        m = sr.model(name)
        assert {k: row[k] for k in ("D", "F", "L", "H", "G", "d_h", "V")} == {
            k: int(getattr(m, k)) for k in ("D", "F", "L", "H", "G", "d_h", "V")}
        assert row["params"] == m.params and row["tied"] is m.tied
        assert set(row) == {"D", "F", "L", "H", "G", "d_h", "V", "tied", "qkv_bias", "params",
                            "active_params", "family", "attention", "mlp", "max_position",
                            "w_bytes", "act_bytes", "kv_bytes", "notes", "source"}
        assert row["active_params"] == m.active_params and row["qkv_bias"] is m.qkv_bias
        assert row["max_position"] == (m.max_position or None)
        assert (row["w_bytes"], row["act_bytes"], row["kv_bytes"]) == (  # bytes an element
            m.w_bytes, m.act_bytes, m.kv_bytes)
        assert row["notes"] == list(m.notes) and row["source"] == m.source


def test_report_json_rows_are_the_exact_costs():
    d = cli_json("report --model llama-3.1-8b --chip h100 --phase decode --batch 8 "
                 "--context 2048")
    m, chip = sr.model("llama-3.1-8b"), sr.chip("h100")
    ops = m.ops(8, 1, 2047, last_only=True, attention="fused")
    assert set(d["rows"]) == set(ops)
    for name, cost in ops.items():
        row, t = d["rows"][name], sr.time(cost, chip)
        for field in ("flops", "weight_bytes", "kv_bytes", "act_bytes"):
            assert row[field] == getattr(cost, field), (name, field)
        assert close(row["t_math_s"], t.t_math) and close(row["t_mem_s"], t.t_mem), name
        assert close(row["t_lower_s"], t.lower) and close(row["t_upper_s"], t.upper), name
    total = sum(ops.values(), sr.Cost())
    assert d["total"]["flops"] == total.flops
    assert close(d["per_op_sum_s"], sum(sr.time(c, chip).lower for c in ops.values()))
    assert close(d["ridge"], chip.critical_intensity())


def test_solve_json_sides_are_the_step_rows_times():
    d = cli_json("solve t_math=t_mem --for batch --model llama-3.1-8b --chip h100 "
                 "--context 4096")
    from symroof.symbols import B
    rows = sr.model("llama-3.1-8b").ops(B, 1, 4095, last_only=True, attention="fused")
    t = sr.time(sum(rows.values(), sr.Cost()), sr.chip("h100"))  # seconds
    assert (d["lhs"], d["rhs"]) == (str(t.t_math), str(t.t_mem))
    assert d["root"] is None and d["never"].startswith("t_mem > t_math at every batch")
    assert float(sp.limit(t.t_math / t.t_mem, B, sp.oo)) == pytest.approx(0.106, abs=5e-4)


def test_train_json_with_kept_tensors_is_the_plan_with_that_remat_tuple():
    d = cli_json("train --model tiny --mesh tpu-v5e:2x2 --batch 64 --seq 1024 "
                 "--remat layer_input,mlp/up --strategy zero3")
    keep = ("layer_input", "mlp/up")
    assert d["query"]["remat"] == list(keep)
    mesh = sr.mesh("tpu-v5e", "2x2")
    assert [row["strategy"] for row in d["strategies"]] == ["zero3"]
    for row in d["strategies"]:
        axes = {r: tuple(a) for r, a in row["axes"].items()}
        plan = sr.train_plan("tiny", mesh, row["strategy"], batch_tokens=64 * 1024,
                             seq=1024, remat=keep, **axes)
        assert close(row["lower_s"], plan.lower) and close(row["upper_s"], plan.upper)
        assert close(row["memory_bytes"], plan.memory_total) and row["fits"] is plan.fits
        assert row["plan"] == str(plan) and "remat layer_input,mlp/up" in row["plan"]
    full = sr.train_plan("tiny", mesh, "zero3", batch_tokens=64 * 1024, seq=1024,
                         fsdp=("X", "Y"))  # remat full keeps less: the tuple is read
    assert d["strategies"][0]["memory_bytes"] > full.memory_total


@pytest.mark.parametrize("price, usd, source", [
    ("1.2", sp.Rational(6, 5), "--price on the command line"),
    ("record", sp.Rational(6, 5), "How to Scale Your Model, ch. 8"),  # the book's v5e $1.20
])
def test_serve_json_with_a_price_and_generated_tokens(price, usd, source):
    d = cli_json("serve --model llama-3.1-70b --mesh tpu-v5e:4x4 --batch 32 --context 8k "
                 f"--weights int8 --kv fp8 --price {price} --generated 256")
    plan = sr.serve("llama-3.1-70b", sr.mesh("tpu-v5e", "4x4"), batch=32, context=8192,
                    weights="int8", kv="fp8")
    assert "price" in d and set(d["price"]) == {"usd_per_chip_hour", "source",
                                                "usd_per_million_tokens"}
    p = d["price"]
    assert close(p["usd_per_chip_hour"], usd) and p["source"].startswith(source)
    # dollars per million tokens: 16 chip-hours' price for the step's lower bound, over the
    # 32 tokens it decodes (book ch. 8), computed here from the plan's time
    assert close(p["usd_per_million_tokens"], usd * 16 * plan.time.lower / 3600 / 32 * 10**6)
    assert close(p["usd_per_million_tokens"], d["lower_s"] * 16 * 1.2 / 3600 / 32 * 10**6)
    # requests a second per chip: the 32 sequences' tokens a second per chip, 256 a request
    assert close(d["requests_per_s_per_chip"], 32 / (plan.time.lower * 16) / 256)
    assert close(d["requests_per_s_per_chip"], plan.requests_per_s_per_chip(256))


def test_critical_batch_json_at_a_shape_is_the_exact_root():
    # b200 (HGX B200 sheet: FP8 9 PFLOPS sparse, 4.5e15 dense; DGX B200: 8e12 B/s a GPU),
    # X[B, 8192] @ W[8192, 28672] with bf16 activations and output, fp8 weights: 2BDF FLOPs
    # over 2BD + DF + 2BF bytes equal to C/W = 4.5e15/8e12 at B = rDF / (2DF - 2r(D + F))
    d = cli_json("critical-batch --chip b200 --dtype fp8 --x-bytes 2 --d 8192 --f 28672")
    r, D, F = sp.Rational(4500 * 10**12, 8000 * 10**9), 8192, 28672
    root = r * D * F / (2 * D * F - 2 * r * (D + F))
    assert (d["D"], d["F"], d["roof"]) == (D, F, "hbm")
    assert d["critical_batch_exact"] == str(root) and close(d["critical_batch"], root)
    assert d["ridge_exact"] == str(r)
