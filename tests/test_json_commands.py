"""Every ``--format json`` command: strict JSON, the top-level fields docs/cli.md's "JSON
fields" table names (no more, no fewer), seconds and bytes in SI units; and, for the
commands tests/test_json_fields.py does not cover (compare, conventions, check), each field
cross-checked against the same quantity from the Python API."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

import symroof as sr
from symroof.conventions import FIELDS, PROFILES, profile
from symroof.surfaces.cli import build_parser, main

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
#: the documented row -> a command line that shows it
EXAMPLES = {
    "chips": "chips h100 tpu-v5e",
    "models": "models tiny mixtral-8x7b",
    "critical-batch": "critical-batch --chip h100",
    "report": "report --model tiny --chip h100 --phase decode --batch 1 --context 16",
    "train": "train --model tiny --mesh tpu-v5e:2x2 --batch 64k --seq 1024",
    "serve": "serve --model tiny --mesh tpu-v5e:2x2 --batch 4 --context 1k",
    "solve": "solve t_math=t_mem --for batch --model tiny --chip h100 --context 128",
    "compare": "compare --chips h100,tpu-v5e --model tiny --phase decode --batch 8 "
               "--context 1024",
    "conventions": "conventions",
    "conventions NAME": "conventions book",
    "conventions --diff A,B": "conventions --diff symroof,book --model tiny --chip h100 "
                              "--phase decode --batch 1 --context 16",
    "check": "check --model tiny --batch 2 --new-tokens 3",
}
PER_ENTRY = {"chips", "models"}  # one object per chip or model, keyed by its name
WHOLE_BYTES = {"memory_bytes", "net_bytes", "bytes_needed", "hbm_bytes"}  # counts, not widths


def documented() -> dict[str, set[str]]:
    """docs/cli.md's "JSON fields" table: command -> its fields (the backticked names)."""
    text = DOCS.read_text(encoding="utf-8").split("## JSON fields", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in text.splitlines():
        m = re.match(r"\| `([^`]+)` \| (.+) \|$", line)
        if m:  # a field is a backticked name not in parentheses (those are examples or units)
            fields = re.sub(r"\([^)]*\)", "", m.group(2))
            out[m.group(1)] = set(re.findall(r"`([^`]+)`", fields))
    return out


def cli_json(line: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*line.split(), "--format", "json"]) == 0, line

    def refuse(token: str):
        raise AssertionError(f"{line}: {token} is not JSON")
    return json.loads(out.getvalue(), parse_constant=refuse)


def _walk(value, key=""):
    yield key, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)


def test_the_table_names_every_json_command():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    with_json = {name for name, sub in commands.items()
                 if any("json" in (a.choices or ()) for a in sub._actions
                        if "--format" in a.option_strings)}
    rows = documented()
    assert {row.split()[0] for row in rows} == with_json
    assert set(rows) == set(EXAMPLES)


@pytest.mark.parametrize("row", list(EXAMPLES))
def test_json_has_the_documented_fields_in_si_units(row):
    d, expected = cli_json(EXAMPLES[row]), documented()[row]
    if row == "conventions NAME":  # "every field of the profile"
        expected = (expected - {"every field of the profile"}) | set(FIELDS)
    entries = list(d.values()) if row in PER_ENTRY else [d]
    for entry in entries:
        assert set(entry) == expected, row
    for key, value in _walk(d):
        if key.endswith("_s") and not isinstance(value, (dict, list)):
            assert value is None or (isinstance(value, (int, float)) and value >= 0), (key, value)
        if key in WHOLE_BYTES and isinstance(value, float):
            assert not value.is_integer(), f"{row}: {key} = {value} is a whole count as a float"


def test_compare_json_is_sr_compare():
    d = cli_json(EXAMPLES["compare"])
    t = sr.compare("decode", "chips", ["h100", "tpu-v5e"], model="tiny", batch=8,
                   context=1024)
    assert d == json.loads(json.dumps(t.as_dict()))
    step = sr.roofline_table(sr.model("tiny"), "h100", batch=8, new_tokens=1, cached=1023)
    row = d["rows"]["h100"]
    assert row["lower"] == pytest.approx(float(step.bounds[0]), rel=1e-12)  # seconds
    assert row["per_op_sum"] == pytest.approx(float(step.per_op_sum), rel=1e-12)
    assert {k: c["unit"] for k, c in d["columns"].items()} == {
        "t_math": "s", "t_mem": "s", "lower": "s", "upper": "s", "bound": "",
        "per_op_sum": "s"}


def test_conventions_json_is_the_records():
    listing = cli_json("conventions")
    assert listing["profiles"] == {n: p.as_dict() for n, p in PROFILES.items()}
    assert {f: tuple(v["allowed"]) for f, v in listing["fields"].items()} == {
        f: spec[0] for f, spec in FIELDS.items()}
    shown = cli_json("conventions llm-analysis")
    assert shown == {**profile("llm-analysis").as_dict(), "doc": shown["doc"]}
    assert "analysis.py at d841e40" in shown["doc"]
    diff = cli_json(EXAMPLES["conventions --diff A,B"])
    d = sr.compare_conventions(sr.model("tiny"), "h100", 1, 1, 15, "symroof", "book")
    assert diff["explained"] is d.explained
    assert set(diff["fields"]) == set(profile("symroof").differences(profile("book")))
    for name, row in d.rows.items():
        assert diff["rows"][name]["fields"] == row.fields()
        assert diff["rows"][name]["b"]["flops"] == row.b.flops  # FLOPs, exact integers


def test_check_json_is_the_check_report():
    d = cli_json(EXAMPLES["check"])
    report = sr.check(sr.model("tiny"), batch=2, new_tokens=3, cached=0)
    assert d["ok"] is True and d["mismatches"] == []
    assert set(d["counted"]) == set(d["symbolic"]) == set(report.counted)
    for name, counted in report.counted.items():
        assert d["counted"][name] == counted  # FLOPs and bytes: exact integers
        assert all(type(v) is int for v in counted.values())
        assert d["symbolic"][name] == report.symbolic[name]
