"""Saved plans on real Delta: plan --out, apply FILE, stale refusal, the plan id in Delta's history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.model.state import TableName
from delta_sync.planfile import checksum as plansum
from delta_sync.review import environments
from delta_sync.spark.catalog import SparkCatalog

from .cli import IN_PROCESS, Cli
from .conftest import Project

runner = CliRunner()


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "200")


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def spec(schema: str, extra_column: str = "") -> str:
    return f"""\
        table: {schema}.events
        comment: Events
        columns:
          - name: id
            type: bigint
          - name: kind
            type: string
        {extra_column}
        checks:
          known_kind: kind IN ('a', 'b')
        properties:
          team: platform
        """


def saved(project: Project, name: str = "plan.json") -> tuple[Path, dict[str, Any]]:
    path = project.root / name
    result = invoke("plan", str(project.specs), "--out", str(path))
    assert result.exit_code == 0, result.output
    return path, json.loads(path.read_text())


def test_saved_plan_applies_exactly_and_is_stamped_in_history(project: Project, schema: str) -> None:
    project.write("events.yaml", spec(schema))
    path, document = saved(project)
    assert document["format_version"] == 4
    assert document["tables"] == [
        {"name": f"{schema}.events", "fingerprint": {"exists": False, "version": None, "state": None}}
    ]
    assert [s["kind"] for s in document["statements"]] == ["CreateSchema", "CreateTable", "AddCheck"]

    # An edited copy (a statement the plan never made, on a table it never read) runs nothing, even with its
    # checksum recomputed (anyone can: that is what a signature is for): its statements are rebuilt.
    project.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    project.sql(f"CREATE TABLE {schema}.canary (x INT) USING DELTA")
    edited = dict(document)
    edited["statements"] = [
        *document["statements"],
        {"table": f"{schema}.events", "kind": "AddCheck", "sql": f"DROP TABLE {schema}.canary", "check": None},
    ]
    (project.root / "edited.json").write_text(json.dumps(plansum.seal(edited)))
    refused = invoke("apply", str(project.root / "edited.json"), "--yes")
    assert refused.exit_code == 4, refused.output
    assert f"statement 4 is not what its actions make (`DROP TABLE {schema}.canary`)" in refused.stderr
    assert project.sql(f"SHOW TABLES IN {schema} LIKE 'canary'")
    assert not project.sql(f"SHOW TABLES IN {schema} LIKE 'events'")

    applied = invoke("apply", str(path), "--yes")
    assert applied.exit_code == 0, applied.output
    assert "re-read: 1 table(s) match the plan" in applied.stderr
    assert project.plan().is_empty
    plan_id = document["plan_id"]
    commits = project.catalog.history(TableName(None, schema, "events"))
    stamps = [json.loads(c.metadata) for c in commits if c.metadata]
    assert stamps == [
        {"delta-sync": {"plan": plan_id, "action": "AddCheck"}},
        {"delta-sync": {"plan": plan_id, "action": "CreateTable"}},
    ]

    again = invoke("apply", str(path), "--yes")
    assert again.exit_code == 4
    assert f"plan {plan_id} was already applied (to {schema}.events)" in again.stderr


def test_a_writer_between_plan_and_apply_makes_the_plan_stale(project: Project, schema: str) -> None:
    project.write("events.yaml", spec(schema))
    project.apply()
    project.write("events.yaml", spec(schema, extra_column="  - name: source\n            type: string"))
    path, document = saved(project)
    version = document["tables"][0]["fingerprint"]["version"]
    history = len(project.sql(f"DESCRIBE HISTORY {schema}.events"))

    project.sql(f"INSERT INTO {schema}.events VALUES (1, 'a')")
    stale = invoke("apply", str(path), "--yes")
    assert stale.exit_code == 4
    assert f"{schema}.events moved from version {version} to {version + 1} since the plan was made" in stale.stderr
    assert len(project.sql(f"DESCRIBE HISTORY {schema}.events")) == history + 1  # only the writer's commit

    path, _ = saved(project, "fresh.json")
    assert invoke("apply", str(path), "--yes").exit_code == 0
    assert project.plan().is_empty


def test_a_table_dropped_since_the_plan_makes_it_stale(project: Project, schema: str) -> None:
    project.write("events.yaml", spec(schema))
    project.apply()
    project.write("events.yaml", spec(schema, extra_column="  - name: source\n            type: string"))
    path, _document = saved(project)
    project.sql(f"DROP TABLE {schema}.events")
    stale = invoke("apply", str(path), "--yes")
    assert stale.exit_code == 4, stale.output
    assert f"{schema}.events was dropped since the plan was made" in stale.stderr
    assert "TABLE_OR_VIEW_NOT_FOUND" not in stale.output


def test_spec_apply_stamps_every_commit(project: Project, schema: str) -> None:
    project.write("events.yaml", spec(schema))
    result = invoke("apply", str(project.specs), "--yes")
    assert result.exit_code == 0, result.output
    plan_id = result.stderr.split("(plan ")[1].split(")")[0]
    history = project.catalog.spark.sql(f"DESCRIBE HISTORY {schema}.events").collect()
    commits = [(row["operation"], row["userMetadata"]) for row in history]
    assert [op for op, _m in commits] == ["ADD CONSTRAINT", "CREATE TABLE"]
    assert [json.loads(str(m))["delta-sync"]["plan"] for _op, m in commits] == [plan_id, plan_id]


def test_blocked_saved_plan_is_refused(project: Project, schema: str) -> None:
    project.write("events.yaml", spec(schema))
    project.apply()
    # bigint -> array: no CAST converts it, so it is blocked (a type a CAST converts would be a rewrite).
    project.write("events.yaml", spec(schema).replace("type: bigint", "type: array<string>"))
    path = project.root / "blocked.json"
    result = invoke("plan", str(project.specs), "--out", str(path))
    assert result.exit_code == 3
    refused = invoke("apply", str(path), "--yes")
    assert refused.exit_code == 3
    assert "has blocked changes" in refused.stderr


def test_not_a_plan_file(project: Project) -> None:
    bad = project.root / "bad.json"
    bad.write_text('{"format_version": 4}')
    result = invoke("apply", str(bad), "--yes")
    assert result.exit_code == 1
    assert "is not a delta-sync plan file" in result.stderr
    assert "Traceback" not in result.output


def test_a_plan_edited_in_its_readable_part_is_refused(project: Project, schema: str) -> None:
    """Issue 39's report: the statement's text edited where a reviewer reads it (`actions[].sql`, the first
    occurrence in the file), then applied: refused (exit 4) by the checksum, naming the field, nothing run."""
    project.write("events.yaml", spec(schema))
    project.apply()
    project.write("events.yaml", spec(schema, extra_column="  - name: note\n            type: string"))
    path = project.root / "review.tfplan"
    planned = invoke("plan", str(project.specs), "--out", str(path))
    assert planned.exit_code == 0, planned.output
    text = path.read_text()
    first = text.index("(`note` string)")
    assert first < text.index('"statements"')  # the readable actions come first in the file
    path.write_text(text.replace("(`note` string)", "(`note` string, `evil` int)", 1))
    history = len(project.sql(f"DESCRIBE HISTORY {schema}.events"))

    refused = invoke("apply", str(path), "--yes")
    assert refused.exit_code == 4, refused.output
    index = next(i for i, a in enumerate(json.loads(text)["actions"]) if a.get("kind") == "AddColumns")
    assert f"was edited after it was made (`actions[{index}].sql` was changed)" in refused.stderr
    assert "make a new plan and review it again" in refused.stderr
    assert len(project.sql(f"DESCRIBE HISTORY {schema}.events")) == history  # nothing applied
    assert project.catalog.spark.table(f"{schema}.events").columns == ["id", "kind"]


def test_a_saved_plan_is_bound_to_the_settings_it_was_reviewed_with(tmp_path: Path, schema: str) -> None:
    """Issue 45: a plan reviewed under one set of readers, or vars, must not apply under another. Through the
    command line in its own processes (as on CI): the refusals come before Spark starts, so only `plan` and the
    last `apply` start one."""
    secret = "s3cr3t-warehouse-token"
    project_file = tmp_path / "delta-sync.yaml"
    reviewed = """\
readers: [delta-sharing]
envs:
  local:
    vars: {suffix: _a, token: "${env:DS_SAVED_PLAN_TOKEN}"}
"""
    project_file.write_text(reviewed)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "events.yaml").write_text(
        f"table: {schema}.events${{suffix}}\ncolumns:\n  - name: id\n    type: bigint\n"
    )
    cli = Cli(tmp_path, IN_PROCESS)
    env = {"DS_SAVED_PLAN_TOKEN": secret}
    planned = cli.run(["plan", "--out", "plan.json"], env=env)
    assert planned.returncode == 0, planned.stderr
    text = (tmp_path / "plan.json").read_text()
    assert secret not in text
    plan_id = json.loads(text)["plan_id"]

    def refused(project: str, command: str = "apply", token: str = secret) -> str:
        project_file.write_text(project)
        args = ["apply", "plan.json", "--yes"] if command == "apply" else ["show", "plan.json"]
        result = cli.run(args, env={"DS_SAVED_PLAN_TOKEN": token})
        assert result.returncode == 4, result.stderr
        assert secret not in result.stderr + result.stdout
        return " ".join(result.stderr.split())

    assert (
        f"plan {plan_id} was reviewed with readers: [delta-sharing]; delta-sync.yaml now says readers: "
        "[delta-sharing, trino 440], so it was not applied; make a new plan and review it again"
    ) in refused(reviewed.replace("[delta-sharing]", "[delta-sharing, trino 440]"))
    assert "reviewed with vars: {suffix: _a}; delta-sync.yaml now says vars: {suffix: _b}" in refused(
        reviewed.replace("_a", "_b"), "show"
    )
    rotated = refused(reviewed, token="rotated-token")
    assert "reviewed with vars: {token: ***}; delta-sync.yaml now gives it another value" in rotated
    assert "rotated-token" not in rotated

    # The settings as reviewed: the plan applies.
    project_file.write_text(reviewed)
    applied = cli.run(["apply", "plan.json", "--yes"], env=env)
    assert applied.returncode == 0, applied.stderr
    assert "re-read: 1 table(s) match the plan" in applied.stderr
