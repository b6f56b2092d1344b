"""Every benchmark runs at its small size (through run_all, once), untimed: the scripts
stay runnable, and each returns the ratios that run_all reports."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"test_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN_ALL = _load("run_all")


@pytest.fixture(scope="module")
def report():
    return RUN_ALL.main("small")


def test_every_benchmark_ran(report):
    assert report["errors"] == {}
    assert set(report["results"]) == set(RUN_ALL.TARGETS)


@pytest.mark.parametrize("name", list(RUN_ALL.TARGETS))
def test_every_reported_ratio_is_a_number(report, name):
    result = report["results"][name]
    assert result["size"] == "small"
    for _label, key, _test, _target in RUN_ALL.TARGETS[name]:
        if result[key] is None:  # a peer that is not installed; the result says so
            assert "not installed" in result["skipped"]
            continue
        assert isinstance(result[key], float) and math.isfinite(result[key]) and result[key] > 0


def test_summary_lists_every_target(report):
    labels = [row["label"] for row in report["summary"]]
    assert labels == [t[0] for targets in RUN_ALL.TARGETS.values() for t in targets]


def test_results_agree_where_they_can(report):
    sweep = report["results"]["sweep"]
    assert sweep["points"] == 900 and sweep["subs_extrapolated_s"] > sweep["symroof_s"]
    derivations = _load("derivations_time")
    assert all(p.suffix == ".py" and not p.name.startswith("_") for p in derivations.scripts())
    # the one real `python derivations/01_rooflines.py` of the suite: it exits 0
    assert report["results"]["derivations_time"]["failed"] == {}
    assert report["results"]["per_config"]["configs"] == 40


@pytest.mark.parametrize("name", [*RUN_ALL.TARGETS, "run_all"])
def test_sizes_are_checked(name):
    module = RUN_ALL if name == "run_all" else _load(name)
    with pytest.raises(ValueError, match="size must be"):
        module.main("huge")
