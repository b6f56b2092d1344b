"""The README's promises: two commands first, the main job runs (as a real process:
``python -m symroof``, exit status 0), CI runs the same tests."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def first_block() -> list[str]:
    block = re.search(r"```[a-z]*\n(.*?)```", README, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_first_block_is_install_and_main_job_then_tests():
    install, tests = first_block()
    assert install.startswith('pip install -e ".[test]" && symroof ')
    assert tests == "python -m pytest"


def test_ci_runs_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert first_block()[1] in ci.splitlines()


def test_main_job_runs_on_the_presets():
    main_job = first_block()[0].split("&&", 1)[1].split()
    assert main_job[0] == "symroof"
    run = subprocess.run([sys.executable, "-m", "symroof", *main_job[1:]], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "memory-bound" in run.stdout and "total" in run.stdout
    assert "per-op sum is 1.02x" in run.stdout  # the lecture's decode B = 64 ratio


def test_terminal_examples_parse(cli):
    block = README.split("## In a terminal", 1)[1]
    commands = re.search(r"```bash\n(.*?)```", block, re.S).group(1).splitlines()
    for line in filter(None, commands):
        argv = shlex.split(line.split("#", 1)[0])
        assert argv[0] == "symroof"
        help_run = cli([argv[1], "--help"])  # in this process: main() as the command runs it
        assert help_run.returncode == 0, (line, help_run.stderr)
        for flag in (a for a in argv[2:] if a.startswith("--")):
            assert flag in help_run.stdout, f"{flag} is not an option of {argv[1]}"
