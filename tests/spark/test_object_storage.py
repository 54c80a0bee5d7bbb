"""An environment on S3-compatible object storage (moto's S3 server on 127.0.0.1, tests/servers/s3.py): the
warehouse on `s3a://`, the metastore the embedded Derby one, an external table spelled `s3://`, the secret key
given as `${env:LAKE_SECRET}`. Every command of the story below converges, and the secret is nowhere: no output,
no file of the project, no process of the engine.

Then, on the same tables: drift and adopt of a change made by hand, a plan rehearsed on shallow clones in the S3
warehouse, saved, applied and rolled back, `doctor` (the bucket reached; a missing one is one sentence), credentials
from the process environment alone, spark-submit with the secret on no command line, and INSERTs through `sql`
racing a rewrite in one engine (one driver runs both).

One project, shared by the module's tests in order. Its story takes both paths a user's commands take
(tests/spark/cli.py): each of the first two tests runs half its steps through the warm engine and half in-process,
as on CI, where each command starts a JVM of its own with S3A's jars (the story run once per path took 10 minutes
of a CI run); the others take the path their subject lives on.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.servers.s3 import S3
from tests.spark.cli import ENGINE, IN_PROCESS, Cli

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
  stray:                      # a warehouse in a bucket the server does not have
    spark:
      conf:
        spark.hadoop.fs.s3a.endpoint: {endpoint}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.access.key: {key}
        spark.hadoop.fs.s3a.secret.key: ${{env:LAKE_SECRET}}
        spark.sql.warehouse.dir: s3a://absent-{prefix}/warehouse
  chain:                      # no key in conf: S3A takes AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY from the process
    spark:
      conf:
        spark.hadoop.fs.s3a.endpoint: {endpoint}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.endpoint.region: us-east-1
        spark.sql.warehouse.dir: s3a://{bucket}/{prefix}/chain
  batch:                      # apply through spark-submit
    submit:
      master: local[2]
      conf:
        spark.hadoop.fs.s3a.endpoint: {endpoint}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.access.key: {key}
        spark.hadoop.fs.s3a.secret.key: ${{env:LAKE_SECRET}}
        spark.sql.warehouse.dir: s3a://{bucket}/{prefix}/batch
        spark.sql.shuffle.partitions: 2
"""

# A table of its own for the spark-submit environment (its own catalog), and one that `sql` appends to while apply
# rewrites it.
BATCH = """\
table: jobs.runs
columns:
  - name: id
    type: bigint
"""
# One after the other, as long as an apply's data check and rewrite take on a loaded machine.
INSERTS = 6
TICKS = """\
table: shop.ticks
columns:
  - name: id
    type: bigint
  - name: reading
    type: {reading}
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

    def run(self, *args: str, expect: int = 0, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        done = self.cli.run(list(args), env={"LAKE_SECRET": self.s3.secret_key, **(env or {})})
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

    def ready(self) -> None:
        """The tables applied, for a test run on its own (-k): in the module's order the first test did it."""
        if not self.outputs:
            self.run("apply", "--yes", "--allow", "rewrite,breaking")

    def use(self, path: str) -> None:
        self.cli.use(path)


@pytest.fixture(scope="module")
def lake(s3: S3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("lake")
    prefix = "lake"
    (root / "delta-sync.yaml").write_text(
        PROJECT.format(endpoint=s3.endpoint, key=s3.access_key, bucket=s3.bucket, prefix=prefix)
    )
    lake = Lake(Cli(root, ENGINE, env="lake"), s3, prefix)
    lake.write("shop/orders.yaml", ORDERS.format(comment="Orders placed in the web shop", more=""))
    lake.write("shop/events.yaml", lake.events("string"))
    try:
        yield lake
    finally:
        lake.cli.close()


def test_readme_flow_external_table_rewrite_backfill_and_import_converge_on_s3(lake: Lake) -> None:
    bucket, prefix = lake.s3.bucket, lake.prefix
    lake.use(ENGINE)
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

    lake.use(IN_PROCESS)
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


def test_drift_adopt_a_rehearsed_plan_and_its_rollback_converge_on_s3(lake: Lake) -> None:
    lake.use(IN_PROCESS)
    lake.ready()
    bucket, prefix = lake.s3.bucket, lake.prefix
    spec = lake.root / "specs" / "shop" / "orders.yaml"
    # A change by hand: drift names it, adopt writes it into the spec.
    lake.run("sql", "COMMENT ON TABLE shop.orders IS 'Orders, as the shop team sees them'")
    drifted = lake.run("drift", expect=2)
    assert "shop.orders" in drifted.stdout
    assert "Orders, as the shop team sees them" in drifted.stdout
    lake.run("adopt", "--yes")
    adopted = spec.read_text()
    assert "comment: Orders, as the shop team sees them" in adopted

    # A new column, rehearsed on shallow clones in the S3 warehouse, saved, applied, then rolled back.
    lake.use(ENGINE)
    spec.write_text(adopted.replace("checks:", "  - name: channel\n    type: string\nchecks:"))
    plan = lake.root / "rehearsed.json"
    planned = lake.run("plan", "--rehearse", "--out", str(plan))
    assert "# rehearsal: passed on a shallow clone" in planned.stdout
    assert "+ column channel string" in planned.stdout
    assert "shop.events" not in planned.stdout  # adopt left nothing else to do
    # The one sentence on writers from other clusters, said by a plan with changes on S3.
    assert "Note: Delta commits to tables on s3a://, s3:// are safe from one Spark driver at a time only" in " ".join(
        planned.stderr.split()
    )
    lake.run("apply", str(plan), "--yes")
    assert [k for k in lake.s3.keys(bucket, prefix) if "__delta_sync_rehearsal" in k] == []  # no clone left
    undone = lake.run("rollback", str(plan), "--yes")
    assert "restore table shop.orders" in undone.stdout

    # Back to the adopted spec: empty only if the rollback took the column out again.
    spec.write_text(adopted)
    again = lake.run("plan")
    assert "No changes." in again.stdout + again.stderr
    assert "Note:" not in again.stderr  # an empty plan commits nothing


def test_doctor_reaches_the_bucket_and_says_in_one_sentence_when_it_cannot(lake: Lake) -> None:
    lake.use(ENGINE)
    lake.ready()
    found = json.loads(lake.run("doctor", "--format", "json").stdout)
    checks = {c["title"]: c for c in found["checks"]}
    bucket = checks[f"Bucket {lake.s3.bucket}"]
    assert bucket["status"] == "ok", bucket
    assert f"s3a://{lake.s3.bucket}/{lake.prefix}/warehouse reachable at {lake.s3.endpoint}" in bucket["message"]
    assert checks["Concurrent writers"]["status"] == "warning"
    assert checks["Local catalog"]["status"] == "ok"

    stray = json.loads(lake.run("doctor", "--env", "stray", "--format", "json", expect=1).stdout)
    absent = f"absent-{lake.prefix}"
    assert [(c["title"], c["message"], c["fix"]) for c in stray["checks"] if c["status"] == "failure"] == [
        (
            f"Bucket {absent}",
            f"there is no bucket {absent} at {lake.s3.endpoint} (s3a://{absent}/warehouse is on it)",
            "create the bucket, or fix the location that names it (spark.sql.warehouse.dir or a spec's location:)",
        )
    ]
    # Spark is not started on a warehouse it cannot reach.
    catalog = next(c for c in stray["checks"] if c["title"] == "Local catalog")
    assert catalog["message"] == f"{lake.root / '.delta-sync' / 'stray'} not opened: Bucket {absent} failed (above)"


def test_credentials_from_the_process_environment_reach_s3a(lake: Lake) -> None:
    # No key in the environment's conf: what S3A writes with comes from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
    # of the engine the command starts, as AWS's default chain gives them.
    lake.use(ENGINE)
    table = f"s3a://{lake.s3.bucket}/{lake.prefix}/chain/direct"
    aws = {"AWS_ACCESS_KEY_ID": lake.s3.access_key, "AWS_SECRET_ACCESS_KEY": "aws-env-secret"}
    lake.run("sql", "--env", "chain", f"CREATE TABLE delta.`{table}` USING delta AS SELECT 1 AS id", env=aws)
    assert f"{lake.prefix}/chain/direct/_delta_log/00000000000000000000.json" in lake.s3.keys(prefix=lake.prefix)
    state = lake.cli.engine("chain")
    assert state is not None
    environ = Path(f"/proc/{state['jvm_pid']}/environ").read_bytes()
    assert b"AWS_SECRET_ACCESS_KEY=aws-env-secret" in environ.split(b"\0")
    lake.run("engine", "stop", "--env", "chain")


def test_spark_submit_gets_the_secret_on_no_command_line(lake: Lake) -> None:
    lake.use(IN_PROCESS)  # spark-submit's processes are the same on both paths
    secret = lake.s3.secret_key
    folder = lake.root / "batch-specs"
    folder.mkdir(exist_ok=True)
    (folder / "runs.yaml").write_text(BATCH)
    process = lake.cli.start(["apply", str(folder), "--env", "batch", "--yes"], env={"LAKE_SECRET": secret})
    # Every process under the command while it runs: its argv and, for spark-submit's, its environment.
    seen: dict[int, tuple[bytes, bytes]] = {}
    while process.poll() is None:
        for pid in _with_descendants([process.pid])[1:]:
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            seen[pid] = (command, environ)
        time.sleep(0.1)
    out, err = process.communicate()
    lake.outputs += [out, err]
    assert process.returncode == 0, out + err
    assert "Applied plan" in err
    assert f"{lake.prefix}/batch/jobs.db/runs/_delta_log/00000000000000000000.json" in lake.s3.keys(prefix=lake.prefix)

    assert [pid for pid, (command, _env) in seen.items() if secret.encode() in command] == []
    # spark-submit's script, its JVM and the driver's Python (each names the entrypoint; the JVM of the plan made
    # first, in-process, is delta-sync's own and does not): not the variable nor its value in their environment.
    job = {pid: found for pid, found in seen.items() if b"entrypoint.py" in found[0]}
    jvms = [command for command, _env in job.values() if b"org.apache.spark.deploy.SparkSubmit" in command]
    assert jvms, "spark-submit's JVM was not seen"
    for _command, environ in job.values():
        assert secret.encode() not in environ
        assert b"LAKE_SECRET=" not in environ
    for command in jvms:
        # The file it read the secret from is gone with it.
        parts = command.split(b"\0")
        assert b"--properties-file" in parts, parts
        assert not Path(parts[parts.index(b"--properties-file") + 1].decode()).exists()


def test_inserts_racing_a_rewrite_in_one_engine_are_all_kept(lake: Lake) -> None:
    lake.use(ENGINE)
    lake.ready()
    lake.write("shop/ticks.yaml", TICKS.format(reading="string"))
    lake.run("apply", "--yes")
    lake.run("sql", "INSERT INTO shop.ticks VALUES (0, '0')")
    inserted: list[tuple[int, float]] = []

    def insert() -> None:
        for i in range(1, INSERTS + 1):
            lake.run("sql", f"INSERT INTO shop.ticks VALUES ({i}, '{i * 10}')")
            inserted.append((i, time.monotonic()))

    writer = threading.Thread(target=insert)
    writer.start()
    time.sleep(1)  # the first INSERT under way
    lake.write("shop/ticks.yaml", TICKS.format(reading="int\n    using: CAST(reading AS int)"))
    started = time.monotonic()
    rewritten = lake.cli.run(["apply", "--yes", "--allow", "rewrite,breaking"], env={"LAKE_SECRET": lake.s3.secret_key})
    ended = time.monotonic()
    writer.join()
    lake.outputs += [rewritten.stdout, rewritten.stderr]
    if rewritten.returncode != 0:  # conflicts outlasted apply's retries: it said so, and a re-run converges
        assert "conflict" in rewritten.stderr.lower(), rewritten.stderr
        lake.run("apply", "--yes", "--allow", "rewrite,breaking")
    assert "No changes." in lake.run("plan").stdout
    rows = json.loads(lake.run("sql", "SELECT id, reading FROM shop.ticks ORDER BY id", "--format", "json").stdout)
    assert [i for i, _at in inserted] == list(range(1, INSERTS + 1))
    assert [i for i, at in inserted if started < at < ended], "no INSERT committed while apply ran"
    assert [[r["id"], r["reading"]] for r in rows["rows"]] == [[i, i * 10] for i in range(INSERTS + 1)]


def test_the_secret_is_in_no_output_file_or_process(lake: Lake) -> None:
    """Over every output of the story (both paths) and the files it left; then the engine's processes."""
    lake.use(ENGINE)
    if not (lake.root / "plan.json").is_file():  # run on its own (-k): the commands that start Spark on S3 first
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
    assert {"engine/start.json", "engine/engine.json", "logs/engine.log"} <= seen, sorted(seen)
    assert [p for p in files if secret.encode() in p.read_bytes()] == []

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
