"""Hazards on real Delta through the real CLI (in-process): class, reason, spec line, exit codes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.planning.hazards import Hazard
from delta_sync.review import environments, pipeline
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

runner = CliRunner()


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "200")


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def history(project: Project, table: str) -> int:
    return len(project.sql(f"DESCRIBE HISTORY {table}"))


def samples_of(output: str) -> list[str]:
    """The sample rows a blocked probe shows: its header line, then one line per row."""
    lines = [line.strip() for line in output.splitlines()]
    start = lines.index("sample rows:") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("->"))
    return lines[start:end]


def base(schema: str, extra: str = "", properties: str = "") -> str:
    return f"""\
        table: {schema}.accounts
        columns:
          - name: id
            type: int
            nullable: false
          - name: email
            type: string
          - name: balance
            type: decimal(10,2)
        {extra}
        properties:
          team: finance
        {properties}
        """


@pytest.fixture
def accounts(project: Project, schema: str) -> Callable[..., str]:
    project.write("accounts.yaml", base(schema, properties="  delta.columnMapping.mode: name"))
    project.apply()
    project.sql(f"INSERT INTO {schema}.accounts VALUES (1, 'a@x', 10.00), (2, NULL, -5.00), (3, 'c@x', NULL)")
    return lambda text: str(project.write("accounts.yaml", text))


def test_destructive_drop_column(project: Project, schema: str, accounts: Callable[..., str]) -> None:
    spec = accounts(
        base(schema, properties="  delta.columnMapping.mode: name").replace(
            "          - name: balance\n            type: decimal(10,2)\n", ""
        )
    )
    table = f"{schema}.accounts"
    before = history(project, table)
    planned = invoke("plan", str(project.specs))
    assert planned.exit_code == 3, planned.output
    assert "! blocked (destructive): dropping `balance` makes its data unreachable" in planned.stdout
    assert f"unreachable (only time travel keeps it)  ({spec}:1)" in planned.stdout
    assert "To allow: --allow breaking,destructive." in planned.stdout
    applied = invoke("apply", str(project.specs), "--yes")
    assert applied.exit_code == 3, applied.output
    assert "! blocked (destructive): dropping `balance` makes its data unreachable" in applied.stdout
    assert "Nothing applied" in applied.stderr
    assert history(project, table) == before
    allowed = invoke("apply", str(project.specs), "--yes", "--allow", "destructive,breaking")
    assert allowed.exit_code == 0, allowed.output
    assert invoke("plan", str(project.specs), "--detailed-exitcode").exit_code == 0


def test_data_dependent_check_blocked_by_probe_then_passes(
    project: Project, schema: str, accounts: Callable[..., str]
) -> None:
    spec = accounts(base(schema, extra="checks:\n          positive: balance >= 0"))
    table = f"{schema}.accounts"
    before = history(project, table)
    planned = invoke("plan", str(project.specs))
    assert planned.exit_code == 3, planned.output
    # NULL violates a Delta CHECK too, so 2 rows: -5.00 and NULL. The rule is on line 11 of the spec.
    # The table's size beside the data check (issue 48: what a scan costs), then the rule's line.
    assert re.search(
        rf"! blocked \(data-dependent\): will fail: 2 rows violate `positive`  \[table: [0-9.]+ \w+\]  "
        rf"\({re.escape(str(spec))}:11\)",
        planned.stdout,
    ), planned.stdout
    samples = samples_of(planned.stdout)
    assert samples[0] == "id  balance"
    assert sorted(samples[1:]) == ["2   -5.00", "3   NULL"]
    assert 'fix those rows first (delta-sync sql "UPDATE ' + table + ' ..."), or change the rule' in planned.stdout
    data = invoke("plan", str(project.specs), "--format", "json")
    document = json.loads(data.stdout)
    probes = document["probes"]
    assert probes[0]["violations"] == 2
    assert "samples" not in probes[0]  # row data stays on the terminal, out of files and CI artifacts
    (hazard,) = [h for a in document["actions"] for h in a.get("hazards", ())]
    assert (hazard["class"], hazard["blocked"], hazard["why"]) == (
        "data-dependent",
        True,
        "will fail: 2 rows violate `positive`",
    )
    assert hazard["origin"] == {"file": spec, "line": 11}
    # apply leaves the rule to its own ADD CONSTRAINT, run first (one scan, not two): Delta refuses it
    # and nothing of the table changes.
    # The data blocks it, whichever path found out: exit 3, with Delta's count and samples, as plan says.
    applied = invoke("apply", str(project.specs), "--yes")
    assert applied.exit_code == 3, applied.output
    assert "checked by its own ADD CONSTRAINT, first" in " ".join(applied.stdout.split())
    assert f"blocked by the data: 2 existing rows of {table} violate `positive`" in applied.stderr
    assert "violating rows (2 shown):" in applied.stderr
    assert "nothing was applied" in applied.stderr
    assert history(project, table) == before
    # --skip-blocked must know up front: it probes, and leaves the table alone.
    skipping = invoke("apply", str(project.specs), "--yes", "--skip-blocked")
    assert skipping.exit_code == 3, skipping.output
    assert "will fail: 2 rows violate `positive`" in skipping.stdout
    assert history(project, table) == before

    project.sql(f"UPDATE {schema}.accounts SET balance = 0 WHERE balance IS NULL OR balance < 0")
    planned = invoke("plan", str(project.specs), "--detailed-exitcode")
    assert planned.exit_code == 2, planned.output
    assert "✓ data-dependent: checked: no existing row violates it" in planned.stdout
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0


def test_not_null_tightening_probed(project: Project, schema: str, accounts: Callable[..., str]) -> None:
    spec = accounts(
        base(schema).replace(
            "          - name: email\n            type: string",
            "          - name: email\n            type: string\n            nullable: false",
        )
    )
    planned = invoke("plan", str(project.specs))
    assert planned.exit_code == 3
    assert re.search(
        rf"! blocked \(data-dependent\): will fail: 1 row violates `ds_nn_email`  \[table: [0-9.]+ \w+\]  "
        rf"\({re.escape(str(spec))}:6\)",
        planned.stdout,
    ), planned.stdout
    # The one row with a NULL email, every column of it as the table will hold it.
    assert samples_of(planned.stdout) == ["id  email", "2   NULL"]
    before = history(project, f"{schema}.accounts")
    applied = invoke("apply", str(project.specs), "--yes")
    assert applied.exit_code == 3, applied.output
    assert f"1 existing row of {schema}.accounts violates NOT NULL" in applied.stderr
    assert history(project, f"{schema}.accounts") == before
    skipped = invoke("plan", str(project.specs), "--no-probes")
    assert skipped.exit_code == 0
    assert "not checked (--no-probes)" in skipped.stdout
    assert "Data checks skipped (--no-probes)" in skipped.stdout


def test_probe_checks_every_rule_of_a_table_in_one_scan(
    project: Project, schema: str, accounts: Callable[..., str], catalog: SparkCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.sql(f"UPDATE {schema}.accounts SET balance = 1, email = 'b@x' WHERE id = 2 OR id = 3")
    accounts(
        base(
            schema,
            extra="checks:\n          positive: balance >= 0\n"
            "          has_at: email LIKE '%@%'\n          small: id < 100",
        )
    )
    queries: list[str] = []
    real_sql = catalog.spark.sql

    def counting(statement: str, *args: Any, **kwargs: Any) -> Any:
        queries.append(statement)
        return real_sql(statement, *args, **kwargs)

    monkeypatch.setattr(catalog.spark, "sql", counting)
    result = pipeline.review(catalog, project.desired())
    scans = [q for q in queries if "count_if" in q or "LIMIT" in q]
    assert len(scans) == 1
    assert [p.violations for p in result.assessment.probes] == [0, 0, 0]


def test_not_null_answered_from_statistics_without_a_scan(
    project: Project, schema: str, accounts: Callable[..., str], catalog: SparkCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.sql(f"UPDATE {schema}.accounts SET email = 'b@x' WHERE email IS NULL")
    accounts(
        base(schema, properties="  delta.columnMapping.mode: name").replace(
            "type: string", "type: string\n            nullable: false"
        )
    )
    queries: list[str] = []
    real_sql = catalog.spark.sql

    def counting(statement: str, *args: Any, **kwargs: Any) -> Any:
        queries.append(statement)
        return real_sql(statement, *args, **kwargs)

    monkeypatch.setattr(catalog.spark, "sql", counting)
    result = pipeline.review(catalog, project.desired())
    assert [(p.check, p.violations, p.source) for p in result.assessment.probes] == [("ds_nn_email", 0, "statistics")]
    assert not [q for q in queries if "count_if" in q or "LIMIT" in q]
    monkeypatch.setattr(catalog.spark, "sql", real_sql)
    planned = invoke("plan", str(project.specs))
    assert "checked in Delta's statistics: no existing row violates it" in planned.stdout


def test_irreversible_type_widening(project: Project, schema: str, accounts: Callable[..., str]) -> None:
    spec = accounts(base(schema).replace("type: int", "type: bigint"))
    table = f"{schema}.accounts"
    before = history(project, table)
    planned = invoke("plan", str(project.specs))
    assert planned.exit_code == 3
    assert (
        "! blocked (irreversible): widening `id` to bigint needs type widening: "
        "`delta.enableTypeWidening` adds the typeWidening table feature: only DROP FEATURE removes it again "
        f"(rewrites the data files written before a type change, in the column's current type)  ({spec}:3)"
    ) in planned.stdout
    assert "-> allow it with --allow irreversible" in planned.stdout
    assert "To allow: --allow breaking,irreversible." in planned.stdout
    refused = invoke("apply", str(project.specs), "--yes")
    assert refused.exit_code == 3, refused.output
    assert "Nothing applied" in refused.stderr
    assert history(project, table) == before
    assert invoke("plan", str(project.specs), "--allow", "irreversible", "--allow", "breaking").exit_code == 0
    assert invoke("apply", str(project.specs), "--yes", "--allow", "irreversible,breaking").exit_code == 0
    assert project.plan().is_empty


def test_breaking_rename(project: Project, schema: str, accounts: Callable[..., str]) -> None:
    spec = accounts(
        base(schema, properties="  delta.columnMapping.mode: name").replace(
            "- name: email", "- name: email_address\n            renamed_from: email"
        )
    )
    planned = invoke("plan", str(project.specs))
    assert planned.exit_code == 3
    assert "! blocked (breaking): readers and streams that use `email` break after the rename" in planned.stdout
    assert f"after the rename  ({spec}:6)" in planned.stdout
    assert "-> allow it with --allow breaking" in planned.stdout
    before = history(project, f"{schema}.accounts")
    assert invoke("apply", str(project.specs), "--yes").exit_code == 3
    assert history(project, f"{schema}.accounts") == before
    assert "irreversible" not in planned.stdout  # column mapping is already on
    applied = invoke("apply", str(project.specs), "--yes", "--allow", "breaking")
    assert applied.exit_code == 0, applied.output
    assert project.sql(f"SELECT count(email_address) FROM {schema}.accounts") == [(2,)]


def test_unsupported_is_blocked_whatever_is_allowed(
    project: Project, schema: str, accounts: Callable[..., str]
) -> None:
    # decimal -> array: no CAST says how (a rewrite needs `using:`), so it is blocked whatever is allowed.
    spec = accounts(base(schema).replace("type: decimal(10,2)", "type: array<string>"))
    table = f"{schema}.accounts"
    before = history(project, table)
    everything = "destructive,irreversible,breaking,rewrite"
    planned = invoke("plan", str(project.specs), "--allow", everything)
    assert planned.exit_code == 3
    reason = "`balance` changes type decimal(10,2) -> array<string>, which Delta cannot do in place"
    assert f"! {reason}  ({spec}:8)" in planned.stdout
    assert "fix: keep `type: decimal(10,2)`, or say how values convert with `using:` (a rewrite)" in planned.stdout
    # The terminal view shows no class word for it; the JSON a CI script reads does.
    data = invoke("plan", str(project.specs), "--allow", everything, "--format", "json")
    assert data.exit_code == 3
    (hazard,) = [h for a in json.loads(data.stdout)["actions"] for h in a.get("hazards", ())]
    assert (hazard["class"], hazard["reason"], hazard["blocked"]) == ("unsupported", reason, True)
    assert hazard["origin"] == {"file": spec, "line": 8}
    applied = invoke("apply", str(project.specs), "--yes", "--allow", everything)
    assert applied.exit_code == 3, applied.output
    assert "Nothing applied" in applied.stderr
    assert history(project, table) == before


def test_skip_blocked_applies_the_other_tables(project: Project, schema: str, accounts: Callable[..., str]) -> None:
    accounts(base(schema).replace("type: decimal(10,2)", "type: string"))
    project.write(
        "ledger.yaml",
        f"""\
        table: {schema}.ledger
        columns:
          - name: id
            type: bigint
        """,
    )
    applied = invoke("apply", str(project.specs), "--yes", "--skip-blocked")
    assert applied.exit_code == 3, applied.output
    assert f"--skip-blocked: leaving {schema}.accounts as they are." in applied.stderr
    assert project.sql(f"SHOW TABLES IN {schema} LIKE 'ledger'") != []


def test_unknown_allow_value_is_an_error(project: Project, schema: str) -> None:
    project.write("t.yaml", f"table: {schema}.t\ncolumns:\n  - name: id\n    type: int\n")
    result = invoke("plan", str(project.specs), "--allow", "unsupported")
    assert result.exit_code == 1
    assert "cannot be allowed" in result.stderr


def test_rules_on_columns_added_or_renamed_in_the_same_plan_are_probed(
    project: Project, schema: str, accounts: Callable[..., str]
) -> None:
    accounts(
        base(
            schema,
            extra="checks:\n          w_ok: w IS NULL OR w >= 0\n          w_set: w >= 0\n"
            "          mail_ok: mail IS NULL OR mail LIKE '%@%'",
            properties="  delta.columnMapping.mode: name",
        )
        .replace("- name: email", "- name: mail\n            renamed_from: email")
        .replace(
            "          - name: balance", "          - name: w\n            type: double\n          - name: balance"
        )
    )
    result = pipeline.review(project.catalog, project.desired(), [Hazard.BREAKING])
    assert {p.check: p.violations for p in result.assessment.probes} == {"w_ok": 0, "w_set": 3, "mail_ok": 0}
    assert [b.why for b in result.assessment.blocks] == ["will fail: 3 rows violate `w_set`"]
