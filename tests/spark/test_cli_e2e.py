"""The real command line in separate processes: the README flow, logs kept off the terminal,
a locked catalog, and a failed apply that is re-run to convergence; each test both ways a user's commands go
(tests/spark/cli.py): through the warm engine, as at a terminal, and in-process, as on CI (a foreign Spark
holding Derby: in-process here, through the engine in test_submit.py; the failed apply: one story, its failing
step in-process, the rest through the engine)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from delta_sync.spark.catalog import SparkCatalog
from tests.spark.cli import ENGINE, IN_PROCESS, Cli

REPO = Path(__file__).resolve().parents[2]
Runner = Callable[..., subprocess.CompletedProcess[str]]
NOISE = ("WARN ", "INFO ", "at org.apache", "Traceback", "Ivy", ":: resolving", "log4j", "Py4J")


def without_progress(stderr: str) -> list[str]:
    """stderr's lines but the timestamped progress lines (`[  3.1s] Reading the catalog...`)."""
    return [line for line in stderr.strip().splitlines() if not re.match(r"\[\s*\d+\.\d+s\] ", line)]


def assert_quiet(done: subprocess.CompletedProcess[str]) -> None:
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.fixture
def shop(cli: Cli) -> Path:
    shutil.copytree(REPO / "specs", cli.root / "specs")
    return cli.root


@pytest.fixture
def run(cli: Cli) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return cli.run(args, cwd=cwd, env=env)

    return run


def test_readme_flow_creates_example_tables_then_plan_is_empty(shop: Path, run: Runner, tmp_path: Path) -> None:
    # The JVM's temporary folder of its own, to see what the command leaves there.
    java_tmp = tmp_path / "java-tmp"
    java_tmp.mkdir()
    java = {"JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={java_tmp}"}  # the same engine for both commands
    applied = run(["apply", "specs/", "--yes"], cwd=shop, env=java)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert_quiet(applied)
    assert "Applied" in applied.stderr
    home = shop / ".delta-sync" / "local"
    assert (home / "metastore_db").is_dir()
    # Hive's session folder for downloads is the catalog's, not a new one in the temporary folder per command.
    assert (home / "tmp" / "hive-resources").is_dir()
    assert [p.name for p in java_tmp.iterdir() if p.name.endswith("_resources")] == []
    assert sorted(p.name for p in (home / "warehouse" / "shop.db").iterdir()) == [
        "customers",
        "order_items",
        "orders",
        "products",
    ]

    # From a subfolder, the same project catalog is found: nothing to do.
    replanned = run(["plan", ".", "--detailed-exitcode"], cwd=shop / "specs", env=java)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr
    assert "No changes. 4 table(s) match the specs." in replanned.stdout
    assert_quiet(replanned)
    assert not (shop / "specs" / ".delta-sync").exists()
    assert not (shop / "specs" / "metastore_db").exists()
    assert not (shop / "derby.log").exists()


@pytest.mark.parametrize("cli_path", [ENGINE])  # and in-process from the failing apply on (Cli.use)
def test_failed_apply_is_explained_and_rerun_converges(cli: Cli, shop: Path, run: Runner) -> None:
    assert run(["apply", "specs/", "--yes"], cwd=shop).returncode == 0
    inserted = run(
        [
            "sql",
            "INSERT INTO shop.products VALUES ('A-1', 'Mug', 'kitchen', 0.50, map('colour', 'red')),"
            " ('A-2', 'Cup', 'kitchen', 3.50, NULL)",
        ],
        cwd=shop,
    )
    assert inserted.returncode == 0, inserted.stderr
    spec = shop / "specs" / "shop" / "products.yaml"
    spec.write_text(
        spec.read_text().replace("list_price IS NULL OR list_price > 0", "list_price > 1")
        + "  list_price_cents: list_price = round(list_price, 2)\n"
    )
    # --no-probes: plan-time data checks would block this; here the apply-time failure is under test. In-process, as
    # on CI, where Spark's own report of the failure would reach the terminal if anything let it.
    cli.use(IN_PROCESS)
    failed = run(["apply", "specs/", "--yes", "--no-probes"], cwd=shop)
    assert failed.returncode == 1
    assert_quiet(failed)
    assert "shop.products" in failed.stderr
    assert "list_price_positive" in failed.stderr
    assert "1 existing row in shop.products violates" in failed.stderr
    # The old check was dropped and the new cents check added before the failing statement.
    assert "already applied (2)" in failed.stderr

    cli.use(ENGINE)
    fixed = run(["sql", "UPDATE shop.products SET list_price = 4.00 WHERE sku = 'A-1'"], cwd=shop)
    assert fixed.returncode == 0, fixed.stderr
    rerun = run(["apply", "specs/", "--yes"], cwd=shop)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    rows = run(["sql", "SELECT sku, list_price FROM shop.products ORDER BY sku", "--format", "json"], cwd=shop)
    assert '"sku": "A-1"' in rows.stdout
    assert '"list_price": "4.00"' in rows.stdout
    assert run(["plan", "specs/", "--detailed-exitcode"], cwd=shop).returncode == 0


def test_catalog_in_use_by_another_delta_sync_is_one_sentence(
    catalog: SparkCatalog, local_home: Path, shop: Path, run: Runner
) -> None:
    assert catalog.spark is not None  # this process now holds the catalog
    done = run(["plan", "specs/"], cwd=shop, env={"DELTA_SYNC_HOME": str(local_home)})
    assert done.returncode == 1
    assert "is in use by another delta-sync process" in done.stderr
    assert len(without_progress(done.stderr)) == 1, done.stderr
    assert_quiet(done)


HOLDER = """
    import sys
    from pathlib import Path
    from pyspark.sql import SparkSession
    home = Path(sys.argv[1])
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true")
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={home}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", (home / "warehouse").as_uri())
        .getOrCreate()
    )
    spark.sql("SHOW SCHEMAS").collect()
    print("ready", flush=True)
    sys.stdin.read()
"""


@pytest.mark.parametrize("cli_path", [IN_PROCESS])  # through the engine: test_submit.py's notebook that came first
def test_metastore_locked_by_a_foreign_spark_is_one_sentence(shop: Path, tmp_path: Path, run: Runner) -> None:
    home = tmp_path / "foreign"
    home.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        done = run(["plan", "specs/"], cwd=shop, env={"DELTA_SYNC_HOME": str(home)})
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=120)
    assert done.returncode == 1
    assert "is in use by another Spark process" in done.stderr, done.stderr
    assert len(without_progress(done.stderr)) == 1, done.stderr
    assert_quiet(done)
