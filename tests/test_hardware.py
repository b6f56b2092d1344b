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

PRESETS = sorted(CHIPS)
C, W, W_net, M = (sp.Symbol(s, positive=True) for s in ("C", "W", "W_net", "M"))


def figures(c: Chip) -> dict:
    return {**{f"peaks.{k}": v for k, v in c.peaks.items()},
            "hbm_bw": c.hbm_bw, "hbm_bytes": c.hbm_bytes, "link_bw": c.link_bw}


def test_the_expected_presets_ship():
    assert set(CHIPS) >= {"h100", "h200", "a100", "b200",
                          "tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e"}


@pytest.mark.parametrize("name", PRESETS)
def test_preset_figures_are_exact_positive_numbers(name):
    c = chip(name)
    assert c.name == name and "bf16" in c.peaks
    for key, value in figures(c).items():
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
    ratio = c.critical_intensity("bf16")
    assert isinstance(ratio, sp.Rational)
    assert 100 <= ratio <= 1000  # FLOP/byte: every chip since V100 sits in the low hundreds


@pytest.mark.parametrize("name", PRESETS)
def test_preset_int8_peak_at_least_bf16(name):
    c = chip(name)
    if "int8" in c.peaks:
        assert c.peak("int8") >= c.peak("bf16")
    if "fp8" in c.peaks:
        # 2x bf16; H100/H200 only to rounding (989e12 vs 1,979 / 2 = 989.5e12)
        assert abs(c.peak("fp8") / c.peak("bf16") - 2) < sp.Rational(1, 500)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_bandwidths_and_capacity_in_range(name):
    c = chip(name)
    assert 1e11 <= c.hbm_bw <= 1e13  # B/s
    assert 1e9 <= c.hbm_bytes <= 1e12  # B
    assert 1e10 <= c.link_bw < c.hbm_bw  # one link, one way: slower than HBM
    assert 1e14 <= c.peak() <= 1e16  # dense bf16 FLOP/s
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
