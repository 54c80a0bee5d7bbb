"""`delta-sync rollback` in separate processes: its exit codes (3 blocked, 0 done and nothing to do), its text
and JSON. An unknown plan id (exit 1) is in tests/unit/test_exit_codes.py and, on real Delta, with `drift`
counting a rollback's commits as delta-sync's own, in test_rollback.py. Both ways a user's commands go
(tests/spark/cli.py), in one story: the rollbacks that block and that run in-process, as on CI, where the exit
code gates a job; the rest through the warm engine, as at a terminal."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.spark.cli import ENGINE, IN_PROCESS, Cli

ORDERS = """\
table: shop.orders
columns:
  - name: id
    type: bigint
    nullable: false
  - name: amount
    type: int
"""


@pytest.fixture
def run(cli: Cli) -> Callable[[list[str], Path], subprocess.CompletedProcess[str]]:
    return lambda args, cwd: cli.run(args, cwd=cwd)


@pytest.mark.parametrize("cli_path", [ENGINE])  # and in-process for two steps (Cli.use)
def test_rollback_exit_codes_text_json_and_drift(
    cli: Cli, tmp_path: Path, run: Callable[[list[str], Path], subprocess.CompletedProcess[str]]
) -> None:
    spec = tmp_path / "specs" / "orders.yaml"
    spec.parent.mkdir()
    spec.write_text(ORDERS)
    assert run(["apply", "--yes"], tmp_path).returncode == 0
    spec.write_text(ORDERS + "  - name: note\n    type: string\nproperties:\n  team: sales\n")
    applied = run(["apply", "--yes"], tmp_path)
    assert applied.returncode == 0, applied.stderr
    plan_id = applied.stderr.split("(plan ")[1].split(")")[0]
    wrote = run(["sql", "INSERT INTO shop.orders VALUES (1, 10, 'rush'), (2, 20, NULL)"], tmp_path)
    assert wrote.returncode == 0, wrote.stderr

    # Someone wrote `note` since: dropping it would lose a value, so the rollback is blocked and nothing runs.
    cli.use(IN_PROCESS)
    blocked = run(["rollback", plan_id, "--yes"], tmp_path)
    assert blocked.returncode == 3, blocked.stdout + blocked.stderr
    assert "loses the values of 1 row written since the plan by version 3 (WRITE" in blocked.stdout
    assert "Nothing rolled back" in blocked.stderr
    assert "To allow: --allow breaking,destructive,irreversible." in blocked.stdout

    done = run(["rollback", plan_id, "--yes", "--allow", "destructive,irreversible,breaking"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "- property team" in done.stdout
    assert f"Rolled back plan {plan_id}" in done.stderr
    assert "`delta-sync plan` shows the change again" in done.stderr
    cli.use(ENGINE)
    rows = run(["sql", "--format", "json", "SELECT * FROM shop.orders ORDER BY id"], tmp_path)
    assert json.loads(rows.stdout)["rows"] == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]

    again = run(["rollback", plan_id, "--yes", "--format", "json"], tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    document = json.loads(again.stdout)
    assert document["rolls_back"] == plan_id
    assert document["statements"] == []
    assert document["rollback"]["nothing_to_undo"][0]["table"] == "shop.orders"
    assert "Nothing to roll back" in again.stderr
