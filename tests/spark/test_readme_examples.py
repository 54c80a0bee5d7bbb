"""The README's 30-second example, run as a new user would: its spec in a fresh project, its three commands as
real processes (each starts Spark), and what they print compared with its console block line by line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
SECTION = README[README.index("## 30-second example") : README.index("## Commands")]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Timestamped phase lines are what stderr shows off a terminal; at one, the same phases are a spinner.
PHASE = re.compile(r"\[\s*\d+\.\ds\] ")
# What differs from run to run: each statement's duration and the plan id.
VARYING = [(re.compile(r" \(\d+\.\ds\)$"), " (N.Ns)"), (re.compile(r"\(plan [0-9a-f]{16}\)"), "(plan ID)")]


def session() -> list[tuple[list[str], list[str]]]:
    """The console block's commands (arguments after `delta-sync`) and the lines shown after each."""
    (block,) = re.findall(r"```console\n(\$ .*?)```", SECTION, re.DOTALL)
    runs: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ delta-sync "):
            runs.append((line.removeprefix("$ delta-sync ").split(), []))
        elif line:
            runs[-1][1].append(line)
    return runs


def shown(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What a terminal shows of a run (results, then what stays of stderr), colour and varying parts aside."""
    lines = done.stdout.splitlines() + [line for line in done.stderr.splitlines() if not PHASE.match(line)]
    return [normal(ANSI.sub("", line)) for line in lines if line.strip()]


def normal(line: str) -> str:
    for pattern, stand_in in VARYING:
        line = pattern.sub(stand_in, line)
    return line


def test_the_30_second_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "specs" / "shop").mkdir(parents=True)
    (block,) = re.findall(r"`specs/shop/orders\.yaml`:\n\n```yaml\n(.*?)```", SECTION, re.DOTALL)
    (project / "specs" / "shop" / "orders.yaml").write_text(block)
    environment = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "DELTA_SYNC_PLAN_KEY")}
    environment.update(DELTA_SYNC_HOME=str(tmp_path / "home"), NO_COLOR="1", COLUMNS="200")
    runs = session()
    assert [args[0] for args, _ in runs] == ["plan", "apply", "plan"]

    for args, expected in runs:
        done = subprocess.run(
            [sys.executable, "-m", "delta_sync", *args],
            cwd=project,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )

        assert done.returncode == 0, done.stdout + done.stderr
        assert shown(done) == [normal(line) for line in expected], done.stderr
