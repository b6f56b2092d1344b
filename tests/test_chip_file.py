"""JSON chip records: one loader for ``sr.chip(path)`` and the CLI, and warnings for peaks
that cannot all be true."""

import json
import warnings

import pytest

import symroof as sr
from symroof.hardware.chip_file import ChipWarning
from symroof.surfaces.cli import main
from symroof.surfaces.cli_args import load_chip


def _write(tmp_path, record, name="mine.json"):
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


def test_python_and_cli_read_the_same_record():
    c = sr.chip("docs/example-chip.json")
    assert c == load_chip("docs/example-chip.json")
    # docs/example-chip.json: bf16 2e15, fp8 4e15, 6.7e12 B/s
    assert (c.peak("bf16"), c.peak("fp8"), c.hbm_bw) == (2 * 10**15, 4 * 10**15, 67 * 10**11)


def test_b200_base_with_bf16_and_fp8_overridden_warns_naming_the_fields(tmp_path):
    # the case: overriding bf16 and fp8 of b200 keeps its fp16 (2.25e15) and its fp4
    # (9e15, HGX B200 sheet 18 PFLOPS sparse) ends below the new fp8
    path = _write(tmp_path, {"base": "b200", "peaks": {"bf16": [5e15, "guess"],
                                                       "fp8": [1e16, "guess"]}})
    with pytest.warns(ChipWarning) as seen:
        sr.chip(str(path))
    (w,) = seen
    text = str(w.message)
    assert "peaks.fp4 9 PFLOP/s < peaks.fp8 10 PFLOP/s" in text
    assert "peaks.fp16 2.25 PFLOP/s is left over from b200 beside overridden peaks.bf16" in text


def test_a_consistent_record_does_not_warn(tmp_path):
    path = _write(tmp_path, {"base": "h100", "peaks": {"bf16": [1e15, "x"], "fp16": [1e15, "x"],
                                                       "fp8": [2e15, "x"], "int8": [2e15, "x"]}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sr.chip(path).peak("fp8") == 2 * 10**15


@pytest.mark.parametrize("record, words", [
    ({"base": "b200", "peaks": {"bf16": "fast"}}, "peaks.bf16 must be [number"),
    ({"base": 3}, "base must be a preset name"),
    ({"name": "x", "hbm_bw": [1, "s"]}, "needs peaks, hbm_bytes, link_bw"),
    ({"base": "h100", "colour": "red"}, "unknown field(s) colour"),
])
def test_bad_records_fail_in_one_line_naming_the_field(tmp_path, record, words):
    with pytest.raises(ValueError, match=None) as err:
        sr.chip(_write(tmp_path, record))
    assert words in str(err.value) and "mine.json" in str(err.value)
    assert "{" not in str(err.value).split("must be")[0]


def test_cli_prints_the_warning_as_one_line(tmp_path, capsys):
    path = _write(tmp_path, {"base": "b200", "peaks": {"bf16": [5e15, "guess"],
                                                       "fp8": [1e16, "guess"]}})
    assert main(["critical-batch", "--chip", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("symroof: warning: chip file 'mine.json'") and err.count("\n") == 1
