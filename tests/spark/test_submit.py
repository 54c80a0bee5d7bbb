"""apply --env through a real spark-submit (the installed pyspark's, --master local[2]): the driver
runs the entrypoint on a saved plan; vars rename tables per environment; stale plans are refused
with exit code 4 coming back through spark-submit; secrets stay out of the printed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = """\
default_env: dev
envs:
  dev:
    vars: {suffix: _dev}
  ci:
    vars: {suffix: _ci}
    allow: [breaking]
    submit:
      master: local[2]
      conf:
        spark.sql.shuffle.partitions: 2
        spark.delta-sync.token: ${env:DS_TEST_TOKEN}
"""

ORDERS = """\
table: shop.orders${suffix}
comment: Orders in ${suffix}, literally $${suffix}
columns:
  - name: id
    type: bigint
    nullable: false
  - name: amount
    type: int
checks:
  amount_positive: amount > 0
"""


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DELTA_SYNC_HOME"}
    env.update({"COLUMNS": "200", "DS_TEST_TOKEN": "s3cr3t-token-value"})
    return subprocess.run(
        [sys.executable, "-m", "delta_sync", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "delta-sync.yaml").write_text(PROJECT)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(ORDERS)
    return tmp_path


def test_apply_through_spark_submit_converges_and_refuses_a_stale_plan(project: Path) -> None:
    applied = run(["apply", "--env", "ci", "--yes"], project)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "through spark-submit --master local[2]" in applied.stderr
    assert "✓ [" in applied.stderr  # the driver's progress, streamed
    assert "Applied plan" in applied.stderr
    assert "WARN" not in applied.stderr  # Spark's own output went to the log file
    log = project / ".delta-sync" / "ci" / "logs" / "submit.log"
    assert "DELTA_SYNC_RESULT" in log.read_text()
    assert "s3cr3t" not in log.read_text() + applied.stdout + applied.stderr

    # The environment's own catalog, its own table names; the plan is empty afterwards.
    replanned = run(["plan", "--env", "ci", "--detailed-exitcode"], project)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    rows = run(["sql", "--env", "ci", "--format", "json", "SHOW TABLES IN shop"], project)
    assert [r["tableName"] for r in json.loads(rows.stdout)["rows"]] == ["orders_ci"]
    detail = run(["sql", "--env", "ci", "--format", "json", "DESCRIBE DETAIL shop.orders_ci"], project)
    assert json.loads(detail.stdout)["rows"][0]["description"] == "Orders in _ci, literally ${suffix}"

    # A reviewed plan file, applied through the driver; applying it twice is refused as stale (exit 4).
    spec = project / "specs" / "orders.yaml"
    spec.write_text(spec.read_text().replace("checks:", "  - name: note\n    type: string\nchecks:"))
    saved = run(["plan", "--env", "ci", "--out", "plan.json"], project)
    assert saved.returncode == 0, saved.stderr
    assert json.loads((project / "plan.json").read_text())["environment"] == "ci"
    shown = run(["apply", "plan.json", "--env", "ci", "--print-command"], project)
    assert shown.returncode == 0, shown.stderr
    command = shown.stdout.strip()
    assert "/bin/spark-submit --master 'local[2]' --deploy-mode client" in command
    assert "spark.sql.shuffle.partitions=2" in command
    assert "spark.delta-sync.token=***" in command
    assert "s3cr3t" not in shown.stdout + shown.stderr
    # The driver re-derives the plan's hazards and checks them against what this apply allows.
    assert command.endswith(f"delta_sync/spark/entrypoint.py {(project / 'plan.json').resolve()} --allow breaking")
    # Only a plan of its own environment is shipped.
    elsewhere = run(["apply", "plan.json", "--env", "dev", "--print-command"], project)
    assert elsewhere.returncode == 4, elsewhere.stdout + elsewhere.stderr
    assert "was made for environment ci, not dev" in elsewhere.stderr
    first = run(["apply", "plan.json", "--env", "ci", "--yes"], project)
    assert first.returncode == 0, first.stdout + first.stderr
    again = run(["apply", "plan.json", "--env", "ci", "--yes"], project)
    assert again.returncode == 4, again.stdout + again.stderr
    assert "already applied" in again.stderr
    assert run(["plan", "--env", "ci", "--detailed-exitcode"], project).returncode == 0

    # Rolled back through the driver too: reviewed here, run by spark-submit, stamped with the plan it undoes.
    plan_id = json.loads((project / "plan.json").read_text())["plan_id"]
    undone = run(["rollback", "plan.json", "--yes"], project)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert "restore table shop.orders_ci" in undone.stdout
    assert "through spark-submit --master local[2]" in undone.stderr
    history = run(["sql", "--env", "ci", "--format", "json", "DESCRIBE HISTORY shop.orders_ci LIMIT 1"], project)
    latest = json.loads(history.stdout)["rows"][0]
    assert latest["operation"] == "RESTORE"
    assert json.loads(latest["userMetadata"])["delta-sync"]["rollback"] == plan_id
    columns = run(["sql", "--env", "ci", "--format", "json", "SELECT * FROM shop.orders_ci LIMIT 0"], project)
    assert json.loads(columns.stdout)["columns"] == ["id", "amount"]
    assert run(["plan", "--env", "ci", "--detailed-exitcode"], project).returncode == 2

    # The default environment (dev) is another catalog with other names: nothing of ci's is there.
    dev = run(["plan", "--format", "json"], project)
    assert dev.returncode == 0, dev.stderr
    assert [t["name"] for t in json.loads(dev.stdout)["tables"]] == ["shop.orders_dev"]
