"""A team's week with delta-sync, as real processes, through the warm engine, as at a terminal (tests/spark/cli.py).
Its in-process counterparts, as on CI, are the command-line tests run in the test process on the shared session
(test_saved_plans.py, test_keys.py, test_import_drift.py, test_views.py, test_lifecycle.py): a second run of this
story in-process would cost ~190 s of CI for no path they do not take. One project for the whole story, so that
one engine serves it: keys and `check`, a view, a saved plan (`plan --out`, `show`, `apply FILE`), a table
renamed and one dropped by a tombstone, a column added by hand seen by `drift` and written back by `import`.
Each step's exit code and the line a user reads are checked; a second plan after each apply is empty."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.spark.cli import ENGINE, Cli

CUSTOMERS = """\
table: u.customers
columns:
  - {name: id, type: bigint, nullable: false}
  - {name: name, type: string}
primary_key: [id]
"""
ORDERS = """\
table: u.orders
columns:
  - {name: id, type: bigint, nullable: false}
  - {name: customer_id, type: bigint}
  - {name: amount, type: "decimal(10,2)"}
primary_key: [id]
foreign_keys:
  - columns: [customer_id]
    references: u.customers(id)
"""
NAMES = """\
view: u.customer_names
sql: SELECT id, name FROM u.customers
"""
SCRATCH = """\
table: u.scratch
columns:
  - {name: id, type: bigint}
"""


def ok(done: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_keys_views_saved_plans_lifecycle_import_and_drift(tmp_path: Path) -> None:
    cli = Cli(tmp_path, ENGINE)
    try:
        _week(cli)
    finally:
        cli.close()


def _week(cli: Cli) -> None:
    specs = cli.root / "specs"
    specs.mkdir()
    for name, text in {"customers": CUSTOMERS, "orders": ORDERS, "customer_names": NAMES, "scratch": SCRATCH}.items():
        (specs / f"{name}.yaml").write_text(text)

    created = ok(cli.run(["apply", "specs", "--yes"]))
    assert "Applied" in created.stderr
    empty = ok(cli.run(["plan", "specs", "--detailed-exitcode"]))
    assert "No changes. 3 table(s) and 1 view match the specs." in empty.stdout

    # Keys hold on data that keeps them, and `check` names the rows that break them.
    ok(cli.run(["sql", "INSERT INTO u.customers VALUES (1, 'Ann'), (2, 'Bo')"]))
    ok(cli.run(["sql", "INSERT INTO u.orders VALUES (10, 1, 5.00), (11, 3, 7.50)"]))
    broken = ok(cli.run(["check", "specs", "--format", "json"]), 3)
    found = json.loads(broken.stdout)
    assert "u.orders" in json.dumps(found), broken.stdout
    ok(cli.run(["sql", "UPDATE u.orders SET customer_id = 2 WHERE id = 11"]))
    ok(cli.run(["check", "specs"]))

    # A saved plan: a view's new column, a table renamed, a tombstone; `show` needs no Spark; `apply FILE` runs it.
    (specs / "customer_names.yaml").write_text(NAMES.replace("SELECT id, name", "SELECT id, name, upper(name) AS loud"))
    (specs / "orders.yaml").write_text(ORDERS.replace("table: u.orders\n", "table: u.sales\nrenamed_from: u.orders\n"))
    (specs / "scratch.yaml").write_text("table: u.scratch\ndrop: true\n")
    allow = ["--allow", "breaking,destructive"]
    saved = ok(cli.run(["plan", "specs", "--out", "plan.json", *allow]))
    shown = ok(cli.run(["show", "plan.json"]))
    assert shown.stdout == saved.stdout
    for change in ("~ rename table u.orders -> u.sales", "- drop table u.scratch", "~ replace view u.customer_names"):
        assert change in shown.stdout, shown.stdout
    ok(cli.run(["apply", "plan.json", "--yes", *allow]))
    ok(cli.run(["apply", "plan.json", "--yes", *allow]), 4)  # applied once: stale the second time
    ok(cli.run(["plan", "specs", "--detailed-exitcode"]))
    rows = json.loads(ok(cli.run(["sql", "SELECT * FROM u.customer_names ORDER BY id", "-f", "json"])).stdout)
    assert rows["rows"] == [{"id": 1, "name": "Ann", "loud": "ANN"}, {"id": 2, "name": "Bo", "loud": "BO"}]

    # A column added by hand: `drift` shows it (exit 2); `import` writes it back, and the plan is empty again.
    ok(cli.run(["sql", "ALTER TABLE u.customers ADD COLUMNS (email string)"]))
    drift = ok(cli.run(["drift", "specs"]), 2)
    assert "u.customers" in drift.stdout, drift.stdout
    assert "email" in drift.stdout, drift.stdout
    (specs / "customers.yaml").unlink()
    ok(cli.run(["import", "u.customers", "--out", "specs"]))
    (written,) = [p for p in specs.rglob("*.yaml") if "table: u.customers" in p.read_text()]
    assert "email" in written.read_text()
    ok(cli.run(["drift", "specs"]))
    ok(cli.run(["plan", "specs", "--detailed-exitcode"]))
