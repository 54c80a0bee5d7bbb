"""examples/migrate.py, the library in a Spark job: through the real spark-submit (Delta's jars and settings
on its command line, as a cluster job gets them) and as plain `python` building its own session with
`delta_sync.with_delta`. Both create the tables of the specs on real Delta, apply, and re-plan to nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from delta_sync.spark.jars import delta_jars
from delta_sync.spark.session import delta_conf
from tests.servers import spark_env, spark_home

JOB = Path(__file__).resolve().parents[2] / "examples" / "migrate.py"

SPEC = """\
table: shop.orders
columns:
  - name: id
    type: bigint
    nullable: false
  - name: amount
    type: decimal(10,2)
checks:
  positive: amount > 0
properties:
  team: sales
"""


def project(root: Path) -> Path:
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "orders.yaml").write_text(SPEC)
    return root


def check(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "+ create table shop.orders" in done.stdout
    assert "applied 3 statement(s) of plan " in done.stdout  # schema, table, its CHECK
    assert done.stdout.rstrip().endswith("converged")
    assert "Traceback" not in done.stderr


def test_the_example_job_through_spark_submit(tmp_path: Path) -> None:
    root = project(tmp_path / "submit")
    conf = {**delta_conf(delta_jars()), "spark.sql.warehouse.dir": str(root / "warehouse")}
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[1]"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(JOB), "specs"]
    env = spark_env(tmp_path / "conf")
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)
    check(done)


def test_the_example_job_as_plain_python(tmp_path: Path) -> None:
    root = project(tmp_path / "python")
    env = spark_env(tmp_path / "conf")
    done = subprocess.run(
        [sys.executable, str(JOB), "specs"], cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    check(done)
