"""The command line's fast path, checked by what it does rather than by a clock: the report
command loads neither NumPy, matplotlib nor the twin, and a compiled table comes back from
its disk cache unchanged (and is rebuilt where the cache is absent, unreadable or stale)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import symroof as sr
from symroof import cache
from symroof.models import compiled, sanity

ROOT = Path(__file__).resolve().parents[1]
REPORT = ["report", "--model", "llama-3.1-8b", "--chip", "h100", "--phase", "decode",
          "--batch", "64", "--context", "2048"]


def test_report_loads_only_what_it_needs(tmp_path):
    probe = ("import sys; from symroof.surfaces.cli import main; rc = main(sys.argv[1:]); "
             "heavy = [m for m in ('numpy', 'matplotlib', 'symroof.numeric.model', "
             "'symroof.parallel.search', 'symroof.parallel.strategies', 'symroof.plots', "
             "'symroof.surfaces.cli_train', 'symroof.surfaces.notes') if m in sys.modules]; "
             "print(rc, heavy, file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SYMROOF_CACHE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe, *REPORT], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr
    assert "9.84 ms" in done.stdout  # the per-op sum (the README's step_time example's too)


def test_help_and_mistakes_still_list_every_command(capsys):
    from symroof.surfaces.cli import build_parser, main

    for first in (None, "--help", "reprot", "train"):
        names = set(build_parser(only=first)._subparsers._group_actions[0].choices)
        assert {"report", "train", "serve", "solve"} <= names or first == "train", first
    with pytest.raises(SystemExit) as stopped:
        main(["reprot"])
    assert stopped.value.code == 2 and "'reprot' (choose from 'chips', 'models', " \
        "'critical-batch', 'report', 'train', 'serve', 'solve'" in capsys.readouterr().err


def _fresh(monkeypatch, folder):
    monkeypatch.setenv("SYMROOF_CACHE", str(folder))
    return compiled.compiled_table.__wrapped__  # past the in-process cache, to the disk


def test_a_cached_table_comes_back_unchanged(monkeypatch, tmp_path):
    build = _fresh(monkeypatch, tmp_path)
    tiny, h100 = sr.model("tiny"), sr.chip("h100")
    first = build(tiny, h100)
    [kept] = tmp_path.glob("table-*.json")
    monkeypatch.setattr(compiled, "_source", lambda *a: pytest.fail("rebuilt, not loaded"))
    again = build(tiny, h100)
    assert again.source == first.source and again.names == first.names
    assert again(2, 1, 8) == first(2, 1, 8)
    assert json.loads(kept.read_text())["value"][1] == first.source


def test_every_input_is_in_the_key(monkeypatch, tmp_path):
    build = _fresh(monkeypatch, tmp_path)
    tiny, h100 = sr.model("tiny"), sr.chip("h100")
    build(tiny, h100)
    build(tiny.replace(w_bytes=1), h100)       # another model
    build(tiny, sr.chip("b200"))               # another chip
    build(tiny, h100, "bf16", "naive")         # another option
    assert len(list(tmp_path.glob("table-*.json"))) == 4
    before = set(tmp_path.glob("*"))
    monkeypatch.setattr(cache, "_code_hash", lambda: "another symroof")  # edited formulas
    build(tiny, h100)
    assert len(set(tmp_path.glob("*")) - before) == 1


def test_the_solved_crossovers_are_kept_too(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMROOF_CACHE", str(tmp_path))
    m = sr.model("llama-3.1-8b")
    ctx = sanity._solved.__wrapped__("ctx*", m)
    assert ctx == 28628  # the README's ctx* of Llama-3.1-8B
    windowed = sr.model("mistral-7b")  # a window caps attention: no root, kept as None
    assert sanity._solved.__wrapped__("ctx*", windowed) is None
    monkeypatch.setattr(sanity, "ctx_star", lambda model: pytest.fail("solved again"))
    assert sanity._solved.__wrapped__("ctx*", m) == ctx
    assert sanity._solved.__wrapped__("ctx*", windowed) is None


def test_a_broken_or_unwritable_cache_only_means_building_again(monkeypatch, tmp_path):
    build = _fresh(monkeypatch, tmp_path)
    tiny, h100 = sr.model("tiny"), sr.chip("h100")
    good = build(tiny, h100)
    [kept] = tmp_path.glob("table-*.json")
    kept.write_text("{not json")
    assert build(tiny, h100).source == good.source
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("SYMROOF_CACHE", str(blocked / "below"))  # cannot be made
    assert build(tiny, h100).source == good.source
    monkeypatch.setenv("SYMROOF_CACHE", "off")
    assert cache.cache_dir() is None and build(tiny, h100).source == good.source


def test_a_latex_failure_still_exits_1_with_one_line(monkeypatch, capsys, tmp_path):
    """The notes module loads with the commands that compile LaTeX, not with every command;
    pdflatex failing in one of them is still one line and exit status 1 (a ValueError 2)."""
    from symroof.surfaces import notes
    from symroof.surfaces.cli import main

    def fail(*_: object, **__: object) -> None:
        raise notes.LatexError("notes.tex:12: Undefined control sequence")

    monkeypatch.setattr(notes, "build_notes", fail)
    assert main(["notes", "--out", str(tmp_path), "--no-pdf"]) == 1
    assert capsys.readouterr().err == "symroof: error: notes.tex:12: Undefined control sequence\n"
