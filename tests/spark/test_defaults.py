"""Project defaults and ignored tables on real Delta, through the project file as the commands read it:
`strict: true` leaves a table another tool owns alone; a default property reaches every table on apply (new
and existing), a spec overrides it and a `null` opts out; `import` right after leaves the default out and a
plan of what it wrote is empty.

One catalog and one schema per test: each Delta commit through Derby costs about a second.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from delta_sync.model.state import CatalogState, TableName
from delta_sync.planning.actions import RemoveTable, SetProperties
from delta_sync.planning.hazards import Hazard
from delta_sync.render import text as render
from delta_sync.review import environments, execution, pipeline, readonly
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import Project as Settings

from .conftest import Project

ALLOW = frozenset({Hazard.BREAKING, Hazard.DESTRUCTIVE, Hazard.IRREVERSIBLE})
CDF = "delta.enableChangeDataFeed"
RETENTION = "delta.logRetentionDuration"


def spec(schema: str, name: str, properties: str = "") -> str:
    text = f"table: {schema}.{name}\ncolumns:\n  - name: id\n    type: bigint\n"
    return text + (f"properties:\n  {properties}\n" if properties else "")


def settings(project: Project, text: str) -> Settings:
    (project.root / "delta-sync.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    return load_project(project.root)


def desired(settings: Settings, env: str | None = None, specs: Path | None = None) -> CatalogState:
    return environments.load_desired(settings, settings.env(env), specs)


def apply(project: Project, want: CatalogState) -> None:
    review = pipeline.review(project.catalog, want, ALLOW, applying=True)
    assert not review.assessment.blocks, review.assessment.blocks
    execution.apply_plan(project.catalog, review.plan)
    again = pipeline.make_plan(project.catalog, want)
    assert again.is_empty, again.actions


def test_strict_leaves_an_ignored_table_alone(project: Project, schema: str) -> None:
    project.sql(f"CREATE SCHEMA {schema}")
    for name in ("dbt_daily", "sink", "stray"):
        project.sql(f"CREATE TABLE {schema}.{name} (id BIGINT) USING DELTA")
    project.write("orders.yaml", spec(schema, "orders"))
    found = settings(
        project, f"ignore: ['{schema}.dbt_*', '{schema.upper()}.SINK']\nenvs:\n  local: {{strict: true}}\n"
    )
    want = desired(found)

    plan = pipeline.make_plan(project.catalog, want)

    assert [a.name for a in plan.actions if isinstance(a, RemoveTable)] == [TableName.parse(f"{schema}.stray")]
    apply(project, want)
    left = {str(row[1]) for row in project.sql(f"SHOW TABLES IN {schema}")}
    assert left == {"orders", "dbt_daily", "sink"}


def test_defaults_reach_every_table_a_spec_overrides_or_opts_out_and_import_converges(
    project: Project, schema: str
) -> None:
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(f"CREATE TABLE {schema}.existing (id BIGINT) USING DELTA")
    project.write("existing.yaml", spec(schema, "existing"))
    project.write("fresh.yaml", spec(schema, "fresh"))
    project.write("own.yaml", spec(schema, "own", f"{RETENTION}: interval 7 days"))
    project.write("opted.yaml", spec(schema, "opted", f"{CDF}: null"))
    found = settings(
        project,
        f"""\
        defaults:
          {CDF}: true
          {RETENTION}: interval 45 days
        """,
    )
    want = desired(found)
    plan = pipeline.make_plan(project.catalog, want)
    change = next(a for a in plan.actions if isinstance(a, SetProperties) and a.name.name == "existing")
    assert {c.key: c.default for c in change.changes} == {CDF: True, RETENTION: True}
    assert "(project default)" in render.plain_text(render.render_text(plan))

    apply(project, want)

    def has(name: str) -> dict[str, str | None]:
        properties = project.properties(f"{schema}.{name}")
        return {key: properties.get(key) for key in (CDF, RETENTION)}

    assert has("existing") == {CDF: "true", RETENTION: "interval 45 days"}
    assert has("fresh") == {CDF: "true", RETENTION: "interval 45 days"}
    assert has("own") == {CDF: "true", RETENTION: "interval 7 days"}
    assert has("opted") == {CDF: None, RETENTION: "interval 45 days"}

    out = project.root / "imported"
    names = readonly.import_targets(project.catalog, [schema], found.ignore)
    written, skipped = readonly.import_specs(project.catalog, names, out, defaults=found.env().table_defaults)
    assert not skipped
    assert len(written) == 4
    texts = {path.stem: path.read_text() for path in written}
    assert "properties" not in texts["existing"]
    assert "properties" not in texts["fresh"]
    assert f"{RETENTION}: interval 7 days" in texts["own"]
    assert CDF not in texts["own"]
    assert f"{CDF}: null" in texts["opted"]
    assert RETENTION not in texts["opted"]

    again = pipeline.make_plan(project.catalog, desired(found, specs=out))
    assert again.is_empty, again.actions
