"""Changes that move data, on real Delta with rows: backfills (UPDATE ... WHERE c IS NULL, then NOT NULL)
and rewrites (one REPLACE TABLE ... AS SELECT). Each kind: the plan's hazards, exit codes and text, the
rows kept (count and a checksum of the unchanged columns), the values converted as the spec says, the
history stamped with the plan, and a second plan that is empty with `backfill` / `using` still in the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.review import environments
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

runner = CliRunner()


@pytest.fixture(autouse=True)
def real_catalog(monkeypatch: pytest.MonkeyPatch, catalog: SparkCatalog) -> None:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    monkeypatch.setenv("COLUMNS", "220")


def invoke(*args: str) -> Result:
    return runner.invoke(cli.app, list(args))


def fingerprint(project: Project, table: str, columns: str) -> tuple[int, int]:
    """Row count and an order-independent checksum of `columns` (a SQL list)."""
    row = project.sql(f"SELECT count(*), coalesce(sum(CAST(xxhash64({columns}) AS decimal(38,0))), 0) FROM {table}")[0]
    return int(str(row[0])), int(str(row[1]))


def history(project: Project, table: str) -> list[tuple[int, str, str | None]]:
    rows = project.catalog.spark.sql(f"DESCRIBE HISTORY {table}").collect()
    return [(int(r["version"]), str(r["operation"]), r["userMetadata"]) for r in rows]


def converged(project: Project) -> None:
    again = invoke("plan", str(project.specs), "--detailed-exitcode")
    assert again.exit_code == 0, again.output
    assert "No changes" in again.stdout


def spec(schema: str, columns: str, extra: str = "") -> str:
    return f"table: {schema}.t\ncolumns:\n{columns}{extra}"


BASE = """\
  - name: id
    type: bigint
    nullable: false
    comment: the key
  - name: amount
    type: string
  - name: d
    type: date
"""


def test_backfill_a_new_not_null_column_and_tighten_another(project: Project, schema: str) -> None:
    project.write("t.yaml", spec(schema, BASE, "checks:\n  id_positive: id > 0\nproperties:\n  team: core\n"))
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(
        f"INSERT INTO {schema}.t VALUES (1, '10', DATE'2026-01-01'), (2, NULL, DATE'2026-01-02'), (3, '7', NULL)"
    )
    before = fingerprint(project, f"{schema}.t", "id, d")

    # Without backfill: blocked, and the remedy names the key.
    project.write(
        "t.yaml",
        spec(schema, BASE + "  - name: region\n    type: string\n    nullable: false\n"),
    )
    blocked = invoke("plan", str(project.specs))
    assert blocked.exit_code == 3, blocked.output
    assert "backfill: <SQL expression>" in blocked.stdout

    columns = BASE.replace(
        "  - name: amount\n    type: string\n",
        "  - name: amount\n    type: string\n    nullable: false\n    backfill: \"'0'\"\n",
    )
    columns += "  - name: region\n    type: string\n    nullable: false\n    backfill: \"concat('r', id)\"\n"
    project.write("t.yaml", spec(schema, columns, "checks:\n  id_positive: id > 0\nproperties:\n  team: core\n"))
    plan = invoke("plan", str(project.specs))
    assert plan.exit_code == 3, plan.output
    assert "! blocked (rewrite): UPDATE rewrites the data files holding rows where `amount` is NULL" in plan.stdout
    assert "1 row to update" in plan.stdout  # amount: one NULL
    assert "3 rows to update" in plan.stdout  # region: every row
    assert "allow it with --allow rewrite" in plan.stdout

    planned = json.loads(invoke("plan", str(project.specs), "--format", "json").stdout)
    sources = {p["check"]: (p["violations"], p["source"]) for p in planned["probes"]}
    assert sources["ds_fill_amount"] == (1, "scan")  # one scan for the table: `region`'s backfill needs it
    assert sources["ds_nn_amount"] == (0, "backfill")  # a constant backfill leaves no NULL: not scanned
    assert sources["ds_nn_region"] == (0, "scan")

    sql = invoke("plan", str(project.specs), "--format", "sql")
    assert f"UPDATE `{schema}`.`t` SET `region` = (concat('r', id)) WHERE `region` IS NULL" in sql.stdout

    applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite")
    assert applied.exit_code == 0, applied.output
    rows = project.sql(f"SELECT id, amount, region FROM {schema}.t ORDER BY id")
    assert rows == [(1, "10", "r1"), (2, "0", "r2"), (3, "7", "r3")]
    assert fingerprint(project, f"{schema}.t", "id, d") == before
    with pytest.raises(Exception, match="ds_nn_region"):
        project.sql(f"INSERT INTO {schema}.t VALUES (4, '1', NULL, NULL)")
    updates = [h for h in history(project, f"{schema}.t") if h[1] == "UPDATE"]
    assert len(updates) == 2
    assert all('"action":"Backfill"' in str(h[2]) for h in updates)
    converged(project)  # backfill: stays in the spec, inert

    # A constant backfill alone needs no scan: Delta's per-file null counts say how many rows it updates.
    constant = columns.replace(
        "  - name: d\n    type: date\n",
        "  - name: d\n    type: date\n    nullable: false\n    backfill: DATE'2026-01-01'\n",
    )
    project.write("t.yaml", spec(schema, constant, "checks:\n  id_positive: id > 0\nproperties:\n  team: core\n"))
    planned = json.loads(invoke("plan", str(project.specs), "--format", "json").stdout)
    sources = {p["check"]: (p["violations"], p["source"]) for p in planned["probes"]}
    assert sources == {"ds_fill_d": (1, "statistics"), "ds_nn_d": (0, "backfill")}
    applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite")
    assert applied.exit_code == 0, applied.output
    assert project.sql(f"SELECT count(*) FROM {schema}.t WHERE d = DATE'2026-01-01'") == [(2,)]
    converged(project)


def test_a_backfill_that_gives_null_blocks_with_the_rows(project: Project, schema: str) -> None:
    project.write("t.yaml", spec(schema, BASE))
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(f"INSERT INTO {schema}.t VALUES (1, NULL, NULL), (2, NULL, DATE'2026-01-02')")
    columns = BASE.replace(
        "  - name: amount\n    type: string\n",
        "  - name: amount\n    type: string\n    nullable: false\n    backfill: CAST(d AS string)\n",
    )
    project.write("t.yaml", spec(schema, columns))
    plan = invoke("plan", str(project.specs), "--allow", "rewrite")
    assert plan.exit_code == 3, plan.output
    assert "will fail: the backfill of `amount` (CAST(d AS string)) is NULL for 1 row" in plan.stdout
    applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite")
    assert applied.exit_code == 3, applied.output
    assert project.sql(f"SELECT count(*) FROM {schema}.t WHERE amount IS NULL") == [(2,)]  # nothing ran


def test_type_changes_rewrite_the_table_keeping_every_row(project: Project, schema: str) -> None:
    table = f"{schema}.t"
    project.write(
        "t.yaml",
        spec(
            schema,
            BASE,
            "checks:\n  id_positive: id > 0\npartitioned_by: [d]\ncomment: facts\nproperties:\n  team: core\n",
        ),
    )
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(f"INSERT INTO {table} VALUES (1, '10', DATE'2026-01-01'), (2, '20', DATE'2026-01-02'), (3, NULL, NULL)")
    before = fingerprint(project, table, "id, d")
    version = history(project, table)[0][0]

    # string -> int without `using`: CAST.
    int_amount = BASE.replace("    type: string\n", "    type: int\n    comment: in cents\n", 1)
    project.write(
        "t.yaml",
        spec(
            schema,
            int_amount,
            "checks:\n  id_positive: id > 0\npartitioned_by: [d]\ncomment: facts\nproperties:\n  team: core\n",
        ),
    )
    plan = invoke("plan", str(project.specs))
    assert plan.exit_code == 3, plan.output
    assert f"rewrite the table: one REPLACE TABLE ... AS SELECT, restore point version {version}" in plan.stdout
    assert "column amount type: string -> int as CAST(`amount` AS int)" in plan.stdout
    assert "! blocked (rewrite): REPLACE TABLE ... AS SELECT rewrites every data file of the table" in plan.stdout
    assert "! blocked (breaking): readers of `amount` see int instead of string" in plan.stdout
    assert "✓ data-dependent: checked: no existing row violates it" in plan.stdout
    planned = json.loads(invoke("plan", str(project.specs), "--format", "json").stdout)
    rewrite = next(a for a in planned["actions"] if a["kind"] == "RewriteTable")
    assert rewrite["restore_version"] == version
    assert rewrite["num_files"] >= 1
    assert rewrite["size_bytes"] > 0

    applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,breaking")
    assert applied.exit_code == 0, applied.output
    assert project.sql(f"SELECT id, amount FROM {table} ORDER BY id") == [(1, 10), (2, 20), (3, None)]
    assert fingerprint(project, table, "id, d") == before
    latest = history(project, table)[0:3]
    rewrite_commit = next(h for h in latest if h[1] == "REPLACE TABLE AS SELECT")
    stamp = json.loads(str(rewrite_commit[2]))["delta-sync"]
    assert stamp["action"] == "RewriteTable"
    assert stamp["restore_version"] == version
    properties = project.properties(table)
    assert properties["team"] == "core"
    assert properties["delta.constraints.id_positive"] == "id > 0"
    detail = project.catalog.spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]
    assert list(detail["partitionColumns"]) == ["d"]  # still partitioned by d
    with pytest.raises(Exception, match="id_positive"):
        project.sql(f"INSERT INTO {table} VALUES (-1, 1, NULL)")
    # REPLACE ... AS SELECT makes every column nullable: NOT NULL is restated as delta-sync's CHECK.
    assert properties["delta.constraints.ds_nn_id"] == "`id` IS NOT NULL"
    converged(project)

    # Restore point: Delta's own RESTORE brings back the table as it was.
    assert project.sql(f"SELECT count(*) FROM {table} VERSION AS OF {version}") == [(3,)]

    # A cast that fails on some rows: blocked with the rows, nothing runs.
    project.sql(f"INSERT INTO {table} VALUES (4, 2147483647, DATE'2026-01-04')")
    small = int_amount.replace("    type: int\n", "    type: smallint\n", 1)
    project.write(
        "t.yaml",
        spec(
            schema,
            small,
            "checks:\n  id_positive: id > 0\npartitioned_by: [d]\ncomment: facts\nproperties:\n  team: core\n",
        ),
    )
    failing = invoke("plan", str(project.specs), "--allow", "rewrite,breaking")
    assert failing.exit_code == 3, failing.output
    assert "will fail: 1 row holds a `amount` that does not convert to smallint" in failing.stdout
    assert "amount (before)" in failing.stdout
    assert "2147483647" in failing.stdout
    refused = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,breaking")
    assert refused.exit_code == 3
    assert project.sql(f"SELECT max(amount) FROM {table}") == [(2147483647,)]

    # With `using`, the spec says how: here, clamp.
    using = small.replace(
        "    type: smallint\n", "    type: smallint\n    using: CAST(least(amount, 32767) AS smallint)\n", 1
    )
    project.write(
        "t.yaml",
        spec(
            schema,
            using,
            "checks:\n  id_positive: id > 0\npartitioned_by: [d]\ncomment: facts\nproperties:\n  team: core\n",
        ),
    )
    before = fingerprint(project, table, "id, d")
    applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,breaking")
    assert applied.exit_code == 0, applied.output
    # least() skips NULLs: the `using` expression decides, row 3 included.
    assert project.sql(f"SELECT id, amount FROM {table} ORDER BY id") == [(1, 10), (2, 20), (3, 32767), (4, 32767)]
    assert fingerprint(project, table, "id, d") == before
    converged(project)  # `using` stays in the spec, inert


def test_decimal_narrowing_and_int_to_string(project: Project, schema: str) -> None:
    table = f"{schema}.m"
    first = f"""\
table: {table}
columns:
  - name: id
    type: bigint
  - name: price
    type: decimal(10,2)
  - name: qty
    type: int
checks:
  price_ok: price >= 0
"""
    project.write("m.yaml", first)
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(f"INSERT INTO {table} VALUES (1, 12.34, 5), (2, 999999.99, NULL)")
    second = first.replace(
        "type: decimal(10,2)", "type: decimal(8,2)\n    using: CAST(least(price, 99999.99) AS decimal(8,2))"
    ).replace("type: int", "type: string")
    project.write("m.yaml", second)
    applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,breaking")
    assert applied.exit_code == 0, applied.output
    rows = project.sql(f"SELECT id, CAST(price AS string), qty FROM {table} ORDER BY id")
    assert rows == [(1, "12.34", "5"), (2, "99999.99", None)]
    types = {r[0]: r[1] for r in project.sql(f"DESCRIBE TABLE {table}") if r[0] in ("price", "qty")}
    assert types == {"price": "decimal(8,2)", "qty": "string"}
    converged(project)


LAYOUT = """\
  - name: id
    type: bigint
    nullable: false
  - name: region
    type: string
    comment: sales region
  - name: d
    type: date
"""


def test_layout_changes_rewrite_the_table(project: Project, schema: str) -> None:
    table = f"{schema}.l"

    def write(layout: str) -> None:
        project.write("l.yaml", f"table: {table}\ncolumns:\n{LAYOUT}checks:\n  known: region <> ''\n{layout}")

    write("partitioned_by: [d]\n")
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(
        f"INSERT INTO {table} VALUES (1, 'eu', DATE'2026-01-01'), (2, 'us', DATE'2026-01-02'), (3, 'apac', NULL)"
    )
    before = fingerprint(project, table, "id, region, d")
    steps = [
        ("partitioned_by: [region]\n", ["region"], []),  # partition columns changed
        ("clustered_by: [d]\n", [], ["d"]),  # partitioned -> clustered
    ]
    for layout, partitions, clustering in steps:
        write(layout)
        plan = invoke("plan", str(project.specs))
        assert plan.exit_code == 3, plan.output
        assert "rewrite the table: one REPLACE TABLE ... AS SELECT" in plan.stdout
        applied = invoke("apply", str(project.specs), "--yes", "--allow", "rewrite,irreversible")
        assert applied.exit_code == 0, applied.output
        detail = project.catalog.spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]
        assert (list(detail["partitionColumns"]), list(detail["clusteringColumns"])) == (partitions, clustering)
        assert fingerprint(project, table, "id, region, d") == before
        comments = {r[0]: r[2] for r in project.sql(f"DESCRIBE TABLE {table}")}
        assert comments["region"] == "sales region"
        assert project.properties(table)["delta.constraints.known"] == "region <> ''"
        converged(project)
    # clustered -> partitioned: Delta refuses REPLACE of a clustered table by a partitioned one.
    write("partitioned_by: [d]\n")
    refused = invoke("plan", str(project.specs), "--allow", "rewrite")
    assert refused.exit_code == 3, refused.output
    assert "DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE" in refused.stdout


def test_a_generated_column_change_is_refused_with_the_reason(project: Project, schema: str) -> None:
    table = f"{schema}.g"
    text = f"""\
table: {table}
columns:
  - name: id
    type: bigint
  - name: twice
    type: bigint
    generated: id * 2
"""
    project.write("g.yaml", text)
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(f"INSERT INTO {table} (id) VALUES (1)")
    project.write("g.yaml", text.replace("id * 2", "id * 3"))
    plan = invoke("plan", str(project.specs), "--allow", "rewrite")
    assert plan.exit_code == 3, plan.output
    assert "changes its generation or identity" in plan.stdout
    # A partitioning change of a table with a generated column cannot be rewritten either, and says why.
    project.write("g.yaml", text + "partitioned_by: [id]\n")
    plan = invoke("plan", str(project.specs), "--allow", "rewrite")
    assert plan.exit_code == 3, plan.output
    assert "delta-sync cannot rewrite this table: `twice` is a generated column" in plan.stdout


def test_backfill_and_using_are_analysed_at_their_line(project: Project, schema: str) -> None:
    project.write("t.yaml", spec(schema, BASE))
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(f"INSERT INTO {schema}.t VALUES (1, NULL, NULL)")
    bad_fill = BASE.replace(
        "  - name: amount\n    type: string\n",
        "  - name: amount\n    type: string\n    nullable: false\n    backfill: no_such_column || 'x'\n",
    )
    path = project.write("t.yaml", spec(schema, bad_fill))
    result = invoke("plan", str(project.specs), "--allow", "rewrite")
    assert result.exit_code == 1, result.output
    assert f"{path}:7: backfill of `amount` of {schema}.t:" in result.output
    assert "no_such_column" in result.output
    random_using = BASE.replace("    type: string\n", "    type: int\n    using: CAST(rand() * 10 AS int)\n", 1)
    path = project.write("t.yaml", spec(schema, random_using))
    result = invoke("plan", str(project.specs), "--allow", "rewrite,breaking")
    assert result.exit_code == 1, result.output
    assert f"{path}:7: using of `amount` of {schema}.t: is not deterministic" in result.output


def test_a_saved_plan_with_a_rewrite_and_a_backfill_applies_exactly(
    project: Project, schema: str, tmp_path: Path
) -> None:
    table = f"{schema}.t"
    project.write("t.yaml", spec(schema, BASE))
    assert invoke("apply", str(project.specs), "--yes").exit_code == 0
    project.sql(f"INSERT INTO {table} VALUES (1, '5', NULL), (2, NULL, DATE'2026-01-01')")
    version = history(project, table)[0][0]
    changed = BASE.replace("    type: string\n", "    type: int\n    nullable: false\n    backfill: '0'\n", 1)
    project.write("t.yaml", spec(schema, changed))
    saved = tmp_path / "plan.json"
    made = invoke("plan", str(project.specs), "--out", str(saved), "--allow", "rewrite,breaking")
    assert made.exit_code == 0, made.output
    document = json.loads(saved.read_text())
    kinds = [a["kind"] for a in document["typed_actions"]]
    assert kinds == ["RewriteTable", "Backfill", "AddCheck"]
    assert document["typed_actions"][0]["restore_version"] == version
    applied = invoke("apply", str(saved), "--yes", "--allow", "rewrite,breaking")
    assert applied.exit_code == 0, applied.output
    assert project.sql(f"SELECT id, amount FROM {table} ORDER BY id") == [(1, 5), (2, 0)]
    converged(project)
