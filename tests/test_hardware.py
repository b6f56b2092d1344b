"""Hardware records: every preset loads, and its *derived ratios* are plausible.

Kerncraft's unit table once had 'T': 1e13 and no test caught it, because the tests only
loaded the records. Here every preset is checked through what is computed from it.
"""

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from symroof.hardware import CHIPS, Chip, chip, symbolic_chip

PRESETS = sorted(n for n in CHIPS if "/" not in n)  # the datasheets' records
PEERS = sorted(n for n in CHIPS if "/" in n)  # a peer calculator's presets ("llm-viewer/...")
C, W, W_net, M = (sp.Symbol(s, positive=True) for s in ("C", "W", "W_net", "M"))
#: the figures of each kind of network record that carry a source (written out here, not
#: imported, so a field added to topology.py without a source fails this test)
NETWORK_FIELDS = {"torus": ("rank", "pod", "host", "wrap_rule", "hop_latency", "pcie_bw",
                            "dcn_bw", "slices"),
                  "switched": ("nvlink_ports", "levels", "sharp", "hop_latency", "net_latency",
                               "tree_latency", "net_overhead", "ring_base_latency",
                               "tree_base_latency", "pcie_bw")}
NO_BF16 = {"v100"}  # Volta's tensor cores run fp16, not bf16
TPUS = sorted(n for n in PRESETS if n.startswith("tpu-"))
GPUS = sorted(n for n in PRESETS if not n.startswith("tpu-"))


def figures(c: Chip) -> dict:
    net = {} if c.network is None else {
        f"network.{k}": getattr(c.network, k) for k in NETWORK_FIELDS[c.network.kind]}
    inside = {f"internals.{k}": v for k, v in c.internals.items()}
    return {**{f"peaks.{k}": v for k, v in c.peaks.items()},
            "hbm_bw": c.hbm_bw, "hbm_bytes": c.hbm_bytes, "link_bw": c.link_bw, **net, **inside}


def headline(c: Chip) -> str:
    """The dtype a chip's matmul roofline is quoted in: bf16, or fp16 where there is no bf16."""
    return "bf16" if "bf16" in c.peaks else "fp16"


def test_the_expected_presets_ship():
    assert set(CHIPS) >= {"v100", "a100", "h100", "h200", "h800", "b200", "gb200",
                          "tpu-v3", "tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e"}


@pytest.mark.parametrize("name", PRESETS)
def test_preset_figures_are_exact_positive_numbers(name):
    c = chip(name)
    assert c.name == name and ("bf16" in c.peaks) == (name not in NO_BF16)
    scalars = {k: v for k, v in figures(c).items() if isinstance(v, sp.Basic)}
    assert set(scalars) >= {"hbm_bw", "hbm_bytes", "link_bw", "network.hop_latency",
                            "network.pcie_bw"}
    for key, value in scalars.items():
        assert isinstance(value, (sp.Integer, sp.Rational)), key
        assert value > 0, key


@pytest.mark.parametrize("name", PRESETS)
def test_preset_every_figure_has_a_url_source(name):
    sources = chip(name).sources
    assert set(sources) == set(figures(chip(name)))
    for key, note in sources.items():
        assert "https://" in note, f"{name} {key}: {note!r}"


@pytest.mark.parametrize("name", PRESETS)
def test_preset_critical_intensity_is_plausible(name):
    c = chip(name)
    ratio = c.critical_intensity(headline(c))
    assert isinstance(ratio, sp.Rational)
    # FLOP/byte: every chip since V100 sits in the low hundreds; the 2017 TPU v2 at 64
    assert (50 if name == "tpu-v2" else 100) <= ratio <= 1000


@pytest.mark.parametrize("name", PRESETS)
def test_preset_int8_peak_at_least_bf16(name):
    c = chip(name)
    if name in NO_BF16:
        assert set(c.peaks) == {"fp16", "fp32"}
        return
    if "int8" in c.peaks:
        assert c.peak("int8") >= c.peak("bf16")
    if "fp8" in c.peaks:
        # 2x bf16; H100/H200 only to rounding (989e12 vs 1,979 / 2 = 989.5e12)
        assert abs(c.peak("fp8") / c.peak("bf16") - 2) < sp.Rational(1, 500)
    if "fp4" in c.peaks:
        assert c.peak("fp4") == 2 * c.peak("fp8") == 4 * c.peak("bf16")  # Blackwell


@pytest.mark.parametrize("name", PRESETS)
def test_preset_bandwidths_and_capacity_in_range(name):
    c = chip(name)
    assert 1e11 <= c.hbm_bw <= 1e13  # B/s
    assert 1e9 <= c.hbm_bytes <= 1e12  # B
    assert 1e10 <= c.link_bw < c.hbm_bw  # one link, one way: slower than HBM
    assert 4e13 <= c.peak(headline(c)) <= 1e16  # dense bf16 (V100: fp16) FLOP/s; v2: 4.5e13
    # time to stream all of HBM once: milliseconds, not seconds or microseconds
    assert 1e-3 <= c.hbm_bytes / c.hbm_bw <= 1e-1


# (chip, figure, value printed in the seeds / design.md)
SEED_FIGURES = [
    ("h100", "peaks.bf16", 989e12),
    ("h100", "hbm_bw", 3.35e12),
    ("tpu-v5e", "peaks.bf16", 1.97e14),
    ("tpu-v5e", "peaks.int8", 3.94e14),
    ("tpu-v5e", "hbm_bw", 8.2e11),
    ("tpu-v5e", "link_bw", 4.5e10),
    ("tpu-v6e", "peaks.bf16", 9.1e14),
    ("tpu-v6e", "hbm_bw", 1.6e12),
]


@pytest.mark.parametrize("name, key, value", SEED_FIGURES)
def test_preset_matches_the_seed(name, key, value):
    assert figures(chip(name))[key] == sp.Rational(str(value))


def test_tpu_v5e_critical_intensity_is_the_books_240():
    ratio = chip("tpu-v5e").critical_intensity()
    assert ratio == sp.Rational(9850, 41)  # 1.97e14 / 8.2e11
    assert float(ratio) == pytest.approx(240.24, abs=0.01)


def test_tpu_v5e_network_threshold_is_the_books_4377():
    # seed: 1.97e14 / 4.5e10 = 4377, so a 2-chip matmul is compute-bound for D > 8755
    ratio = chip("tpu-v5e").peak() / chip("tpu-v5e").link_bw
    assert math.floor(ratio) == 4377 and math.floor(2 * ratio) == 8755


def test_h100_critical_intensity():
    assert float(chip("h100").critical_intensity()) == pytest.approx(295.2, abs=0.05)
    assert chip("h100").critical_intensity() == sp.Rational(989, 3350) * 1000


def test_h100_with_the_sheets_halved_sparse_peak_is_problem_5():
    h100 = chip("h100").replace(peaks={"bf16": 1979e12 / 2}, note="sheet's 1,979 / 2")
    assert h100.peak() == 989_500_000_000_000
    assert float(h100.critical_intensity()) == pytest.approx(295.4, abs=0.05)
    assert h100.sources["peaks.bf16"] == "sheet's 1,979 / 2"
    assert h100.peak("fp8") == chip("h100").peak("fp8")  # merged, not replaced


def test_books_problem_1_int8_threshold():
    v5e = chip("tpu-v5e").replace(hbm_bw=8.1e11, note="book's problem 1 assumes 8.1e11 B/s")
    assert v5e.hbm_bw == sp.Integer(810_000_000_000) and isinstance(v5e.hbm_bw, sp.Integer)
    assert math.floor(v5e.critical_intensity("int8")) == 486  # so B > 486 / 2 = 243
    assert v5e.sources["hbm_bw"] == "book's problem 1 assumes 8.1e11 B/s"


def test_replace_leaves_the_original_unchanged():
    before = chip("tpu-v5e")
    snapshot = (dict(before.peaks), before.hbm_bw, dict(before.sources))
    after = before.replace(hbm_bw=1e12, peaks={"fp8": 4e14})
    assert (dict(before.peaks), before.hbm_bw, dict(before.sources)) == snapshot
    assert chip("tpu-v5e") is before and "fp8" not in before.peaks
    assert after.sources["hbm_bw"] == after.sources["peaks.fp8"] == "user assumption"
    assert after.sources["link_bw"] == before.sources["link_bw"]


def test_records_are_immutable_and_hashable():
    c = chip("h100")
    with pytest.raises(AttributeError):
        c.hbm_bw = 1
    with pytest.raises(TypeError):
        c.peaks["bf16"] = 1
    assert c == c.replace() and hash(c) == hash(c.replace())
    assert c != c.replace(hbm_bw=4e12)


def test_symbolic_chip_thresholds_are_symbols():
    s = symbolic_chip()
    assert s.critical_intensity() == C / W
    assert s.peak() / s.link_bw == C / W_net
    assert s.hbm_bytes == M
    custom = symbolic_chip("gpu", C="C_gpu", W=sp.Integer(3))
    assert custom.critical_intensity() == sp.Symbol("C_gpu", positive=True) / 3


@pytest.mark.parametrize("value, exact", [
    (8.1e11, sp.Integer(810_000_000_000)),
    (1979e12 / 2, sp.Integer(989_500_000_000_000)),
    (np.float64(3.35e12), sp.Integer(3_350_000_000_000)),
    (np.int64(7), sp.Integer(7)),
    (Fraction(1, 3), sp.Rational(1, 3)),
    (Decimal("2.5"), sp.Rational(5, 2)),
    (sp.Float(8.2e11), sp.Integer(820_000_000_000)),
])
def test_chip_from_scratch_converts_figures_exactly(value, exact):
    c = Chip("toy", peaks={"BF16": value}, hbm_bw=value, hbm_bytes=64e9, link_bw=1e11)
    assert c.peak("bf16") == exact and c.hbm_bw == exact and c.critical_intensity() == 1
    assert c.sources["hbm_bytes"] == "user assumption"


def test_unknown_chip_lists_the_known_names():
    with pytest.raises(ValueError, match="'tpu-v9'") as err:
        chip("tpu-v9")
    assert all(name in str(err.value) for name in CHIPS)


def test_lookup_is_case_insensitive():
    assert chip("H100") is chip("h100") is chip(" h100 ")
    assert chip("TPU_V5E") is chip("tpu-v5e")


def test_unknown_dtype_names_it_and_the_known_ones():
    with pytest.raises(ValueError, match=r"'fp4'.*known dtypes: bf16, int8"):
        chip("tpu-v5e").peak("fp4")
    with pytest.raises(ValueError, match="'fp4'"):
        chip("a100").critical_intensity("fp4")


@pytest.mark.parametrize("field, bad", [
    ("hbm_bw", 0), ("hbm_bw", -3.35e12), ("link_bw", "4.5e10"), ("hbm_bytes", None),
    ("hbm_bw", float("nan")), ("hbm_bw", float("inf")), ("link_bw", True),
    ("hbm_bw", sp.Symbol("W")), ("hbm_bw", -sp.Symbol("W", positive=True)),
    ("hbm_bw", [1e12]),
])
def test_bad_figures_are_rejected_naming_field_and_value(field, bad):
    good = dict(peaks={"bf16": 1e15}, hbm_bw=1e12, hbm_bytes=1e10, link_bw=1e10)
    with pytest.raises(ValueError, match=field) as err:
        Chip("toy", **{**good, field: bad})
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize("bad", [{"bf16": 0}, {"bf16": "fast"}, {}, {"": 1e15}, [1e15]])
def test_bad_peaks_are_rejected(bad):
    with pytest.raises(ValueError, match="peak"):
        Chip("toy", peaks=bad, hbm_bw=1e12, hbm_bytes=1e10, link_bw=1e10)


def test_bad_replace_and_sources_are_rejected():
    with pytest.raises(ValueError, match="hbm_bandwidth"):
        chip("h100").replace(hbm_bandwidth=1e12)
    with pytest.raises(ValueError, match="peaks"):
        chip("h100").replace(peaks={"bf16": -1})
    with pytest.raises(ValueError, match="peaks.fp9"):
        Chip("toy", {"bf16": 1}, 1, 1, 1, sources={"peaks.fp9": "typo"})


# -- networks: the book's figures (ch2 'TPU Specs' / 'TPU Networking', ch12 NVLink and
# -- node-egress tables), pinned as the book prints them ------------------------------------
G, T = 10**9, 10**12

# (chip, ICI one-way B/s per link, bidi per axis, torus rank, pod, host in chips, pod chips)
TPU_BOOK = [
    ("tpu-v3", 1e11, 2e11, 2, (32, 32), (2, 2), 1024),  # book's host "4x2" counts 8 cores
    ("tpu-v4p", 4.5e10, 9e10, 3, (16, 16, 16), (2, 2, 1), 4096),
    ("tpu-v5p", 9e10, 1.8e11, 3, (16, 20, 28), (2, 2, 1), 8960),
    ("tpu-v5e", 4.5e10, 9e10, 2, (16, 16), (4, 2), 256),
    ("tpu-v6e", 9e10, 1.8e11, 2, (16, 16), (4, 2), 256),
]


def test_every_tpu_and_gpu_has_its_kind_of_network():
    assert {n for n in TPUS if chip(n).network.kind == "torus"} == set(TPUS)
    assert {n for n in GPUS if chip(n).network.kind == "switched"} == set(GPUS)
    assert {n for n, _, _, _, _, _, _ in TPU_BOOK} == set(TPUS) - {"tpu-v2"}  # not in the book


@pytest.mark.parametrize("name, one_way, bidi, rank, pod, host, chips", TPU_BOOK)
def test_tpu_network_is_the_books(name, one_way, bidi, rank, pod, host, chips):
    c = chip(name)
    net = c.network
    assert c.link_bw == sp.Rational(str(one_way))
    assert net.links_per_axis * c.link_bw == sp.Rational(str(bidi))  # both neighbours
    assert (net.rank, net.pod, net.host) == (rank, pod, host)
    assert net.pod_chips == math.prod(pod) == chips
    assert net.hop_latency == sp.Rational(1, 10**6)  # ch3: T_min ~ 1 us per hop
    assert net.wrap_rule == ("cube" if rank == 3 else "full")


def test_tpu_host_sizes_and_dcn():
    # hosts = chips / host size: 4 chips per v4p/v5p/v3 host, 8 per v5e/v6e host
    assert [math.prod(chip(n).network.host) for n in TPUS] == [4, 4, 4, 8, 4, 8]  # v2 first
    dcn = {n: chip(n).network.dcn_bw for n in TPUS}
    assert dcn["tpu-v5e"] == 3125 * 10**6 and dcn["tpu-v6e"] == 125 * 10**8
    assert dcn["tpu-v5p"] == 200 * G // 8 // 4  # ch5: 200 Gb/s per 4-chip v5p host
    assert chip("tpu-v6e").network.pcie_bw == 32 * G and chip("tpu-v5e").network.pcie_bw == 16 * G


@pytest.mark.parametrize("name, shape, wraps", [
    ("tpu-v5e", (8, 16), (False, True)),  # wraps only on the axis spanning the 16-chip side
    ("tpu-v5e", (4, 4), (False, False)),
    ("tpu-v5e", (16, 16), (True, True)),
    ("tpu-v6e", (16, 8), (True, False)),
    ("tpu-v3", (32, 32), (True, True)),
    ("tpu-v3", (16, 32), (False, True)),
    ("tpu-v5p", (4, 4, 8), (True, True, True)),  # whole 4x4x4 cubes
    ("tpu-v5p", (2, 2, 4), (False, False, False)),  # smaller than a cube: no wraparound
    ("tpu-v5p", (16, 20, 28), (True, True, True)),  # the whole superpod
    ("tpu-v4p", (4, 4, 4), (True, True, True)),
    ("tpu-v4p", (2, 2, 1), (False, False, False)),
])
def test_wraparound_examples_of_the_book(name, shape, wraps):
    assert chip(name).network.wraps(shape) == wraps


# (chip, NVLink ports, W_GPU one way, node size, node egress one way or None)
GPU_BOOK = [
    ("v100", 6, 150 * G, 16, None),  # DGX-2; no sourced level above it
    ("a100", 12, 300 * G, 8, 8 * 200 * G // 8),  # 8 x 200 Gb/s HDR
    ("h100", 18, 450 * G, 8, 400 * G),  # 8 x 400 Gb/s ConnectX-7
    ("h200", 18, 450 * G, 8, 400 * G),
    ("h800", 8, 300 * G, 8, 400 * G),  # the book's 300 GB/s, see below
    ("b200", 18, 900 * G, 8, 400 * G),
    ("gb200", 18, 900 * G, 72, 4 * 18 * 400 * G // 8),  # 3.6e12 = 9x H100
]


@pytest.mark.parametrize("name, ports, w_gpu, node, egress", GPU_BOOK)
def test_gpu_network_is_the_books(name, ports, w_gpu, node, egress):
    c = chip(name)
    net = c.network
    assert net.nvlink_ports == ports and net.node_size == node
    assert net.levels[0].name == "node" and net.levels[0].bw_per_gpu == w_gpu
    assert net.hop_latency == sp.Rational(6, 10**7)  # NCCL hwLatencies[NVLINK][Ring][LL]
    if egress is None:
        with pytest.raises(ValueError, match="no scale-out level"):
            _ = net.node_egress
    else:
        assert net.node_egress == egress
        assert all(lv.bw_per_gpu == sp.Rational(egress, node) for lv in net.levels[1:])
    if name != "h800":  # W_GPU is the sum of the ports, one way
        assert ports * c.link_bw == w_gpu


def test_gpu_network_literals():
    assert [chip(n).network.levels[0].bw_per_gpu for n in ("a100", "h100", "b200")] == \
        [300 * G, 450 * G, 900 * G]
    assert chip("h100").network.node_egress == chip("b200").network.node_egress == 400 * G
    assert chip("gb200").network.node_egress == 3600 * G == 9 * chip("h100").network.node_egress
    assert [lv.bw_per_gpu for lv in chip("h100").network.levels] == [450 * G] + [50 * G] * 3
    # book ch. 12 Quiz 2 Q1-Q2: 4 NVSwitches of 64 ports x 25e9 = 6.4 TB/s, but the GPUs only
    # push 8 x 450e9 = 3.6e12, which is also the node's bisection bandwidth
    h100 = chip("h100").network
    assert h100.node_bisection == 3600 * G < chip("h100").internals["nvswitch_bw"]


def test_h100_superpod_is_8_x_32_x_4_under_a_core():
    net = chip("h100").network
    assert [(lv.name, lv.degree) for lv in net.levels] == [("node", 8), ("leaf", 32),
                                                          ("spine", 4), ("core", 64)]
    # node, scalable unit, SuperPod (book ch. 12), then 64 SuperPods: a 3-tier fat tree of
    # 64-port switches has 64^3 / 4 = 65,536 end ports (Al-Fares et al. 2008)
    assert [lv.gpus for lv in net.levels] == [8, 256, 1024, 64**3 // 4]
    assert net.max_gpus == 65536 and net.sharp
    assert [lv.degree for lv in chip("b200").network.levels] == [8, 32, 4, 64]  # DGX B200 RA
    # SHARP per level: NVLink SHARP in the node (Hopper on), SHARP IB switches above it
    assert [net.sharp_at(i) for i in range(4)] == [True] * 4
    assert [chip("a100").network.sharp_at(i) for i in range(2)] == [False, False]


def test_h800_records_the_books_nvlink_and_the_sheets_links():
    h800, h100 = chip("h800"), chip("h100")
    assert h800.peaks == h100.peaks and h800.hbm_bw == h100.hbm_bw  # H100 SXM compute
    assert h800.network.levels[0].bw_per_gpu == 300 * G  # the book's W_GPU
    assert 2 * h800.network.nvlink_ports * h800.link_bw == 400 * G  # sheet: 400 GB/s bidi
    assert "400 GB/s" in h800.sources["network.levels"]


def test_sharp_only_from_hopper_on():
    assert {n: chip(n).network.sharp for n in GPUS} == {
        "v100": False, "a100": False, "h100": True, "h200": True, "h800": True,
        "b200": True, "gb200": True}


@pytest.mark.parametrize("name", PRESETS)
def test_every_network_figure_has_a_url_source(name):
    c = chip(name)
    keys = {f"network.{k}" for k in NETWORK_FIELDS[c.network.kind]}
    assert keys <= set(c.sources)
    for key in keys:
        assert "https://" in c.sources[key], f"{name} {key}"


# -- derived ratios (kerncraft's lesson): alpha = C / W for each network ---------------------
@pytest.mark.parametrize("name", TPUS)
def test_tpu_network_ratios_are_plausible(name):
    c = chip(name)
    C_, net = c.peak(), c.network
    alpha_ici = C_ / (net.links_per_axis * c.link_bw)  # bidi per axis
    assert 300 <= alpha_ici <= 10_000  # v5e: 1.97e14 / 9e10 = 2189; v2: 4.5e13 / 1.25e11 = 360
    assert 5_000 <= C_ / net.dcn_bw <= 100_000  # DCN is 10-50x slower than ICI; v2: 7200
    assert 2 <= c.hbm_bw / (net.links_per_axis * c.link_bw) <= 50  # beta = W_hbm / W_ici
    assert net.pcie_bw < net.links_per_axis * c.link_bw


def test_tpu_v5e_ici_ratio_is_the_books():
    v5e = chip("tpu-v5e")
    assert v5e.peak() / (2 * v5e.link_bw) == sp.Rational(197e12) / sp.Rational(9e10)


@pytest.mark.parametrize("name", GPUS)
def test_gpu_network_ratios_are_plausible(name):
    c = chip(name)
    C_, net = c.peak(headline(c)), c.network
    alpha_gpu = C_ / net.levels[0].bw_per_gpu
    assert 500 <= alpha_gpu <= 5_000  # H100: 989e12 / 450e9 = 2198
    assert net.pcie_bw < net.levels[0].bw_per_gpu  # NVLink beats the host link
    if len(net.levels) > 1:
        alpha_node = C_ / net.node_egress
        assert 500 <= alpha_node <= 10_000  # H100: 989e12 / 400e9 = 2473 (ch12)
        assert net.node_egress < net.node_size * net.levels[0].bw_per_gpu


def test_gpu_ratios_of_ch12():
    h100, b200, gb200 = chip("h100"), chip("b200"), chip("gb200")
    assert h100.peak() / h100.network.levels[0].bw_per_gpu == sp.Rational(989e12, 450e9)
    assert h100.peak() / h100.network.node_egress == sp.Rational(989e12, 400e9)
    # B200 doubles W_GPU, keeps W_node: cross-node alpha grows with C (2.3x)
    assert b200.network.node_egress == h100.network.node_egress
    assert b200.network.levels[0].bw_per_gpu == 2 * h100.network.levels[0].bw_per_gpu
    assert gb200.peak() / gb200.network.node_egress < h100.peak() / h100.network.node_egress


# -- the chips the book tabulates, with its figures -------------------------------------------
def test_tpu_v3_is_the_books_per_chip_record():
    v3 = chip("tpu-v3")
    assert (v3.peak(), v3.peak("int8"), v3.hbm_bw, v3.hbm_bytes) == (140 * T, 140 * T, 900 * G,
                                                                     32 * G)
    assert "TensorCore" in v3.sources["hbm_bytes"] and "4x2" in v3.sources["network.host"]


def test_v100_has_no_bf16_and_says_so():
    v100 = chip("v100")
    assert (v100.hbm_bw, v100.peak("fp16"), v100.link_bw) == (900 * G, 125 * T, 25 * G)
    assert v100.critical_intensity("fp16") == sp.Rational(1250, 9)
    with pytest.raises(ValueError, match=r"'v100' has no peak for dtype 'bf16'.*fp16, fp32"):
        v100.peak()
    with pytest.raises(ValueError, match="'bf16'"):
        v100.critical_intensity()


def test_blackwell_fp4_and_gb200():
    assert chip("b200").peak("fp4") == 9000 * T  # book 9.0e15; HGX sheet: 18 PFLOPS sparse
    gb200 = chip("gb200")  # NVL72 sheet: 360 / 1,440 PFLOPS sparse for 72 GPUs
    assert gb200.peak() == 360_000 * T // 72 // 2 and gb200.peak("fp4") == 10_000 * T
    assert (gb200.hbm_bw, gb200.hbm_bytes) == (8000 * G, 186 * G)
    assert gb200.network.levels[0].bw_per_gpu == 18 * gb200.link_bw == 900 * G


def test_a_gpus_link_bw_reaches_its_collectives():
    # An H100 node's AllGather moves V (N - 1)/N through W_GPU = 18 NVLink-4 links x 25e9 B/s
    # (NVIDIA H100 sheet: 900 GB/s bidirectional over 18 links); a link of 1e9 B/s makes W_GPU
    # 18e9, and the same AllGather 25 times slower, as a point-to-point send already was
    import symroof as sr

    V = 10**9
    slow = chip("h100").replace(link_bw=10**9, note="what if")
    for c, w_gpu in ((chip("h100"), 18 * 25 * 10**9), (slow, 18 * 10**9)):
        node = sr.mesh(c, {"X": 8})
        assert sr.all_gather(node, V, "X").t_bw == sp.Rational(V * 7, 8 * w_gpu)
    assert "node level scaled with link_bw (what if)" in slow.sources["network.levels"]


def test_errors_list_names_as_written_not_python_reprs():
    import symroof as sr

    mesh = sr.mesh("tpu-v5e", "4x4")
    cases = (
        (lambda: sr.all_gather(mesh, 10**6, ("X", "X")), "mesh axes X, X name an axis twice"),
        (lambda: chip("h100").replace(hbm=1), "unknown field(s) hbm; fields are name, peaks"),
        (lambda: Chip("toy", peaks={"bf16": 1e15}, hbm_bw=1e12, hbm_bytes=1e10, link_bw=1e10,
                      sources={"hbm": "x"}), "sources name no figure: hbm; figures are peaks"),
        (lambda: sr.shard_matmul(mesh, "X[B, D_X] @ W[D_X, F] -> [B, F]", Q=4),
         "sizes given for Q, which"),
    )
    for make, words in cases:
        with pytest.raises(ValueError) as err:
            make()
        assert words in str(err.value) and "['" not in str(err.value) \
            and "('" not in str(err.value), str(err.value)


def test_a_preset_name_is_the_preset_even_beside_a_file_of_that_name(tmp_path, monkeypatch):
    # a file called "h100" in the working folder (any text) must not shadow the preset
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h100").write_text("notes, not a chip record")
    assert chip("h100") is CHIPS["h100"]
