"""Catalog capabilities as data: what the target catalog refuses is blocked in the plan, before
anything runs, and the planner stays pure (the capabilities come in with the current state)."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys

from rich.console import Console

from delta_sync.model.state import UNITY_CATALOG, Capabilities, CatalogState, Origin
from delta_sync.planning.actions import (
    AddCheck,
    AddColumns,
    DropColumns,
    EnableFeature,
    RenameColumn,
    SetColumnComment,
    SetProperties,
    Unsupported,
)
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Hazard
from delta_sync.render import text as render
from delta_sync.spark.table_reads import CATALOG_PLUGINS, catalog_capabilities
from tests.unit.builders import col, column, live, state, table

UC_TABLE = "unity.shop.orders"
ORIGIN = Origin("specs/orders.yaml", 7)


def on(current: CatalogState, catalog: str | None, capabilities: Capabilities) -> CatalogState:
    return dataclasses.replace(current, capabilities={catalog: capabilities})


def orders(name: str = UC_TABLE, *extra: str) -> CatalogState:
    return state(live(table(name, col("id", "bigint"), col("email"), *(col(c) for c in extra))))


def renamed(name: str = UC_TABLE) -> CatalogState:
    return state(table(name, col("id", "bigint"), column("login", renamed_from="email", origin=ORIGIN)))


def test_default_capabilities_support_everything() -> None:
    assert Capabilities() == Capabilities(rename_column=True, drop_column=True)
    assert CatalogState(tables={}).capabilities_of("anything") == Capabilities()
    assert not UNITY_CATALOG.rename_column
    assert UNITY_CATALOG.drop_column


def test_rename_on_the_session_catalog_is_planned() -> None:
    result = plan(orders("shop.orders"), renamed("shop.orders"))

    kinds = [type(a) for a in result.actions]
    assert RenameColumn in kinds
    assert EnableFeature in kinds
    assert Unsupported not in kinds


def test_rename_on_unity_catalog_is_unsupported_and_nothing_else_runs_for_it() -> None:
    current = on(orders(), "unity", UNITY_CATALOG)

    result = plan(current, renamed())

    (blocked,) = result.actions
    assert isinstance(blocked, Unsupported)
    assert blocked.subject == "login"
    assert blocked.origin == ORIGIN
    assert "catalog `unity` (Unity Catalog) refuses RENAME COLUMN" in blocked.reason
    assert "`email` cannot become `login` in place" in blocked.reason
    # The way out: keep the old name, or add + fill + drop.
    assert "keep the name `email` (remove `renamed_from: email`)" in blocked.remedy
    assert 'delta-sync sql "UPDATE unity.shop.orders SET `login` = `email`"' in blocked.remedy
    # Neither the column mapping step, nor a drop of `email`, nor an add of `login`.
    assert not any(isinstance(a, RenameColumn | EnableFeature | DropColumns | AddColumns) for a in result.actions)


def test_unsupported_rename_is_an_unsupported_hazard_that_blocks_whatever_is_allowed() -> None:
    current = on(orders(), "unity", UNITY_CATALOG)
    result = plan(current, renamed())

    assessment = assess(result, current, [], allowed=set(Hazard) - {Hazard.UNSUPPORTED})

    (finding,) = assessment.findings
    assert finding.hazard is Hazard.UNSUPPORTED
    assert "refuses RENAME COLUMN" in finding.reason
    assert assessment.blocked_tables == {result.tables[0]}
    block = assessment.block_for(finding)
    assert block is not None
    assert "keep the name `email`" in block.unblock


def test_unsupported_rename_is_shown_as_blocked_with_the_way_out() -> None:
    current = on(orders(), "unity", UNITY_CATALOG)
    result = plan(current, renamed())
    buffer = io.StringIO()
    Console(width=300, file=buffer, color_system=None, theme=render.THEME).print(
        render.render_text(result, assess(result, current, [], allowed=()))
    )

    text = buffer.getvalue()
    assert "unity.shop.orders" in text
    assert "refuses RENAME COLUMN" in text
    assert "! blocked unity.shop.orders" in text
    assert "and drop `email`" in text


def test_capabilities_are_per_catalog() -> None:
    # The same rename in the session catalog next to a Unity Catalog table: only the latter is blocked.
    current = CatalogState(
        tables={**orders().tables, **orders("shop.orders").tables},
        schemas=orders().schemas | orders("shop.orders").schemas,
        capabilities={"unity": UNITY_CATALOG},
    )
    desired = CatalogState(tables={**renamed().tables, **renamed("shop.orders").tables})

    result = plan(current, desired)

    blocked = [a for a in result.actions if isinstance(a, Unsupported)]
    renames = [a for a in result.actions if isinstance(a, RenameColumn)]
    assert [str(a.name) for a in blocked] == [UC_TABLE]
    assert [str(a.name) for a in renames] == ["shop.orders"]


def test_what_unity_catalog_accepts_is_planned_as_usual() -> None:
    current = on(orders(), "unity", UNITY_CATALOG)
    desired = state(
        table(
            UC_TABLE,
            col("id", "bigint", comment="Key"),
            col("email"),
            col("currency"),
            comment="Orders",
            checks={"positive": "id > 0"},
            properties={"owner.team": "shop"},
        )
    )

    result = plan(current, desired)

    # The table comment rides along in SET TBLPROPERTIES, as on the session catalog.
    assert {type(a) for a in result.actions} == {AddColumns, SetColumnComment, SetProperties, AddCheck}
    assert not any(isinstance(a, Unsupported) for a in result.actions)


def test_a_catalog_that_refuses_drop_column_blocks_a_dropped_column() -> None:
    no_drop = Capabilities(kind="Some Catalog", drop_column=False)
    current = on(orders(UC_TABLE, "legacy"), "unity", no_drop)

    result = plan(current, state(table(UC_TABLE, col("id", "bigint"), col("email"))))

    (blocked,) = result.actions
    assert isinstance(blocked, Unsupported)
    assert blocked.subject == "legacy"
    assert "catalog `unity` (Some Catalog) refuses DROP COLUMN" in blocked.reason
    assert "keep `legacy` in the spec" in blocked.remedy


def test_a_catalog_that_refuses_drop_column_blocks_a_dropped_struct_field() -> None:
    no_drop = Capabilities(kind="Some Catalog", drop_column=False)
    before = state(live(table(UC_TABLE, col("id", "bigint"), col("address", "struct<street:string,city:string>"))))
    after = state(table(UC_TABLE, col("id", "bigint"), col("address", "struct<street:string>")))

    result = plan(on(before, "unity", no_drop), after)

    (blocked,) = result.actions
    assert isinstance(blocked, Unsupported)
    assert "`address` loses `city`, but catalog `unity` (Some Catalog) refuses DROP COLUMN" in blocked.reason
    # Without the refusal, the same change is a nested drop.
    assert any(isinstance(a, DropColumns) and a.parent == ("address",) for a in plan(before, after).actions)


def test_session_catalog_capabilities_apply_to_two_part_names() -> None:
    current = on(orders("shop.orders"), None, UNITY_CATALOG)

    result = plan(current, renamed("shop.orders"))

    (blocked,) = result.actions
    assert isinstance(blocked, Unsupported)
    assert "catalog `spark_catalog` (Unity Catalog)" in blocked.reason


def test_catalog_capabilities_come_from_the_session_settings() -> None:
    conf = {
        "spark.sql.catalog.unity": "io.unitycatalog.spark.UCSingleCatalog",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalog.other": "org.example.SomeCatalog",
    }
    assert catalog_capabilities("unity", conf.get) == UNITY_CATALOG
    assert catalog_capabilities("other", conf.get) == Capabilities()
    assert catalog_capabilities("missing", conf.get) == Capabilities()
    assert catalog_capabilities(None, conf.get) == Capabilities()
    # Two-part names go to the default catalog, which may be Unity Catalog.
    assert catalog_capabilities(None, {**conf, "spark.sql.defaultCatalog": "unity"}.get) == UNITY_CATALOG
    assert set(CATALOG_PLUGINS) == {"io.unitycatalog.spark.UCSingleCatalog"}


def test_planner_hazards_and_model_import_no_pyspark() -> None:
    code = (
        "import sys; import delta_sync.planning.diff.planner, delta_sync.planning.hazards, delta_sync.model.state; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
