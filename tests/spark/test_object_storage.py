"""An environment on S3-compatible object storage (moto's S3 server on 127.0.0.1, tests/servers/s3.py): the
warehouse on `s3a://`, the metastore the embedded Derby one, an external table spelled `s3://`, the secret key
given as `${env:LAKE_SECRET}`. Through the warm engine and in-process (tests/spark/cli.py), every command of the
story below converges, and the secret is nowhere: no output, no file of the project, no process of the engine.

One project per path, shared by the module's tests in order: in-process, each command starts a JVM of its own.
The two paths write under prefixes of their own in the session's one bucket.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.servers.s3 import S3
from tests.spark.cli import ENGINE, PATHS, Cli

pytestmark = pytest.mark.spark

# The README's "Object storage" configuration: endpoint, path-style, key, and the secret from the environment.
PROJECT = """\
default_env: lake
envs:
  lake:
    spark:
      conf:
        spark.hadoop.fs.s3a.endpoint: {endpoint}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.access.key: {key}
        spark.hadoop.fs.s3a.secret.key: ${{env:LAKE_SECRET}}
        spark.sql.warehouse.dir: s3a://{bucket}/{prefix}/warehouse
"""

# The README's example table, with a primary key for `check`.
ORDERS = """\
table: shop.orders
comment: {comment}
columns:
  - name: order_id
    type: bigint
    nullable: false
  - name: total_amount
    type: decimal(18,2)
  - name: order_date
    type: date
{more}checks:
  total_non_negative: total_amount >= 0
partitioned_by: [order_date]
primary_key: [order_id]
properties:
  delta.enableChangeDataFeed: "true"
"""

# External, at a location spelled as most users write it.
EVENTS = """\
table: shop.events
location: s3://{bucket}/{prefix}/external/events
columns:
  - name: id
    type: bigint
  - name: zip
    type: {zip}
{more}"""

REWRITTEN = """\
    using: CAST(trim(zip) AS int)
  - name: tier
    type: string
    nullable: false
    backfill: "'basic'"
"""


@dataclass
class Lake:
    """A project on the S3 server, its commands on one path, and every output they gave."""

    cli: Cli
    s3: S3
    prefix: str
    outputs: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.cli.root

    def run(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        done = self.cli.run(list(args), env={"LAKE_SECRET": self.s3.secret_key})
        self.outputs += [done.stdout, done.stderr]
        assert done.returncode == expect, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def write(self, name: str, text: str) -> None:
        path = self.root / "specs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def events(self, zip_type: str, more: str = "") -> str:
        return EVENTS.format(bucket=self.s3.bucket, prefix=self.prefix, zip=zip_type, more=more)


@pytest.fixture(scope="module", params=PATHS)
def lake(request: pytest.FixtureRequest, s3: S3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    path = str(request.param)
    root = tmp_path_factory.mktemp(f"lake-{path}")
    (root / "delta-sync.yaml").write_text(
        PROJECT.format(endpoint=s3.endpoint, key=s3.access_key, bucket=s3.bucket, prefix=path)
    )
    lake = Lake(Cli(root, path, env="lake"), s3, path)
    lake.write("shop/orders.yaml", ORDERS.format(comment="Orders placed in the web shop", more=""))
    lake.write("shop/events.yaml", lake.events("string"))
    try:
        yield lake
    finally:
        lake.cli.close()


def test_readme_flow_external_table_rewrite_backfill_and_import_converge_on_s3(lake: Lake) -> None:
    bucket, prefix = lake.s3.bucket, lake.prefix
    applied = lake.run("apply", "--yes")
    assert "all 2 table(s) match the specs" in applied.stderr + applied.stdout
    # The warehouse's tables and the external one are on the S3 server, nowhere else.
    assert f"{prefix}/warehouse/shop.db/orders/_delta_log/00000000000000000000.json" in lake.s3.keys(bucket, prefix)
    assert f"{prefix}/external/events/_delta_log/00000000000000000000.json" in lake.s3.keys(bucket, prefix)
    assert not (lake.root / ".delta-sync" / "lake" / "warehouse" / "shop.db").exists()

    lake.run("sql", "INSERT INTO shop.events VALUES (1, ' 123'), (2, '456')")

    # Evolve the README's table; rewrite the external one's column with `using:`, and backfill a new NOT NULL one.
    lake.write(
        "shop/orders.yaml",
        ORDERS.format(comment="Orders, all channels", more="  - name: currency\n    type: string\n"),
    )
    lake.write("shop/events.yaml", lake.events("int", REWRITTEN))
    evolved = lake.run("apply", "--yes", "--allow", "rewrite,breaking")
    assert "match the specs" in evolved.stderr + evolved.stdout

    lake.run("sql", "CREATE TABLE shop.manual (id BIGINT, note STRING) USING delta")
    lake.run("import", "shop.manual")
    assert (lake.root / "specs" / "shop" / "manual.yaml").is_file()

    # One plan for all of it: the README flow, the `s3://` table, the rewrite and the import leave nothing to do.
    planned = lake.run("plan", "--out", str(lake.root / "plan.json"))
    assert "No changes. 3 table(s) match the specs." in planned.stdout + planned.stderr

    rows = lake.run("sql", "SELECT id, zip, tier FROM shop.events ORDER BY id", "--format", "json")
    found = [[r["id"], r["zip"], r["tier"]] for r in json.loads(rows.stdout)["rows"]]
    assert found == [[1, 123, "basic"], [2, 456, "basic"]]
    lake.run("check")


def test_the_secret_is_in_no_output_file_or_process(lake: Lake) -> None:
    if not lake.outputs:  # run on its own (-k): the commands that start Spark on S3 first
        lake.run("apply", "--yes", "--allow", "rewrite,breaking")
        lake.run("plan", "--out", str(lake.root / "plan.json"))
    secret = lake.s3.secret_key
    lake.run("engine", "status")
    lake.run("engine", "status", "--format", "json")
    assert [text for text in lake.outputs if secret in text] == []

    files = [p for p in lake.root.rglob("*") if p.is_file()]
    home = lake.root / ".delta-sync" / "lake"
    seen = {p.relative_to(home).as_posix() for p in files if home in p.parents}
    assert "logs/spark.log" in seen, sorted(seen)
    assert (lake.root / "plan.json") in files
    if lake.cli.path == ENGINE:
        assert {"engine/start.json", "engine/engine.json", "logs/engine.log"} <= seen, sorted(seen)
    assert [p for p in files if secret.encode() in p.read_bytes()] == []

    if lake.cli.path != ENGINE:
        return
    state = lake.cli.engine()
    assert state is not None, "the engine stopped"
    pids = _with_descendants([int(str(state["pid"])), int(str(state["jvm_pid"]))])
    assert len(pids) >= 3, pids  # the engine, its JVM and its preloaded process at least
    for pid in pids:
        for part in ("cmdline", "environ"):
            try:
                text = Path(f"/proc/{pid}/{part}").read_bytes()
            except OSError:
                continue  # a process that ended meanwhile
            assert secret.encode() not in text, f"/proc/{pid}/{part} holds the secret"
            assert b"LAKE_SECRET=" not in text, f"/proc/{pid}/{part} holds the secret's variable"


def _with_descendants(pids: list[int]) -> list[int]:
    found: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
    return found
