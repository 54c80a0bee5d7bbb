"""Every documented exit code of every command, and the bad-input matrix, as one table (no JVM).

Exit codes: 0 success / no changes; 1 error (bad input, usage, a statement failed); 2 changes pending
(`plan --detailed-exitcode`) or drift (`drift`); 3 blocked; 4 a saved plan refused (stale, edited,
another environment). The catalog is a fake here; tests/spark holds the same contracts on real Delta.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.catalog import Commit, ProbeResult
from delta_sync.model.state import CatalogState, Check, Column, PrimaryKey, SchemaName, Table, TableName
from delta_sync.planfile import checksum as plansum
from delta_sync.planfile import document as planfile
from delta_sync.review import environments
from tests.unit.test_cli import ORDERS, FakeCatalog, existing

runner = CliRunner()

NAME = TableName(None, "s", "orders")


def _orders(root: Path) -> CatalogState:
    return existing(root / "specs")


def _retyped(root: Path) -> CatalogState:
    state = _orders(root)
    table = state.tables[NAME]
    return CatalogState(
        {NAME: Table(NAME, (table.columns[0], Column("amount", "string")), table.comment)}, state.schemas
    )


def _commented(root: Path) -> CatalogState:
    state = _orders(root)
    table = state.tables[NAME]
    changed = Table(NAME, table.columns, "Other", table.checks, properties=table.properties)
    return CatalogState({NAME: changed}, state.schemas)


def _empty(_root: Path) -> CatalogState:
    return CatalogState(tables={}, schemas=frozenset({SchemaName(None, "s")}))


def _saved(edit: Callable[[dict[str, Any]], None] = lambda _d: None, seal: bool = True) -> Callable[[Path], None]:
    """Writes plan.json as `plan --out` would against an empty catalog, then applies `edit` to it and, with
    `seal`, recomputes its checksum as an editor who knows how would (so the checks after it are reached)."""

    def prepare(root: Path) -> None:
        result = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json"])
        assert result.exit_code == 0, result.output
        data = json.loads((root / "plan.json").read_text())
        edit(data)
        if seal:
            plansum.seal(data)
        (root / "plan.json").write_text(json.dumps(data))

    return prepare


def _append_drop(data: dict[str, Any]) -> None:
    data["statements"].append({"table": "s.orders", "kind": "AddCheck", "sql": "DROP TABLE canary.t", "check": None})


def _other_env(data: dict[str, Any]) -> None:
    data["environment"] = "prod"


def _readable_sql(data: dict[str, Any]) -> None:
    data["actions"][1]["sql"][0] += " -- reviewed"


class Fake(FakeCatalog):
    """Data checks find nothing; no table has history."""

    def probe(
        self, table: TableName, checks: list[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        return [ProbeResult(table, c.name, 0) for c in checks]

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        return []


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str]
    code: int
    says: str = ""
    catalog: Callable[[Path], CatalogState] | None = _empty
    after: Callable[[Path], CatalogState] | None = None
    prepare: Callable[[Path], None] | None = None
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


CASES = [
    # validate
    Case("validate ok", ["validate"], 0, "1 table spec valid", catalog=None),
    Case(
        "validate bad spec",
        ["validate"],
        1,
        "orders.yaml:6: column `id`",
        catalog=None,
        files={"specs/orders.yaml": ORDERS.replace("nullable: false", "nulable: false")},
    ),
    Case("validate usage", ["validate", "--nope"], 1, "No such option: --nope", catalog=None),
    # schema
    Case("schema ok", ["schema"], 0, catalog=None),
    Case("schema usage", ["schema", "--plans"], 1, "No such option", catalog=None),
    # plan
    Case("plan no changes", ["plan", "--detailed-exitcode"], 0, "No changes", catalog=_orders),
    Case("plan changes", ["plan"], 0, "1 to create", catalog=_empty),
    Case("plan changes pending", ["plan", "--detailed-exitcode"], 2, "1 to create", catalog=_empty),
    Case("plan blocked", ["plan"], 3, "blocked", catalog=_retyped),
    Case("plan usage: unknown option", ["plan", "--formt", "json"], 1, "No such option: --formt"),
    Case("plan usage: bad value", ["plan", "--format", "yaml"], 1, "'yaml' is not one of"),
    Case("plan bad --allow", ["plan", "--allow", "everything"], 1, "--allow everything: not a hazard class"),
    Case("plan --out missing folder", ["plan", "--out", "no/plan.json"], 1, "folder no does not exist"),
    Case("plan unknown env", ["plan", "--env", "nope"], 1, "nope"),
    # apply
    Case("apply applied", ["apply", "--yes"], 0, "match the specs", catalog=_empty, after=_orders),
    Case("apply nothing to do", ["apply", "--yes"], 0, catalog=_orders),
    Case("apply blocked", ["apply", "--yes"], 3, "Nothing applied", catalog=_retyped),
    Case("apply no --yes off a terminal", ["apply"], 1, "pass --yes", catalog=_empty),
    Case("apply usage", ["apply", "--parallel", "0"], 1, "--parallel"),
    Case("apply saved plan", ["apply", "plan.json", "--yes"], 0, "match the plan", after=_orders, prepare=_saved()),
    Case(
        "apply saved plan, stale",
        ["apply", "plan.json", "--yes"],
        4,
        "s.orders was created since the plan was made",
        prepare=_saved(),
        after=_orders,
        catalog=_empty,
        env={"STALE": "1"},
    ),
    Case(
        "apply edited plan",
        ["apply", "plan.json", "--yes"],
        4,
        "not what its actions make",
        prepare=_saved(_append_drop),
    ),
    Case(
        "apply plan edited in its readable part",
        ["apply", "plan.json", "--yes"],
        4,
        "plan.json was edited after it was made (`actions[1].sql` was changed)",
        prepare=_saved(_readable_sql, seal=False),
    ),
    Case("apply plan of another env", ["apply", "plan.json", "--yes"], 1, "prod", prepare=_saved(_other_env)),
    Case(
        "apply unsigned plan with a key",
        ["apply", "plan.json", "--yes"],
        4,
        "is not signed",
        prepare=_saved(),
        env={planfile.KEY_VARIABLE: "k"},
    ),
    # fmt
    Case(
        "fmt --check canonical",
        ["fmt", "--check"],
        0,
        "0 file(s) to reformat",
        catalog=None,
        files={"specs/orders.yaml": "table: s.orders\ncolumns:\n  - name: id\n    type: bigint\n"},
    ),
    Case(
        "fmt --check finds a file",
        ["fmt", "--check"],
        1,
        "would reformat specs/orders.yaml",
        catalog=None,
        files={"specs/orders.yaml": ORDERS.replace("    type: long", "    type: LONG")},
    ),
    Case("fmt no such file", ["fmt", "specs/nope.yaml"], 1, "no such spec file or folder", catalog=None),
    # lint: offline, the rules of delta-sync.yaml's lint:
    Case("lint without rules", ["lint"], 0, "no lint rules", catalog=None),
    Case(
        "lint warnings only",
        ["lint"],
        0,
        "specs/orders.yaml:4: warning column-comment: column `id` has no comment",
        catalog=None,
        files={"delta-sync.yaml": "lint:\n  column-comment: warning\n"},
    ),
    Case(
        "lint an error rule",
        ["lint"],
        3,
        "specs/orders.yaml:1: error primary-key: table `s.orders` declares no primary key",
        catalog=None,
        files={"delta-sync.yaml": "lint:\n  primary-key: error\n"},
    ),
    Case(
        "lint bad configuration",
        ["lint"],
        1,
        "delta-sync.yaml:2: `eror` is not a lint level",
        catalog=None,
        files={"delta-sync.yaml": "lint:\n  primary-key: eror\n"},
    ),
    Case("lint usage", ["lint", "--format", "xml"], 1, "'xml' is not one of", catalog=None),
    Case(
        "plan --allow of a class the environment denies",
        ["plan", "--env", "prod", "--allow", "destructive"],
        1,
        "allow destructive: environment prod denies destructive changes",
        files={"delta-sync.yaml": "envs:\n  local: {}\n  prod: {deny: [destructive]}\n"},
    ),
    # show: a saved plan, no catalog
    Case("show", ["show", "plan.json"], 0, "create table s.orders", prepare=_saved()),
    Case("show json", ["show", "plan.json", "--format", "json"], 0, '"plan_id"', prepare=_saved()),
    Case(
        "show edited plan",
        ["show", "plan.json"],
        4,
        "make a new plan and review it again",
        prepare=_saved(_other_env, seal=False),
    ),
    Case("show not a plan", ["show", "specs/orders.yaml"], 1, "is not a readable plan file", catalog=None),
    Case("show no file", ["show", "nope.json"], 1, "no such plan file", catalog=None),
    # rollback
    Case("rollback unknown plan", ["rollback", "0123456789abcdef", "--yes"], 1, "no commit of it", catalog=_orders),
    Case("rollback not an id", ["rollback", "no such; id", "--yes"], 1, "neither a saved plan file nor a plan id"),
    Case("rollback usage", ["rollback"], 1, "Missing argument"),
    Case("rollback bad --allow", ["rollback", "0123", "--allow", "all"], 1, "--allow all: not a hazard class"),
    # validate several files: every problem of each
    Case(
        "validate several files",
        ["validate", "specs/orders.yaml", "specs/bad.yaml"],
        1,
        "bad.yaml:2: `columns` must be a list",
        catalog=None,
        files={"specs/bad.yaml": "table: s.bad\ncolumns: 3\n"},
    ),
    # drift
    Case("drift in sync", ["drift"], 0, catalog=_orders),
    Case("drift found", ["drift"], 2, "comment", catalog=_commented),
    Case("drift usage", ["drift", "--format", "xml"], 1, "'xml' is not one of"),
    # import
    Case("import", ["import", "s.orders", "--out", "imported"], 0, "Wrote 1 spec file", catalog=_orders),
    Case(
        "import overwrite refused",
        ["import", "s.orders", "--out", "imported"],
        1,
        "--force",
        catalog=_orders,
        files={"imported/s/orders.yaml": ORDERS},
    ),
    Case("import usage", ["import"], 1, "Missing argument"),
    # sql
    Case("sql", ["sql", "SELECT 1"], 0),
    Case("sql destructive without --yes", ["sql", "DROP TABLE s.orders"], 1, "pass --yes"),
    Case("sql destructive with --yes", ["sql", "DROP TABLE s.orders", "--yes"], 0),
    Case("sql usage", ["sql"], 1, "Missing argument"),
    # check (keys): no keys declared in the example; a broken key is tested in test_readme and on Spark
    Case("check nothing declared", ["check"], 0, "No keys are declared", catalog=_orders),
    Case("check usage", ["check", "--format", "xml"], 1, "'xml' is not one of"),
    # more bad input: variables, environments, plan files
    Case(
        "undeclared variable",
        ["validate"],
        1,
        "undeclared variable `suffix` (declare it in envs.local.vars)",
        catalog=None,
        files={"specs/orders.yaml": ORDERS.replace("table: s.orders", "table: s.orders${suffix}")},
    ),
    Case(
        "another environment's unset ${env:...} does not matter",
        ["validate", "--env", "local"],
        0,
        "1 table spec valid",
        catalog=None,
        files={
            "delta-sync.yaml": "default_env: local\nenvs:\n  local: {}\n  ci:\n"
            "    spark:\n      conf: {spark.hadoop.hive.metastore.uris: '${env:NO_SUCH_VARIABLE_X}'}\n"
        },
    ),
    Case(
        "a plan file of an older format",
        ["apply", "old.json", "--yes"],
        1,
        "has plan format 1; this delta-sync reads format 4",
        files={"old.json": '{"format_version": 1, "plan_id": "x"}'},
    ),
    Case("a spec path that is not there", ["plan", "nowhere"], 1, "nowhere"),
    # no command at all, an unknown one
    Case("no such command", ["plna"], 1, "No such command", catalog=None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_exit_code(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv(planfile.KEY_VARIABLE, raising=False)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(ORDERS)
    for name, text in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    fake = None
    if case.catalog is not None:
        fake = Fake(case.catalog(tmp_path), case.after(tmp_path) if case.after else None)
        monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: fake)
    if case.prepare is not None:
        case.prepare(tmp_path)
        if fake is not None and "STALE" in case.env:
            fake.state = fake.after  # someone else created the table since the plan was made
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    result = runner.invoke(cli.app, case.argv)
    assert result.exit_code == case.code, result.output
    assert case.says in result.output
    assert "Traceback" not in result.output


def test_a_ci_log_gets_a_line_per_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal there is no spinner: each phase (reading, checking the data) is a timestamped line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(ORDERS)
    state = _orders(tmp_path)
    table = state.tables[NAME]
    without_check = CatalogState({NAME: Table(NAME, table.columns, table.comment)}, state.schemas)
    fake = Fake(without_check)
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: fake)
    result = runner.invoke(cli.app, ["plan"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert any(line.endswith("s] Reading the catalog...") for line in lines), lines
    assert any("s] Checked the data of 1/1 table(s) against their new rules (s.orders)..." in line for line in lines)
