"""The README's 30-second example (docs/getting-started.md includes it), run as a new user would: its spec in a
fresh project, its three commands as real processes, and what they print compared with its console block line by
line; both ways a user's commands go (tests/spark/cli.py): through the warm engine, as at a terminal, and
in-process, as on CI."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests import docs_text
from tests.spark.cli import Cli

pytestmark = pytest.mark.spark

SECTION = docs_text.readme_section("example")
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


def test_the_30_second_example_prints_what_the_readme_shows(cli: Cli) -> None:
    project = cli.root / "project"
    (project / "specs" / "shop").mkdir(parents=True)
    (block,) = re.findall(r"`specs/shop/orders\.yaml`:\n\n```yaml\n(.*?)```", SECTION, re.DOTALL)
    (project / "specs" / "shop" / "orders.yaml").write_text(block)
    cli.root = project
    environment: dict[str, str | None] = {"NO_COLOR": "1", "FORCE_COLOR": None, "DELTA_SYNC_PLAN_KEY": None}
    runs = session()
    assert [args[0] for args, _ in runs] == ["plan", "apply", "plan"]

    for args, expected in runs:
        done = cli.run(args, env=environment)

        assert done.returncode == 0, done.stdout + done.stderr
        assert shown(done) == [normal(line) for line in expected], done.stderr
