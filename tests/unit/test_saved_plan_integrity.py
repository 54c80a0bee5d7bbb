"""A saved plan runs what was reviewed, where it was meant to run, or nothing (fake catalog, no JVM)."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.catalog import Commit, ProbeResult
from delta_sync.model.state import CatalogState, Check, PrimaryKey, SchemaName, TableName
from delta_sync.planfile import checksum as plansum
from delta_sync.planfile import codec as plancodec
from delta_sync.planfile import document as planfile
from delta_sync.planning.diff import planner
from delta_sync.planning.statements import statements_of
from delta_sync.review import environments
from delta_sync.specs.spec_files import load_specs
from tests.unit.test_cli import ORDERS, FakeCatalog, existing, specs, use

runner = CliRunner()

WIDER = ORDERS.replace("type: decimal(18,2)", "type: decimal(18,2)\n  - name: note\n    type: string")
NO_CHECK = ORDERS.replace("checks:\n  positive: amount > 0\n", "")
DROPPED = NO_CHECK.replace("  - name: amount\n    type: decimal(18,2)\n", "")


def sample(hint: Any, text: str = "x y`z'") -> Any:
    """A value of the type `hint`, to build one instance of every action kind (every string `text`)."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is __import__("types").UnionType:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return sample(options[0], text)
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return (sample(args[0], text), sample(args[0], text))
        return tuple(sample(a, text) for a in args)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{f.name: sample(hints[f.name], text) for f in dataclasses.fields(hint) if f.init})
    return {bool: True, int: 7, str: text}[hint]


@pytest.mark.parametrize("kind", sorted(plancodec.ACTION_TYPES))
def test_every_action_kind_round_trips_through_json(kind: str) -> None:
    action = sample(plancodec.ACTION_TYPES[kind])
    data = json.loads(json.dumps(plancodec.encode(action)))
    assert data["kind"] == kind
    back = plancodec.decode_action(data)
    assert back == action
    # Fields outside equality (origins, hints) survive too.
    assert plancodec.encode(back) == plancodec.encode(action)


def test_a_real_plan_round_trips_with_its_statements(tmp_path: Path) -> None:
    desired = load_specs(specs(tmp_path, WIDER))
    plan = planner.plan(CatalogState(tables={}), desired)
    actions = tuple(plancodec.decode_action(plancodec.encode(a)) for a in plan.actions)
    assert actions == plan.actions
    assert statements_of(dataclasses.replace(plan, actions=actions)) == statements_of(plan)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "TruncateTable", "name": {}}, "unknown action kind `TruncateTable`"),
        ({"kind": "CreateSchema"}, "missing field `schema`"),
        ({"kind": "CreateSchema", "schema": {"catalog": None, "name": "s"}, "x": 1}, "unknown field `x`"),
        ({"kind": "CreateSchema", "schema": {"catalog": None, "name": 5}}, "schema.name: expected a string"),
        ([1], "not an action"),
    ],
)
def test_decoding_is_strict(data: Any, message: str) -> None:
    with pytest.raises(plancodec.DecodeError, match=message):
        plancodec.decode_action(data)


def old_state(root: Path, text: str = ORDERS) -> CatalogState:
    """The catalog as the specs `text` would leave it."""
    (root / "old").mkdir()
    return existing(specs(root / "old", text))


def _plan_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeCatalog, *args: str) -> dict[str, Any]:
    use(monkeypatch, fake)
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json", *args])
    assert planned.exit_code in (0, 2), planned.output
    data: dict[str, Any] = json.loads((tmp_path / "plan.json").read_text())
    return data


def _write(tmp_path: Path, data: dict[str, Any], name: str = "plan.json", seal: bool = True) -> None:
    """The edited plan, its checksum recomputed (`seal`) as an editor who knows how would: the checks after
    the checksum's (test_plan_checksum.py) are what these tests are about."""
    if seal:
        plansum.seal(data)
    (tmp_path / name).write_text(json.dumps(data, indent=2))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(planfile.KEY_VARIABLE, raising=False)
    return tmp_path


def test_a_statement_added_to_the_file_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCatalog(CatalogState(tables={}))
    specs(project)
    data = _plan_file(project, monkeypatch, fake)
    data["statements"].append({"table": "s.orders", "kind": "CreateTable", "sql": "DROP TABLE canary.t", "check": None})
    _write(project, data)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert "statement 4 is not what its actions make (`DROP TABLE canary.t`)" in result.stderr
    assert fake.executed == []


def test_an_edited_statement_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(project, WIDER)
    fake = FakeCatalog(old_state(project), after=existing(folder))
    data = _plan_file(project, monkeypatch, fake)
    index = next(i for i, s in enumerate(data["statements"]) if "ADD COLUMNS" in s["sql"])
    data["statements"][index]["sql"] = data["statements"][index]["sql"].replace(
        "`note` string", "`note` string, `evil` int"
    )
    _write(project, data)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert f"statement {index + 1} is not what its actions make" in result.stderr
    assert fake.executed == []


def test_an_action_on_a_table_the_plan_did_not_read_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCatalog(CatalogState(tables={}))
    specs(project)
    data = _plan_file(project, monkeypatch, fake)
    for action in data["typed_actions"]:
        if action["kind"] == "AddCheck":
            action["name"]["name"] = "canary"
    _write(project, data)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert "changes s.canary, which it did not read when it was made" in result.stderr
    assert fake.executed == []


def test_hazards_are_re_derived_at_apply_against_its_own_allow(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan made with --allow destructive (or a file edited to drop a column) is blocked by apply
    unless this apply allows it too: the file's own `blocked` and `allowed` are not trusted."""
    folder = specs(project, DROPPED)
    before = old_state(project)
    fake = FakeCatalog(before, after=existing(folder))
    data = _plan_file(project, monkeypatch, fake, "--allow", "destructive,breaking,irreversible")
    assert data["allowed"] == ["breaking", "destructive", "irreversible"]
    data["allowed"], data["blocked"] = [], False  # an editor's attempt to pass it off as harmless
    _write(project, data)
    refused = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert refused.exit_code == 3, refused.output
    assert "is blocked here" in refused.stderr
    assert "destructive: dropping `amount`" in refused.stderr
    assert fake.executed == []
    allowed = runner.invoke(cli.app, ["apply", "plan.json", "--yes", "--allow", "destructive,breaking,irreversible"])
    assert allowed.exit_code == 0, allowed.output
    assert any("DROP COLUMNS" in s for s in fake.executed)


def test_signed_plans(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs(project)
    monkeypatch.setenv(planfile.KEY_VARIABLE, "s3cret")
    fake = FakeCatalog(CatalogState(tables={}), after=existing(project / "specs"))
    data = _plan_file(project, monkeypatch, fake)
    assert data["signature"].startswith("hmac-sha256:")

    # Any byte of it, even the readable part, its checksum recomputed to match: the signature covers both.
    edited = dict(data, summary={**data["summary"], "create": 9})
    _write(project, edited, "edited.json")
    result = runner.invoke(cli.app, ["apply", "edited.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert "the signature does not match its content" in result.stderr
    # The signature covers the checksum itself: one edited alone is refused too (by the checksum first).
    _write(project, dict(data, checksum={**data["checksum"], "sha256": "0" * 64}), "resummed.json", seal=False)
    result = runner.invoke(cli.app, ["apply", "resummed.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert "its content does not match its checksum" in result.stderr
    assert planfile.canonical(data) != planfile.canonical({k: v for k, v in data.items() if k != "checksum"})

    _write(project, {k: v for k, v in data.items() if k != "signature"}, "unsigned.json")
    result = runner.invoke(cli.app, ["apply", "unsigned.json", "--yes"])
    assert result.exit_code == 4
    assert "is not signed, and DELTA_SYNC_PLAN_KEY is set here" in result.stderr

    monkeypatch.setenv(planfile.KEY_VARIABLE, "another")
    assert runner.invoke(cli.app, ["apply", "plan.json", "--yes"]).exit_code == 4
    assert fake.executed == []

    monkeypatch.setenv(planfile.KEY_VARIABLE, "s3cret")
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 0, result.output
    assert "signature checked" in result.stderr


def test_an_unsigned_plan_says_so(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs(project)
    fake = FakeCatalog(CatalogState(tables={}), after=existing(project / "specs"))
    use(monkeypatch, fake)
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json"])
    assert "unsigned: set DELTA_SYNC_PLAN_KEY to sign it" in planned.stderr
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 0, result.output
    assert "unsigned (set DELTA_SYNC_PLAN_KEY" in result.stderr


PROJECT = """\
default_env: dev
envs:
  dev: {}
  prod:
    vars: {suffix: _prod}
"""


def test_a_plan_runs_in_its_own_environment(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "delta-sync.yaml").write_text(PROJECT)
    specs(project, ORDERS.replace("table: s.orders", "table: s.orders${suffix}"))
    (project / ".delta-sync").mkdir()
    prod_tables = load_specs(project / "specs", {"suffix": "_prod"})
    fake = FakeCatalog(
        CatalogState(tables={}), after=CatalogState(prod_tables.tables, frozenset({SchemaName(None, "s")}))
    )
    use(monkeypatch, fake)
    planned = runner.invoke(cli.app, ["plan", "specs", "--env", "prod", "--out", "plan.json"])
    assert planned.exit_code == 0, planned.output
    assert "run it with: delta-sync apply plan.json --env prod" in planned.stderr

    other = runner.invoke(cli.app, ["apply", "plan.json", "--env", "dev", "--yes"])
    assert other.exit_code == 4, other.output
    assert "was made for environment prod, not dev" in other.stderr
    assert fake.executed == []

    own = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])  # no --env: the plan's, not default_env
    assert own.exit_code == 0, own.output
    assert "for environment prod" in own.stderr
    assert any("`orders_prod`" in s for s in fake.executed)


def test_the_default_environment_needs_no_env_in_the_hint(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs(project)
    use(monkeypatch, FakeCatalog(CatalogState(tables={})))
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json"])
    assert planned.stderr.rstrip().endswith("run it with: delta-sync apply plan.json")


@pytest.mark.parametrize("name", ["plan.tfplan", "PLAN.JSON", "plan"])
def test_a_plan_file_is_known_by_its_content(project: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    specs(project)
    fake = FakeCatalog(CatalogState(tables={}), after=existing(project / "specs"))
    use(monkeypatch, fake)
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", name])
    assert planned.exit_code == 0, planned.output
    result = runner.invoke(cli.app, ["apply", name, "--yes"])
    assert result.exit_code == 0, result.output
    assert len(fake.executed) == 3


def test_apply_file_shows_the_plan_and_its_statements(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs(project)
    fake = FakeCatalog(CatalogState(tables={}), after=existing(project / "specs"))
    _plan_file(project, monkeypatch, fake)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert "+ create table s.orders" in result.stdout
    assert "  ALTER TABLE `s`.`orders` ADD CONSTRAINT positive CHECK (amount > 0)" in result.stderr
    assert result.stderr.index("ADD CONSTRAINT positive") < result.stderr.index("✓ [1/3]")


def test_apply_file_confirms_the_tables_match_the_plan(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs(project)
    fake = FakeCatalog(CatalogState(tables={}))  # executes, but the catalog never changes
    _plan_file(project, monkeypatch, fake)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 1
    assert "the catalog still differs from the specs" in result.stderr
    assert "s.orders: CreateTable" in result.stderr


def test_a_dropped_table_makes_the_plan_stale(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = specs(project, WIDER)

    class NoHistory(FakeCatalog):
        def history(self, name: TableName, limit: int = 50) -> list[Commit]:
            raise AssertionError("a dropped table has no history to read")

    fake = NoHistory(old_state(project))
    _plan_file(project, monkeypatch, fake)
    fake.state = CatalogState(tables={}, schemas=fake.state.schemas)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 4, result.output
    assert "s.orders was dropped since the plan was made" in result.stderr
    assert folder.exists()


def test_out_into_a_missing_folder_fails_before_the_plan_runs(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs(project)

    def never(*_a: object, **_k: object) -> None:
        raise AssertionError("the catalog was opened")

    monkeypatch.setattr(environments, "open_catalog", never)
    result = runner.invoke(cli.app, ["plan", "specs", "--out", "no/such/plan.json"])
    assert result.exit_code == 1
    assert "folder no/such does not exist" in result.stderr
    assert "Traceback" not in result.output


class ViolatingCatalog(FakeCatalog):
    def probe(
        self, table: TableName, checks: list[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        self.probed = relation
        return [ProbeResult(table, checks[0].name, 4, ((("id", "7"), ("amount", "-1.00")),))]


def test_a_first_wave_constraint_refused_by_the_data_exits_3(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Delta's own ADD CONSTRAINT found the violation (no scan before apply): still exit 3, with the
    rule, Delta's count and samples, as a probe would have said."""
    specs(project)
    without_check = old_state(project, NO_CHECK)
    fake = ViolatingCatalog(without_check, fail_on="ADD CONSTRAINT")
    use(monkeypatch, fake)
    result = runner.invoke(cli.app, ["apply", "specs", "--yes"])
    assert result.exit_code == 3, result.output
    assert "blocked by the data: 4 existing rows of s.orders violate `positive` (amount > 0)" in result.stderr
    assert "violating rows (1 shown):\n    id  amount\n    7   -1.00\n" in result.stderr
    assert "nothing was applied" in result.stderr
    assert fake.probed == "`s`.`orders`"
    assert "Traceback" not in result.output


def test_a_plan_from_another_project_is_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(planfile.KEY_VARIABLE, raising=False)
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        root.mkdir()
        (root / ".delta-sync").mkdir()
    specs(first)
    fake = FakeCatalog(old_state(first))
    monkeypatch.chdir(first)
    specs_first = first / "specs"
    specs_first.joinpath("orders.yaml").write_text(WIDER)
    _plan_file(first, monkeypatch, fake)

    # The other project: its own specs folder and catalog, where the plan's table is not.
    specs(second)
    monkeypatch.chdir(second)
    use(monkeypatch, FakeCatalog(CatalogState(tables={}, schemas=frozenset({SchemaName(None, "s")}))))
    result = runner.invoke(cli.app, ["apply", str(first / "plan.json"), "--yes"])
    assert result.exit_code == 4, result.output
    (second / "specs" / "orders.yaml").unlink()
    (second / "specs").rmdir()
    result = runner.invoke(cli.app, ["apply", str(first / "plan.json"), "--yes"])
    assert result.exit_code == 4, result.output
    assert "s.orders was dropped since the plan was made" in result.stderr


RENAMED = ORDERS.replace("table: s.orders\n", "table: s.orders_v2\nrenamed_from: s.orders\n")


def test_a_saved_rename_records_both_names_and_runs_exactly(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = old_state(project)
    (table,) = before.tables.values()
    table = dataclasses.replace(table, version=3)
    renamed = dataclasses.replace(table, name=TableName(None, "s", "orders_v2"))
    after = CatalogState({renamed.name: renamed}, before.schemas)
    specs(project, RENAMED)
    fake = FakeCatalog(CatalogState({table.name: table}, before.schemas), after=after)
    data = _plan_file(project, monkeypatch, fake, "--allow", "breaking")
    # The old name is read, fingerprinted and checked at apply like the plan's own tables.
    assert {t["name"]: t["fingerprint"]["exists"] for t in data["tables"]} == {"s.orders": True, "s.orders_v2": False}
    assert [s["sql"] for s in data["statements"]] == ["ALTER TABLE `s`.`orders` RENAME TO `s`.`orders_v2`"]
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes", "--allow", "breaking"])
    assert result.exit_code == 0, result.output
    assert fake.executed == ["ALTER TABLE `s`.`orders` RENAME TO `s`.`orders_v2`"]


def test_a_saved_rename_is_stale_when_the_old_table_moved(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = old_state(project)
    (table,) = before.tables.values()
    specs(project, RENAMED)
    fake = FakeCatalog(CatalogState({table.name: dataclasses.replace(table, version=3)}, before.schemas))
    _plan_file(project, monkeypatch, fake, "--allow", "breaking")
    fake.state = CatalogState({table.name: dataclasses.replace(table, version=4)}, before.schemas)
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes", "--allow", "breaking"])
    assert result.exit_code == 4, result.output
    assert "s.orders moved from version 3 to 4 since the plan was made" in result.stderr
    assert fake.executed == []
