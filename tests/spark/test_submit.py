"""apply --env through a real spark-submit (the installed pyspark's, --master local[2]): the driver
runs the entrypoint on a saved plan; vars rename tables per environment; stale plans are refused
with exit code 4 coming back through spark-submit; secrets stay out of the printed command.

Both paths a user's commands take (tests/spark/cli.py), in one story: an apply and a rollback through the warm
engine, which gives the embedded catalog up to the driver (Derby admits one process), and a reviewed plan
in-process, as on CI. (Each step through spark-submit starts two JVMs and the engine a third: the story run once
per path took 15 minutes of a CI run.) Then, through the engine only: the README's environments, a printed
command run by hand, and every pair of processes Derby's one-process rule sets against each other, each told in
one sentence who holds the catalog and what to do.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark.cli import ENGINE, IN_PROCESS, Cli

REPO = Path(__file__).resolve().parents[2]
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
TOKEN = {"DS_TEST_TOKEN": "s3cr3t-token-value"}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Cli]:
    cli = Cli(tmp_path, ENGINE)
    (cli.root / "delta-sync.yaml").write_text(PROJECT)
    (cli.root / "specs").mkdir()
    (cli.root / "specs" / "orders.yaml").write_text(ORDERS)
    yield cli
    cli.close()


def test_apply_through_spark_submit_converges_and_refuses_a_stale_plan(project: Cli) -> None:
    run = project.run
    root = project.root
    applied = run(["apply", "--env", "ci", "--yes"], env=TOKEN)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "through spark-submit --master local[2]" in applied.stderr
    assert "✓ [" in applied.stderr  # the driver's progress, streamed
    assert "Applied plan" in applied.stderr
    assert "WARN" not in applied.stderr  # Spark's own output went to the log file
    log = root / ".delta-sync" / "ci" / "logs" / "submit.log"
    assert "DELTA_SYNC_RESULT" in log.read_text()
    assert "s3cr3t" not in log.read_text() + applied.stdout + applied.stderr

    # The environment's own catalog, its own table names; the plan is empty afterwards.
    replanned = run(["plan", "--env", "ci", "--detailed-exitcode"], env=TOKEN)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    rows = run(["sql", "--env", "ci", "--format", "json", "SHOW TABLES IN shop"], env=TOKEN)
    assert [r["tableName"] for r in json.loads(rows.stdout)["rows"]] == ["orders_ci"]
    detail = run(["sql", "--env", "ci", "--format", "json", "DESCRIBE DETAIL shop.orders_ci"], env=TOKEN)
    assert json.loads(detail.stdout)["rows"][0]["description"] == "Orders in _ci, literally ${suffix}"

    # A reviewed plan file, applied through the driver; applying it twice is refused as stale (exit 4). On CI's path.
    project.use(IN_PROCESS)
    spec = root / "specs" / "orders.yaml"
    spec.write_text(spec.read_text().replace("checks:", "  - name: note\n    type: string\nchecks:"))
    saved = run(["plan", "--env", "ci", "--out", "plan.json"], env=TOKEN)
    assert saved.returncode == 0, saved.stderr
    assert json.loads((root / "plan.json").read_text())["environment"] == "ci"
    shown = run(["apply", "plan.json", "--env", "ci", "--print-command"], env=TOKEN)
    assert shown.returncode == 0, shown.stderr
    command = shown.stdout.strip()
    assert "/bin/spark-submit --master 'local[2]' --deploy-mode client" in command
    assert "spark.sql.shuffle.partitions=2" in command
    assert "spark.delta-sync.token=***" in command
    assert "s3cr3t" not in shown.stdout + shown.stderr
    # The driver re-derives the plan's hazards and checks them against what this apply allows.
    assert command.endswith(f"delta_sync/processes/entrypoint.py {(root / 'plan.json').resolve()} --allow breaking")
    # Only a plan of its own environment is shipped.
    elsewhere = run(["apply", "plan.json", "--env", "dev", "--print-command"], env=TOKEN)
    assert elsewhere.returncode == 4, elsewhere.stdout + elsewhere.stderr
    assert "was made for environment ci, not dev" in elsewhere.stderr
    # Nor one reviewed under other settings: the command checks them before anything is submitted.
    (root / "delta-sync.yaml").write_text(PROJECT.replace("suffix: _ci", "suffix: _qa"))
    moved = run(["apply", "plan.json", "--env", "ci", "--print-command"], env=TOKEN)
    assert moved.returncode == 4, moved.stdout + moved.stderr
    said = " ".join(moved.stderr.split())
    assert "reviewed with vars: {suffix: _ci}; delta-sync.yaml (environment ci) now says vars: {suffix: _qa}" in said
    (root / "delta-sync.yaml").write_text(PROJECT)
    first = run(["apply", "plan.json", "--env", "ci", "--yes"], env=TOKEN)
    assert first.returncode == 0, first.stdout + first.stderr
    again = run(["apply", "plan.json", "--env", "ci", "--yes"], env=TOKEN)
    assert again.returncode == 4, again.stdout + again.stderr
    assert "already applied" in again.stderr
    assert run(["plan", "--env", "ci", "--detailed-exitcode"], env=TOKEN).returncode == 0

    # Rolled back through the driver too: reviewed here, run by spark-submit, stamped with the plan it undoes. At a
    # terminal again.
    project.use(ENGINE)
    plan_id = json.loads((root / "plan.json").read_text())["plan_id"]
    undone = run(["rollback", "plan.json", "--yes"], env=TOKEN)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert "restore table shop.orders_ci" in undone.stdout
    assert "through spark-submit --master local[2]" in undone.stderr
    history = run(["sql", "--env", "ci", "--format", "json", "DESCRIBE HISTORY shop.orders_ci LIMIT 1"], env=TOKEN)
    latest = json.loads(history.stdout)["rows"][0]
    assert latest["operation"] == "RESTORE"
    assert json.loads(latest["userMetadata"])["delta-sync"]["rollback"] == plan_id
    columns = run(["sql", "--env", "ci", "--format", "json", "SELECT * FROM shop.orders_ci LIMIT 0"], env=TOKEN)
    assert json.loads(columns.stdout)["columns"] == ["id", "amount"]
    assert run(["plan", "--env", "ci", "--detailed-exitcode"], env=TOKEN).returncode == 2

    # The default environment (dev) is another catalog with other names: nothing of ci's is there.
    dev = run(["plan", "--format", "json"], env=TOKEN)
    assert dev.returncode == 0, dev.stderr
    assert [t["name"] for t in json.loads(dev.stdout)["tables"]] == ["shop.orders_dev"]


README_ENVS = """\
envs:
  local: {}
  ci:
    vars: {suffix: _ci}                # table: shop.orders${suffix} -> shop.orders_ci
    submit: {master: "local[2]"}       # apply through spark-submit on this machine
  batch:
    submit: {master: "local[2]"}
"""
# A notebook on the project's folder: its own Spark on the environment's embedded catalog, then delta-sync's
# library on that session. "hold": it only opens the catalog and waits; "plan": delta_sync.plan on it.
NOTEBOOK = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pyspark.sql import SparkSession
    import delta_sync
    from delta_sync.model.errors import DeltaSyncError
    from delta_sync.spark.jars import delta_jars
    from delta_sync.spark.session import LocalCatalog, spark_conf

    home, mode = Path(sys.argv[1]), sys.argv[2]
    builder = SparkSession.builder
    for key, value in spark_conf(LocalCatalog(home, master="local[1]"), delta_jars()).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    if mode == "hold":
        spark.sql("SHOW DATABASES").collect()
        print("holding", flush=True)
        sys.stdin.read()
    else:
        try:
            delta_sync.plan("specs", spark=spark, env="batch")
            print("planned")
        except DeltaSyncError as error:
            print(f"refused: {error}")
    """
)


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert "HiveException" not in stderr, stderr
    return lines[0]


def test_readme_environments_through_the_engine_and_derby_one_process_rule(tmp_path: Path) -> None:
    cli = Cli(tmp_path, ENGINE)
    try:
        _readme_environments(cli)
    finally:
        cli.close()


def _readme_environments(cli: Cli) -> None:
    root = cli.root
    shutil.copytree(REPO / "specs", root / "specs")
    (root / "delta-sync.yaml").write_text(README_ENVS)
    home = root / ".delta-sync" / "batch"

    # The README's `ci` environment, as a user runs it at a terminal: planned through the engine, applied by the
    # driver (the engine gave the catalog up first), re-planned through a new engine: nothing to do.
    for env in ("ci", "batch"):
        applied = cli.run(["apply", "specs", "--env", env, "--yes"])
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "Applied plan" in applied.stderr, applied.stderr
        assert cli.engine(env) is None  # given up to the driver, not restarted behind it
        replanned = cli.run(["plan", "specs", "--env", env, "--detailed-exitcode"])
        assert replanned.returncode == 0, replanned.stdout + replanned.stderr
        assert "No changes. 4 table(s) match the specs." in replanned.stdout
        assert cli.engine(env) is not None

    # A reviewed plan file, applied through the driver while the engine runs.
    spec = root / "specs" / "shop" / "customers.yaml"
    spec.write_text(spec.read_text().replace("columns:\n", "columns:\n  - name: nickname\n    type: string\n", 1))
    saved = cli.run(["plan", "specs", "--env", "batch", "--out", "plan.json"])
    assert saved.returncode == 0, saved.stderr
    applied = cli.run(["apply", "plan.json", "--env", "batch", "--yes"])
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert cli.run(["plan", "specs", "--env", "batch", "--detailed-exitcode"]).returncode == 0

    # --print-command first, then the printed command run by hand: the engine was stopped for it.
    spec.write_text(spec.read_text().replace("    type: string\n", "    type: string\n    comment: Alias\n", 1))
    assert cli.run(["plan", "specs", "--env", "batch", "--out", "plan.json"]).returncode == 0
    assert cli.engine("batch") is not None
    printed = cli.run(["apply", "plan.json", "--env", "batch", "--print-command"])
    assert printed.returncode == 0, printed.stderr
    assert cli.engine("batch") is None
    command = shlex.split(printed.stdout.strip())
    by_hand = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert by_hand.returncode == 0, by_hand.stdout[-3000:] + by_hand.stderr[-3000:]
    assert '"status": "applied"' in by_hand.stdout
    assert cli.run(["plan", "specs", "--env", "batch", "--detailed-exitcode"]).returncode == 0

    # Derby's one process, pair by pair: the engine holds the catalog ...
    engine = cli.engine("batch")
    assert engine is not None
    # ... and spark-submit's driver run by hand: one sentence, through the driver's result.
    spec.write_text(spec.read_text().replace("comment: Alias", "comment: Also known as"))
    assert cli.run(["plan", "specs", "--env", "batch", "--out", "plan.json"]).returncode == 0
    refused = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600, check=False)
    assert refused.returncode == 1, refused.stdout[-3000:]
    result = json.loads(refused.stdout.strip().splitlines()[-1].removeprefix("DELTA_SYNC_RESULT "))
    assert result["error"] == (
        f"The local catalog in {home} is held by the delta-sync engine (pid {engine['pid']}); "
        "stop it first: delta-sync engine stop --env batch"
    )
    # ... and a command run in-process beside it.
    in_process = cli.run(["--no-engine", "plan", "specs", "--env", "batch"])
    assert in_process.returncode == 1
    assert one_sentence(in_process.stderr) == (
        f"Error: The local catalog in {home} is held by the delta-sync engine (pid {engine['pid']}); run without "
        "--no-engine to use it, or stop it first: delta-sync engine stop --env batch"
    )
    # ... and a notebook using delta-sync's library on a Spark of its own.
    notebook = subprocess.run(
        [sys.executable, "-c", NOTEBOOK, str(home), "plan"], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert notebook.stdout.strip().splitlines()[-1] == (
        f"refused: The local catalog in {home} is held by the delta-sync engine (pid {engine['pid']}); "
        "stop it first: delta-sync engine stop --env batch"
    ), notebook.stdout + notebook.stderr[-3000:]

    # A notebook that opened the catalog first: the engine cannot start, and says why in one sentence.
    assert cli.run(["engine", "stop", "--env", "batch"]).returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", NOTEBOOK, str(home), "hold"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        blocked = cli.run(["plan", "specs", "--env", "batch"])
        assert blocked.returncode == 1
        assert one_sentence(blocked.stderr) == (
            f"Error: The local catalog in {home} is in use by another Spark process (a notebook, a spark-shell or "
            "another delta-sync); stop it, then retry."
        )
        # The driver of an apply meets the notebook too: the same sentence, not Hive's words.
        driver = cli.run(["apply", "plan.json", "--env", "batch", "--yes"])
        assert driver.returncode == 1
        assert one_sentence(driver.stderr).endswith(
            "in use by another Spark process (a notebook, a spark-shell or another delta-sync); stop it, then retry."
        ), driver.stderr
    finally:
        holder.communicate("", timeout=120)
