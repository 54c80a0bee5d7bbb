"""A saved plan's checksum: any edit of the file (its readable part too) is refused, naming the first field that
differs; the same content re-indented or with its keys reordered is not an edit (fake catalog, no JVM)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import delta_sync
from delta_sync.cli import main as cli
from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import CatalogState, Check, PrimaryKey, TableName
from delta_sync.planfile import checksum as plansum
from delta_sync.planfile import document as planfile
from delta_sync.processes import entrypoint
from tests.unit.builders import live
from tests.unit.test_cli import ORDERS, FakeCatalog, existing, specs, use

runner = CliRunner()

NO_CHECK = ORDERS.replace("checks:\n  positive: amount > 0\n", "")
WIDER = ORDERS.replace("type: decimal(18,2)", "type: decimal(18,2)\n  - name: note\n    type: string")


class Probing(FakeCatalog):
    """Every new rule's scan finds `violations` violating rows."""

    violations = 2

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        return [ProbeResult(table, c.name, self.violations) for c in checks]


class Clean(Probing):
    violations = 0


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(planfile.KEY_VARIABLE, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


def saved(
    project: Path, monkeypatch: pytest.MonkeyPatch, kind: type[Probing] = Probing
) -> tuple[Probing, dict[str, Any]]:
    """plan --out of an existing table (rows in it) that gets a column and a rule: a plan with every part
    (blocked by the data, unless `kind` finds no violating row)."""
    (project / "old").mkdir()
    before = existing(specs(project / "old", NO_CHECK))
    with_rows = {n: live(t, version=4) for n, t in before.tables.items()}
    fake = kind(CatalogState(with_rows, before.schemas), after=existing(specs(project, WIDER)))
    use(monkeypatch, fake)
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json", "--allow", "breaking"])
    assert planned.exit_code in (0, 2, 3), planned.output
    data: dict[str, Any] = json.loads((project / "plan.json").read_text())
    return fake, data


def _index(items: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, item in enumerate(items) if test(item))


def _statement_sql(data: dict[str, Any]) -> str:
    i = _index(data["statements"], lambda s: "ADD COLUMNS" in s["sql"])
    data["statements"][i]["sql"] = data["statements"][i]["sql"].replace("`note` string", "`note` string, `evil` int")
    return f"statements[{i}].sql"


def _action_text(data: dict[str, Any]) -> str:
    # The report: the statement's text in the readable actions, the part a reviewer reads.
    i = _index(data["actions"], lambda a: any("ADD COLUMNS" in s for s in a.get("sql", ())))
    data["actions"][i]["sql"] = [
        s.replace("`note` string", "`note` string, `evil` int") for s in data["actions"][i]["sql"]
    ]
    return f"actions[{i}].sql"


def _probe_count(data: dict[str, Any]) -> str:
    assert data["probes"][0]["violations"] == 2
    data["probes"][0]["violations"] = 0
    return "probes[0].violations"


def _environment(data: dict[str, Any]) -> str:
    data["environment"] = "prod"
    return "environment"


def _fingerprint(data: dict[str, Any]) -> str:
    data["tables"][0]["fingerprint"]["version"] = 5
    return "tables[0].fingerprint"


def _desired(data: dict[str, Any]) -> str:
    data["desired"][0]["comment"] = "Orders, edited"
    return "desired[0].comment"


def _summary(data: dict[str, Any]) -> str:
    data["summary"]["change"] += 1
    return "summary.change"


def _removed_action(data: dict[str, Any]) -> str:
    data["actions"].pop()
    return f"actions[{len(data['actions'])}]"


def _added_field(data: dict[str, Any]) -> str:
    data["note"] = "looks fine"
    return "note"


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_statement_sql, "was changed"),
        (_action_text, "was changed"),
        (_probe_count, "was changed"),
        (_environment, "was changed"),
        (_fingerprint, "was changed"),
        (_desired, "was changed"),
        (_summary, "was changed"),
        (_removed_action, "was removed"),
        (_added_field, "was added"),
    ],
)
def test_an_edit_anywhere_is_refused_naming_the_field(
    project: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[dict[str, Any]], str], said: str
) -> None:
    fake, data = saved(project, monkeypatch)
    field = edit(data)
    (project / "plan.json").write_text(json.dumps(data, indent=2))
    for command in (["apply", "plan.json", "--yes", "--allow", "breaking"], ["show", "plan.json"]):
        result = runner.invoke(cli.app, command)
        assert result.exit_code == 4, result.output
        assert result.stderr == (
            f"Error: plan.json was edited after it was made (`{field}` {said}), so nothing of it was applied; "
            "make a new plan and review it again\n"
        )
    assert fake.executed == []


def test_the_same_content_reindented_and_reordered_is_no_edit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake, data = saved(project, monkeypatch, Clean)

    def reordered(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: reordered(value[k]) for k in reversed(list(value))}
        return [reordered(v) for v in value] if isinstance(value, list) else value

    (project / "plan.json").write_text(json.dumps(reordered(data), indent=7, ensure_ascii=True))
    assert runner.invoke(cli.app, ["show", "plan.json"]).exit_code == 0
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes", "--allow", "breaking"])
    assert result.exit_code == 0, result.output
    assert any("ADD COLUMNS" in s for s in fake.executed)


def test_a_plan_without_its_checksum_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake, data = saved(project, monkeypatch)
    del data["checksum"]
    (project / "plan.json").write_text(json.dumps(data))
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes", "--allow", "breaking"])
    assert result.exit_code == 4, result.output
    assert "plan.json has no checksum (every plan file of format 4 has one: it was removed)" in result.stderr
    assert "make a new plan and review it again" in result.stderr
    assert fake.executed == []


def test_a_plan_of_the_format_before_the_checksum_is_refused_as_of_another_format(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake, data = saved(project, monkeypatch)
    del data["checksum"]
    (project / "plan.json").write_text(json.dumps(dict(data, format_version=2)))
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes"])
    assert result.exit_code == 1, result.output
    assert "has plan format 2; this delta-sync reads format 4. Make the plan again with this version." in result.stderr


def test_an_edited_checksum_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake, data = saved(project, monkeypatch)
    data["checksum"]["fields"]["environment"] = "00000000"
    (project / "plan.json").write_text(json.dumps(data))
    result = runner.invoke(cli.app, ["apply", "plan.json", "--yes", "--allow", "breaking"])
    assert result.exit_code == 4, result.output
    assert "(its checksum was changed)" in result.stderr
    data["checksum"] = "x"
    (project / "plan.json").write_text(json.dumps(data))
    result = runner.invoke(cli.app, ["show", "plan.json"])
    assert result.exit_code == 4, result.output
    assert "(its checksum is not one delta-sync wrote)" in result.stderr


def test_a_signature_covers_the_checksum(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(planfile.KEY_VARIABLE, "s3cret")
    _fake, data = saved(project, monkeypatch)
    assert data["signature"] == planfile.signature(data, "s3cret")
    assert "checksum" in json.loads(planfile.canonical(data))
    assert planfile.signature(data, "s3cret") != planfile.signature(dict(data, checksum={}), "s3cret")


def test_a_changed_document_of_a_reviewed_plan_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through Python: a ReviewedPlan's document is the caller's dict; changed, the plan is not applied."""
    fake, _data = saved(project, monkeypatch, Clean)
    reviewed = delta_sync.plan("specs", allow=["breaking"])
    reviewed.document["environment"] = "prod"
    with pytest.raises(planfile.RefusedPlanError, match=r"plan \w+ was edited after it was made \(`environment`"):
        delta_sync.apply(reviewed, allow=["breaking"])
    assert fake.executed == []


def test_the_spark_submit_driver_refuses_an_edited_plan(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The driver loads the file before its session starts: an edit is refused there too, as stale (exit 4)."""
    _fake, data = saved(project, monkeypatch)
    _action_text(data)
    (project / "plan.json").write_text(json.dumps(data))

    def no_session() -> None:
        raise AssertionError("a session was started for an edited plan")

    monkeypatch.setattr(entrypoint, "_session", no_session)
    assert entrypoint.main([str(project / "plan.json")]) == 4
    result = json.loads(capsys.readouterr().out.splitlines()[-1].split(" ", 1)[1])
    assert result["status"] == "stale"
    assert "was edited after it was made (`actions[" in result["error"]


def test_a_checksum_names_the_deepest_field_and_is_canonical() -> None:
    document = {"a": [{"sql": "x", "kind": "K"}, {"sql": "y"}], "b": {"c": 1}, "d": 2}
    plansum.seal(document)
    assert plansum.difference(document) is None
    assert plansum.difference(json.loads(json.dumps(document, indent=3, sort_keys=True))) is None
    edits: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
        ("`a[1].sql` was changed", lambda d: d["a"][1].update(sql="z")),
        ("`a[0]` was changed (a key of it was added or removed)", lambda d: d["a"][0].update(extra=1)),
        ("`a[2]` was added", lambda d: d["a"].append({})),
        ("`b.c` was changed", lambda d: d["b"].update(c=2)),
        ("`d` was changed", lambda d: d.update(d=3)),
        ("`d` was removed", lambda d: d.pop("d")),
    ]
    for path, change in edits:
        edited = json.loads(json.dumps(document))
        change(edited)
        assert plansum.difference(edited) == path
    # A signature is not covered (it covers the checksum instead).
    assert plansum.difference(dict(document, signature="hmac-sha256:00")) is None


def test_the_checksum_of_a_200_action_plan_grows_its_file_by_under_a_tenth(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 existing tables, each getting a column, two rules, a property and a comment: 200 actions."""
    (project / "old").mkdir()
    (project / "old" / "specs").mkdir()
    (project / "specs").mkdir()
    for i in range(50):
        name = f"table: s.orders_{i:02}"
        (project / "old" / "specs" / f"o{i}.yaml").write_text(NO_CHECK.replace("table: s.orders", name))
        wider = WIDER.replace("table: s.orders", name).replace("comment: Orders", "comment: Orders, one per row")
        wider = wider.replace("  positive: amount > 0\n", "  positive: amount > 0\n  known: id >= 0\n")
        (project / "specs" / f"o{i}.yaml").write_text(wider + "properties:\n  team: sales\n")
    before = existing(project / "old" / "specs")
    use(monkeypatch, Clean(CatalogState({n: live(t) for n, t in before.tables.items()}, before.schemas)))
    planned = runner.invoke(cli.app, ["plan", "specs", "--out", "plan.json", "--allow", "breaking"])
    assert planned.exit_code == 0, planned.output
    data = json.loads((project / "plan.json").read_text())
    assert len(data["typed_actions"]) == 200
    whole = len(json.dumps(data, indent=2))
    without = len(json.dumps({k: v for k, v in data.items() if k != "checksum"}, indent=2))
    growth = (whole - without) / without
    print(f"200 actions: {without} bytes without the checksum, {whole} with it (+{growth:.1%})")
    assert growth < 0.09  # 7.7% when this was written: linear in the plan, so a 1,000-table plan's too
