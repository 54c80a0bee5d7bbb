"""CLI behaviour with a fake catalog: exit codes, stdout/stderr split, no JVM for offline commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.catalog import ProbeResult, QueryResult, StatementFailed
from delta_sync.model.errors import SpecProblem
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, Column, ForeignKey, PrimaryKey, SchemaName, Table, TableName
from delta_sync.review import environments
from delta_sync.specs.spec_files import load_specs
from tests.unit.builders import WithoutViews

runner = CliRunner()

ORDERS = """\
table: s.orders
comment: Orders
columns:
  - name: id
    type: long
    nullable: false
  - name: amount
    type: decimal(18,2)
checks:
  positive: amount > 0
"""


class FakeCatalog(WithoutViews):
    """Serves `state`; after a successful execute it serves `after` (what apply should produce)."""

    def __init__(self, state: CatalogState, after: CatalogState | None = None, fail_on: str = "") -> None:
        self.state = state
        self.after = after or state
        self.fail_on = fail_on
        self.executed: list[str] = []

    def read(self, names: Iterable[TableName]) -> CatalogState:
        return self.state

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return sorted(n for n in self.state.tables if n.schema_name == schema)

    def check_problems(self, work: Sequence[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
        return []

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        return []

    def probe_keys(
        self, table: TableName, relation: str, keys: Sequence[tuple[PrimaryKey | ForeignKey, str | None]]
    ) -> list[ProbeResult]:
        return [ProbeResult(table, key.name, 0) for key, _parent in keys]

    def execute(self, statement: str, metadata: str | None = None) -> None:
        if self.fail_on and self.fail_on in statement:
            raise StatementFailed(
                EngineFailure(
                    "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
                    "[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] 4 rows violate",
                    {"numRows": "4", "tableName": "spark_catalog.s.orders", "checkConstraint": "amount > 0"},
                )
            )
        self.executed.append(statement)
        self.state = self.after

    def query(self, statement: str, limit: int) -> QueryResult:
        return QueryResult(("a", "b"), ((1, "x"), (None, "y")))


def specs(tmp_path: Path, text: str = ORDERS) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "orders.yaml").write_text(text)
    return folder


def use(monkeypatch: pytest.MonkeyPatch, catalog: FakeCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)


def existing(folder: Path) -> CatalogState:
    from delta_sync.specs.spec_files import load_specs

    desired = load_specs(folder)
    return CatalogState(tables=dict(desired.tables), schemas=frozenset({SchemaName(None, "s")}))


def test_plan_new_table_exit_codes_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    use(monkeypatch, FakeCatalog(CatalogState(tables={})))
    result = runner.invoke(cli.app, ["plan", str(folder)])
    assert result.exit_code == 0, result.output
    assert "+ create table s.orders" in result.stdout
    assert "Plan: 1 to create, 0 to change, 0 unchanged." in result.stdout

    assert runner.invoke(cli.app, ["plan", str(folder), "--detailed-exitcode"]).exit_code == 2
    data = json.loads(runner.invoke(cli.app, ["plan", str(folder), "--format", "json"]).stdout)
    assert [a["kind"] for a in data["actions"]] == ["CreateSchema", "CreateTable", "AddCheck"]
    assert data["summary"] == {"create": 1, "change": 0, "unchanged": 0, "blocked": 0, "drop": 0}


def test_plan_no_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    use(monkeypatch, FakeCatalog(existing(folder)))
    result = runner.invoke(cli.app, ["plan", str(folder), "--detailed-exitcode"])
    assert result.exit_code == 0
    assert "No changes. 1 table(s) match the specs." in result.stdout


def test_blocked_plan_exits_3_and_apply_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    state = existing(folder)
    name = TableName(None, "s", "orders")
    table = state.tables[name]
    # The spec's `id` is NOT NULL with no `backfill:`, and the table may hold rows: blocked.
    without_id = Table(name, table.columns[1:], table.comment, table.checks)
    fake = FakeCatalog(CatalogState({name: without_id}, state.schemas))
    use(monkeypatch, fake)
    result = runner.invoke(cli.app, ["plan", str(folder)])
    assert result.exit_code == 3
    assert "! blocked s.orders" in result.stdout
    assert "fix:" in result.stdout
    result = runner.invoke(cli.app, ["apply", str(folder), "--yes"])
    assert result.exit_code == 3
    assert fake.executed == []


def test_apply_runs_statements_and_confirms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    fake = FakeCatalog(CatalogState(tables={}), after=existing(folder))
    use(monkeypatch, fake)
    result = runner.invoke(cli.app, ["apply", str(folder), "--yes"])
    assert result.exit_code == 0, result.output
    assert fake.executed[0] == "CREATE SCHEMA IF NOT EXISTS `s`"
    assert fake.executed[2] == "ALTER TABLE `s`.`orders` ADD CONSTRAINT positive CHECK (amount > 0)"
    assert re.search(r"Applied 3 statements \(plan [0-9a-f]{16}\); all 1 table\(s\) match the specs\.", result.stderr)


def test_apply_without_yes_on_non_tty_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    fake = FakeCatalog(CatalogState(tables={}))
    use(monkeypatch, fake)
    result = runner.invoke(cli.app, ["apply", str(folder)])
    assert result.exit_code == 1
    assert "pass --yes" in result.stderr
    assert fake.executed == []


def test_failed_statement_is_reported_without_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    fake = FakeCatalog(CatalogState(tables={}), fail_on="ADD CONSTRAINT")
    use(monkeypatch, fake)
    result = runner.invoke(cli.app, ["apply", str(folder), "--yes"])
    assert result.exit_code == 1
    assert "apply stopped at statement 3 of 3 (s.orders)" in result.stderr
    assert "4 existing rows in s.orders violate the new CHECK constraint `positive`" in result.stderr
    assert "already applied (2)" in result.stderr
    assert "Traceback" not in result.output


def test_validate_reports_every_file(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "a.yaml").write_text("table: s.a\ncolumns:\n  - name: x\n    type: nope\n")
    (folder / "b.yaml").write_text("table: s.b\ncolumns: [\n")
    (folder / "c.yaml").write_text("table: s.c\ncolumns:\n  - name: x\n    type: int\n    nulable: true\n")
    result = runner.invoke(cli.app, ["validate", str(folder)])
    assert result.exit_code == 1
    for where in (f"{folder / 'a.yaml'}:4", f"{folder / 'b.yaml'}:", f"{folder / 'c.yaml'}:5"):
        assert where in result.stderr
    assert "Traceback" not in result.output


def test_sql_json(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, FakeCatalog(CatalogState(tables={})))
    result = runner.invoke(cli.app, ["sql", "SELECT 1", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["rows"] == [{"a": 1, "b": "x"}, {"a": None, "b": "y"}]


def test_schema_prints_json_schema() -> None:
    result = runner.invoke(cli.app, ["schema"])
    assert result.exit_code == 0
    assert "columns" in json.loads(result.stdout)["oneOf"][0]["properties"]


def _run_isolated(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["validate", "specs"],
        ["lint", "specs"],
        ["ddl", "s.orders", "specs"],
        ["graph", "specs"],
        ["plan", "--help"],
    ],
)
def test_offline_commands_never_load_spark(tmp_path: Path, args: list[str]) -> None:
    specs(tmp_path)
    code = f"""
        import sys
        from delta_sync.cli import main as cli
        try:
            cli.app({args!r})
        except SystemExit as stop:
            code = stop.code
        loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))
        print('LOADED', loaded, 'EXIT', code)
    """
    done = _run_isolated(code, tmp_path)
    assert "LOADED [] EXIT 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("args", [["--help"], ["validate", "specs"], ["graph", "specs"], ["plan", "--help"]])
def test_help_and_validate_never_load_the_review(tmp_path: Path, args: list[str]) -> None:
    """The commands import the review, the plan file and the renderers inside the commands that use them, so
    that `--help` and `validate` start without them."""
    specs(tmp_path)
    code = f"""
        import sys
        from delta_sync.cli import main as cli
        try:
            cli.app({args!r})
        except SystemExit as stop:
            code = stop.code
        heavy = ('delta_sync.review.pipeline', 'delta_sync.review.library', 'delta_sync.planfile.document')
        print('LOADED', sorted(m for m in heavy if m in sys.modules), 'EXIT', code)
    """
    done = _run_isolated(code, tmp_path)
    assert "LOADED [] EXIT 0" in done.stdout, done.stdout + done.stderr


def test_an_environments_allow_list_lets_its_hazards_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(tmp_path)
    state = existing(folder)
    name = TableName(None, "s", "orders")
    table = state.tables[name]
    with_note = Table(name, (*table.columns, Column("note", "string")), table.comment, table.checks)
    use(monkeypatch, FakeCatalog(CatalogState({name: with_note}, state.schemas)))
    (tmp_path / "delta-sync.yaml").write_text(
        "envs:\n  dev: {}\n  prod:\n    allow: [destructive, breaking, irreversible]\ndefault_env: dev\n"
    )
    monkeypatch.chdir(tmp_path)

    blocked = runner.invoke(cli.app, ["plan"])  # the project's specs/ and default environment
    assert blocked.exit_code == 3, blocked.output
    assert "destructive" in blocked.stdout
    allowed = runner.invoke(cli.app, ["plan", "--env", "prod", "--detailed-exitcode"])
    assert allowed.exit_code == 2, allowed.output
    assert "destructive (allowed)" in allowed.stdout
    unknown = runner.invoke(cli.app, ["plan", "--env", "staging"])
    assert unknown.exit_code == 1
    assert "staging" in unknown.stderr
    assert "dev" in unknown.stderr
    assert "prod" in unknown.stderr


def test_a_saved_plan_is_refused_when_the_specs_changed_since(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    folder = specs(tmp_path)
    schemas = frozenset({SchemaName(None, "s")})
    after = CatalogState(tables=load_specs(folder).tables, schemas=schemas)
    catalog = FakeCatalog(CatalogState(tables={}, schemas=schemas), after)
    use(monkeypatch, catalog)
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json"])
    assert planned.exit_code == 0, planned.output
    saved = json.loads((tmp_path / "plan.json").read_text())
    assert saved["specs"] == "specs"

    (folder / "orders.yaml").write_text(ORDERS.replace("comment: Orders", "comment: All orders"))
    refused = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert refused.exit_code == 4, refused.output
    assert f"the specs in specs/ changed since plan {saved['plan_id']} was made" in refused.output
    assert catalog.executed == []

    # Put back as reviewed: the same plan runs, from any working directory of the project.
    (folder / "orders.yaml").write_text(ORDERS)
    monkeypatch.chdir(folder)
    applied = runner.invoke(cli.app, ["apply", str(tmp_path / "plan.json"), "--yes"])
    assert applied.exit_code == 0, applied.output
    assert catalog.executed
    assert "re-read: 1 table(s) match the plan" in applied.stderr
