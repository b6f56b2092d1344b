"""Fuzz the command line: argv built from each command's own flags (read from the parser,
so a new flag is fuzzed as soon as it exists), with valid and invalid values. Every run must
end in exit 0 with output on stdout, or exit 2 with exactly one line on stderr: never a
traceback, never exit 1 (``check``'s "counted != symbolic" is the only exit 1, and it cannot
happen on these configurations).

``main(argv)`` runs in-process, so a few dozen examples take seconds. ``notes``,
``problems`` and ``measure`` are left out: they write files (and run pdflatex) or time this
machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symroof.surfaces.cli import build_parser, main

#: values tried for a flag (or positional) by its name: (valid, wrong)
POOLS: dict[str, tuple[list[str], list[str]]] = {
    "--model": (["tiny", "llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b"],
                ["gpt-9", "no/such/config.json", ""]),
    "--chip": (["h100", "tpu-v5e", "b200", "v100", "docs/example-chip.json"],
               ["tpu-v9", "missing.json", ""]),
    "--mesh": (["tpu-v5e:2x2", "tpu-v5p:2x2x2", "h100:8", "h100:2x8", "tpu-v5e:4x4",
                "tpu-v5p:16x20x28"],
               ["h100:9", "tpu-v5e:3x5", "tpu-v5e", "nochip:2x2", "h100:0", "h100:8x", ":4",
                "tpu-v5e:2x2x2x2x2"]),
    "--dcn": (["X", "Y"], ["W", "XY", "Q", ""]),
    "--batch": (["1", "2", "8", "32", "4k", "64k", "1M", "4M"],
                ["0", "-3", "1.5", "abc", "1e30", "1e400", "nan"]),
    "--context": (["1", "128", "2048", "8k", "128k"], ["0", "-1", "x", "1e30"]),
    "--seq": (["512", "4096", "2048"], ["1", "3", "0", "x"]),
    "--new-tokens": (["1", "4", "16"], ["0", "x"]),
    "--cached": (["0", "3"], ["-1", "x"]),
    "--microbatches": (["1", "2", "4", "8"], ["0", "x"]),
    "--dtype": (["bf16", "fp8", "int8", "fp16", "fp32"], ["fp4", "int4", "BF16", "fp3", ""]),
    "--weights": (["bf16", "int8", "fp8", "int4", "fp4"], ["fp3", ""]),
    "--kv": (["bf16", "int8", "fp8", "int4"], ["x"]),
    "--x-bytes": (["1", "2", "0.5", "int4"], ["0", "-2", "x", "1/0"]),
    "--strategy": (["fsdp", "dp", "zero1", "fsdp+tp", "tp", "pp", "zero1+pp", "ep",
                    "fsdp+ep"], ["dp+dp", "sp", "", "+"]),
    "--dp": (["X", "Y", "XY", "Z"], ["Q", ""]),
    "--remat": (["full", "none", "2", "selective", "layer_input,mlp/up"],
                ["0", "some", "", "layer_input,mlp/gates", "mlp/up", ",,"]),
    "--tokens": (["4096", "64k", "1M", "4M"], ["0", "3", "-4096", "1.5", "x"]),
    "--generated": (["1", "256", "4k"], ["0", "-1", "x"]),
    "--price": (["1.2", "10.8", "record"], ["0", "-1", "x", "inf", ""]),
    "--conventions": (["symroof", "book", "llm-viewer", "llm-analysis"], ["nope", ""]),
    "--convention": (["ring_factor=book", "optimizer_bytes=10", "gpu_level=one",
                      "base_latency=nccl"], ["ring_factor=nope", "nofield=1", "=", "x"]),
    "--chips": (["h100,tpu-v5e", "h100,b200,tpu-v5p"], ["h100", "h100,nochip", ",", ""]),
    "--models": (["tiny,llama-3.1-8b", "tiny,mixtral-8x7b"], ["tiny", "tiny,gpt-9", ""]),
    "--meshes": (["tpu-v5e:2x2,tpu-v5e:4x4", "h100:8,tpu-v5e:2x4"],
                 ["tpu-v5e:2x2", "tpu-v5e:3x5,h100:8", ""]),
    "--dtypes": (["bf16,int8", "bf16,fp8,int4"], ["bf16", "bf16,fp3", ""]),
    "--plot": ([str(Path(tempfile.gettempdir()) / "symroof-fuzz.svg")],
               [str(Path(tempfile.gettempdir()) / "symroof-fuzz.bmp")]),
    "--diff": (["symroof,book", "llm-viewer,llm-analysis"], ["symroof", "symroof,nope", ","]),
    "name": (["symroof", "book", "llm-viewer"], ["nope"]),
    "--peak": (["2e15", "1e12"], ["0", "-1", "inf", "nan", "x"]),
    "--d": (["8192", "1"], ["0", "x"]),
    "equation": (["t_math = t_mem", "t_mem = t_net", "t_math = t_net"],
                 ["t_math =", "foo", "t_mem = t_mem", "= t_mem"]),
    "--for": (["batch", "context"], ["B", "S", "D", "x", ""]),
    "names": (["h100", "tpu-v5e", "tiny", "llama-3.1-8b", "docs/example-chip.json"],
              ["nope"]),
}
for flag in ("--fsdp", "--tp", "--pp", "--ep"):
    POOLS[flag] = POOLS["--dp"]
for flag in ("--w-bytes", "--out-bytes", "--act-bytes", "--kv-bytes"):
    POOLS[flag] = POOLS["--x-bytes"]
for flag in ("--hbm-bw", "--hbm-bytes", "--link-bw"):
    POOLS[flag] = POOLS["--peak"]
POOLS["--f"] = POOLS["--d"]
#: `check` runs the NumPy model: keep its sizes small (its wrong values stay wrong)
CHECK = {"--model": (["tiny"], ["gpt-9", "no/such/config.json"]),
         "--batch": (["1", "2"], ["0", "x"]), "--new-tokens": (["1", "3"], ["0", "x"])}
GENERIC = (["1"], ["0", "-1", "x", ""])
SKIP = ("notes", "measure", "problems")


def _commands() -> dict[str, list[argparse.Action]]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: [a for a in c._actions if a.dest != "help"]
            for name, c in sub.choices.items() if name not in SKIP}


COMMANDS = _commands()


def _values(command: str, action: argparse.Action) -> tuple[list[str], list[str]]:
    """(valid, wrong) values of one flag of ``command``."""
    name = action.option_strings[0] if action.option_strings else action.dest
    if command == "check" and name in CHECK:
        return CHECK[name]
    if action.choices:
        return list(action.choices), ["nope"]
    return POOLS.get(name, GENERIC)


def _value(draw: st.DrawFn, command: str, action: argparse.Action) -> str:
    """Mostly a valid value (so that runs get past the parser), sometimes a wrong one."""
    good, bad = _values(command, action)
    return draw(st.sampled_from(bad if draw(st.integers(0, 7)) == 0 else good))


@st.composite
def argv(draw: st.DrawFn) -> list[str]:
    """A command, then its flags: required ones usually present, others sometimes."""
    command = draw(st.sampled_from(sorted(COMMANDS)))
    out = [command]
    for action in COMMANDS[command]:
        if not draw(st.integers(0, 2).map(bool) if not action.required else
                    st.integers(0, 19).map(bool)):
            continue
        if action.nargs == 0:  # a switch
            out.append(action.option_strings[0])
            continue
        if action.option_strings:
            out += [draw(st.sampled_from(action.option_strings)),
                    _value(draw, command, action)]
        elif action.nargs == "*":
            out += [_value(draw, command, action) for _ in range(draw(st.integers(0, 2)))]
        else:
            out.append(_value(draw, command, action))
    return out


#: what a message must not show: a dict, tuple or list repr, an object's repr, or a message
#: of Python's or SymPy's own (an expression that stayed symbolic, a None met as a number)
LEAKS = re.compile(r"\{'|\('[^']*',|\['[^']*'[,\]]|\(\)|Mesh\(|Chip\(|Candidate\(|<symroof|"
                   r"object at 0x|Cannot convert expression|unsupported operand|has no "
                   r"attribute|not subscriptable|NoneType")


def run(args: list[str]) -> tuple[int, str, str]:
    """``main(args)`` in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as stop:  # argparse's own errors
            status = stop.code if isinstance(stop.code, int) else 2
    return status, out.getvalue(), err.getvalue()


def check_run(args: list[str]) -> None:
    status, out, err = run(args)
    assert "Traceback" not in out + err, (args, err)
    if status == 0:
        assert out.strip(), (args, "exit 0 without output")
    else:
        assert status == 2, (args, status, err)
        assert err.startswith("symroof: error: ") and err.count("\n") == 1, (args, err)
        assert not LEAKS.search(err), (args, err)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(argv())
def test_every_run_exits_0_with_output_or_2_with_one_line(args):
    check_run(args)


@pytest.mark.parametrize("args", [
    # the cases, each one clear line (or a plan)
    ["train", "--model", "llama-3.1-70b", "--mesh", "tpu-v5p:16x20x28", "--tokens", "4M",
     "--strategy", "fsdp+tp", "--fsdp", "YZ", "--tp", "X"],
    ["train", "--model", "llama-3.1-70b", "--mesh", "tpu-v5p:4x4x4", "--tokens", "4M",
     "--strategy", "fsdp+tp", "--fsdp", "XY", "--tp", "XY"],
    ["serve", "--model", "deepseek-v3", "--mesh", "tpu-v5p:2x2x2", "--batch", "8",
     "--context", "1k"],
])
def test_named_cases(args):
    check_run(args)


@pytest.mark.parametrize("args", [
    # found by the pools of the flags added since: a small model's TP condition kept the
    # batch symbol, and train died with "Cannot convert expression to float"
    ["train", "--model", "tiny", "--mesh", "tpu-v5e:2x2", "--batch", "64", "--seq", "1024",
     "--strategy", "tp", "--remat", "layer_input,,mlp/up", "--format", "json"],
])
def test_valid_runs_give_an_answer(args):
    status, out, err = run(args)
    assert status == 0 and out.strip(), (args, err)


def test_every_flag_that_takes_a_value_has_its_own_pool():
    """A flag added to a parser gets valid and wrong values here, not the generic ones
    (which ``--price``, ``--plot`` or a kept-tensor ``--remat`` would never reach)."""
    missing = sorted({f"{command} {a.option_strings[0] if a.option_strings else a.dest}"
                      for command, actions in COMMANDS.items() for a in actions
                      if a.nargs != 0 and not a.choices and
                      (a.option_strings[0] if a.option_strings else a.dest) not in POOLS})
    assert missing == []
