"""`delta-sync show PLAN_FILE`: a saved plan shown, in every format, exactly as `plan` printed it when saving
it (golden files), in a process that starts no JVM and loads no pyspark; neither shows rows of a table."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.catalog import ProbeResult, StatementFailed
from delta_sync.model.errors import SpecProblem
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, Column, SchemaName, Table, TableName
from delta_sync.review import environments, pipeline
from tests.unit.builders import WithoutViews

GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE = os.environ.get("DELTA_SYNC_UPDATE_GOLDEN") == "1"
FORMATS = ("text", "json", "sql", "markdown")

ORDERS = """\
table: s.orders
comment: Orders
columns:
  - name: id
    type: bigint
    nullable: false
  - name: amount
    type: decimal(18,2)
  - name: region
    type: string
checks:
  positive: amount > 0
properties:
  team: sales
"""

ITEMS = """\
table: s.items
columns:
  - name: id
    type: bigint
"""

NAME = TableName(None, "s", "orders")


class Catalog(WithoutViews):
    """The orders table as it is (no `region`, no rule, a `note` the spec drops, rows that break the rule)."""

    def read(self, names: object) -> CatalogState:
        table = Table(
            NAME,
            (Column("id", "bigint", nullable=False), Column("amount", "decimal(18,2)"), Column("note", "string")),
            comment="Orders",
            num_files=3,
            version=7,
        )
        return CatalogState({NAME: table}, frozenset({SchemaName(None, "s")}))

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return [NAME]

    def check_problems(self, work: object) -> list[SpecProblem]:
        return []

    def statement_problems(self, statements: object) -> list[str]:
        return []

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: object = None
    ) -> list[ProbeResult]:
        samples = ((("id", "4"), ("amount", "-1.00")), (("id", "9"), ("amount", "0.00")))
        return [ProbeResult(table, c.name, 2, samples) for c in checks]

    def probe_keys(self, table: TableName, relation: str, keys: object) -> list[ProbeResult]:
        return []


def saved_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    """`plan --out` in every format (one plan file, rewritten each time: the same plan but its id)."""
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "orders.yaml").write_text(ORDERS)
    (folder / "items.yaml").write_text(ITEMS)
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: Catalog())
    monkeypatch.setattr(pipeline, "new_plan_id", lambda: "0123456789abcdef")
    monkeypatch.chdir(tmp_path)
    printed = {}
    for fmt in FORMATS:
        done = CliRunner().invoke(
            cli.app,
            ["plan", "specs", "--out", "plan.json", "--format", fmt, "--allow", "breaking"],
            env={"COLUMNS": "200"},
        )
        assert done.exit_code == 3, done.output  # blocked: the data breaks the rule; the drop is destructive
        printed[fmt] = done.stdout
    return tmp_path / "plan.json", printed


def show(path: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    """`delta-sync show` in a process without java (no JAVA_HOME, nothing on PATH but Python) that reports
    whether pyspark was ever imported."""
    script = (
        "import runpy, sys\n"
        f"sys.argv = ['delta-sync', 'show', {str(path)!r}, '--format', {fmt!r}]\n"
        "try:\n"
        "    runpy.run_module('delta_sync', run_name='__main__')\n"
        "finally:\n"
        "    if any(m.split('.')[0] in ('pyspark', 'py4j', 'delta') for m in sys.modules):\n"
        "        print('A JVM LIBRARY WAS LOADED', file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "DELTA_SYNC_PLAN_KEY")}
    env.update({"PATH": str(Path(sys.executable).parent), "COLUMNS": "200"})
    return subprocess.run(
        [sys.executable, "-c", script], cwd=path.parent, env=env, capture_output=True, text=True, timeout=120
    )


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN_DIR / name
    if UPDATE:
        path.write_text(actual, encoding="utf-8", newline="\n")
        return
    assert path.is_file(), f"{path} is missing: run with DELTA_SYNC_UPDATE_GOLDEN=1 to create it"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs (DELTA_SYNC_UPDATE_GOLDEN=1 rewrites it)"


def test_show_prints_every_format_as_plan_did_without_a_jvm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, printed = saved_plan(tmp_path, monkeypatch)
    for fmt in FORMATS:
        shown = show(path, fmt)
        assert "A JVM LIBRARY WAS LOADED" not in shown.stderr
        assert "Traceback" not in shown.stderr, shown.stderr
        assert shown.returncode == 3, shown.stderr  # blocked, as plan said
        assert shown.stdout == printed[fmt], fmt
        check_golden(f"show.{'txt' if fmt == 'text' else 'md' if fmt == 'markdown' else fmt}", shown.stdout)
    text = printed["text"]
    assert "2 rows violate" in text
    # A plan file holds no row of any table: what plan --out prints leaves the sample rows out, as show does.
    assert "-1.00" not in text
    assert "-1.00" not in path.read_text()
    assert "Plan 0123456789abcdef for environment local: unsigned" in show(path, "text").stderr


def test_show_refuses_what_is_not_a_plan(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    done = CliRunner().invoke(cli.app, ["show", str(tmp_path / "x.json")])
    assert done.exit_code == 1
    assert "is not a delta-sync plan file" in done.stderr
    missing = CliRunner().invoke(cli.app, ["show", str(tmp_path / "nope.json")])
    assert missing.exit_code == 1
    assert "no such plan file" in missing.stderr


class Refusing(Catalog):
    """The same catalog, taking a rehearsal: clones are made, and Delta refuses the plan's ADD COLUMNS."""

    def execute(self, statement: str, metadata: str | None = None) -> None:
        if "ADD COLUMNS" in statement:
            raise StatementFailed(EngineFailure("DELTA_X", "[DELTA_X] refused here."))

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return []


def test_show_prints_a_rehearsed_plan_as_plan_did(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "orders.yaml").write_text(ORDERS)
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: Refusing())
    monkeypatch.chdir(tmp_path)
    args = ["plan", "specs", "--out", "plan.json", "--rehearse", "--allow", "breaking"]
    done = CliRunner().invoke(cli.app, args, env={"COLUMNS": "200"})
    assert done.exit_code == 3, done.output
    assert "# rehearsal: failed on a shallow clone in" in done.stdout
    assert "blocked (rehearsal): Delta refused `ALTER TABLE `s`.`orders` ADD COLUMNS" in done.stdout
    assert "DELTA_X: refused here (rehearsed on a shallow clone of the table)" in done.stdout
    shown = show(tmp_path / "plan.json", "text")
    assert shown.returncode == 3, shown.stderr
    assert shown.stdout == done.stdout
