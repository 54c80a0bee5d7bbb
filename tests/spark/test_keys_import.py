"""Keys kept in table properties (as delta-sync writes them on open-source Delta) are read as keys, not
properties, by both read paths; `import` writes them into the spec, which loads as the same keys."""

from __future__ import annotations

from pathlib import Path

from delta_sync.model import keys
from delta_sync.model.state import ForeignKey, PrimaryKey, Table, TableName, View
from delta_sync.review import pipeline, readonly
from delta_sync.specs.spec_files import load_specs

from .conftest import Project


def set_properties(project: Project, table: str, properties: dict[str, str]) -> None:
    # JSON holds no single quote, so the values go in as plain SQL string literals.
    assigned = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    project.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({assigned})")


def present(table: Table | View | None) -> Table:
    assert isinstance(table, Table)
    return table


def test_keys_in_properties_read_import_and_load_as_keys(project: Project, schema: str, tmp_path: Path) -> None:
    customers, orders = TableName(None, schema, "customers"), TableName(None, schema, "orders")
    project.sql(f"CREATE SCHEMA {schema}")
    project.sql(f"CREATE TABLE {customers} (id BIGINT NOT NULL, region STRING) USING DELTA")
    project.sql(
        f"CREATE TABLE {orders} (order_id BIGINT NOT NULL, customer_id BIGINT, parent_id BIGINT) USING DELTA "
        "TBLPROPERTIES ('owner.team' = 'sales')"
    )
    project.sql(f"INSERT INTO {customers} VALUES (1, 'eu')")
    customers_pk = PrimaryKey(keys.primary_key_name(customers, ["id"]), ("id",))
    orders_pk = PrimaryKey("orders_pk", ("order_id",))
    to_customer = ForeignKey(
        keys.foreign_key_name(orders, ["customer_id"], customers), ("customer_id",), customers, ("id",)
    )
    to_parent = ForeignKey("order_parent", ("parent_id",), orders, ("order_id",))
    set_properties(project, str(customers), {keys.PRIMARY_KEY_PROPERTY: keys.encode_primary_key(customers_pk)})
    set_properties(
        project,
        str(orders),
        {
            keys.PRIMARY_KEY_PROPERTY: keys.encode_primary_key(orders_pk),
            **{keys.foreign_key_property(fk): keys.encode_foreign_key(fk) for fk in (to_customer, to_parent)},
        },
    )
    assert keys.foreign_key_property(to_parent) in project.properties(str(orders))  # kept as written

    # The fast read (metastore entry + Delta snapshot) and the SQL-only one (other catalogs, Spark Connect).
    read = project.catalog.read([customers, orders])
    for described in (False, True):
        have = {
            name: present(project.catalog._read_described(name) if described else read.table(name))
            for name in (customers, orders)
        }
        assert (have[customers].primary_key, have[customers].foreign_keys) == (customers_pk, ())
        assert have[orders].primary_key == orders_pk
        assert have[orders].foreign_keys == tuple(sorted((to_parent, to_customer), key=lambda fk: fk.name))
        for table in have.values():
            assert not any(k.startswith("delta_sync.") for k, _ in table.properties), table.properties
        assert ("owner.team", "sales") in have[orders].properties

    out = tmp_path / "imported"
    _, skipped = readonly.import_specs(project.catalog, [customers, orders], out)
    assert skipped == []
    orders_text = (out / schema / "orders.yaml").read_text()
    assert "delta_sync." not in orders_text
    assert f"references: {schema}.customers(id)" in orders_text
    assert "primary_key:\n  name: orders_pk\n" in orders_text
    # In fmt's layout: import writes what `fmt` would (issue 38).
    assert "primary_key:\n  - id\n" in (out / schema / "customers.yaml").read_text()

    desired = load_specs(out)
    for name in (customers, orders):
        want, live = desired.tables[name], present(read.table(name))
        assert (want.primary_key, want.foreign_keys) == (live.primary_key, live.foreign_keys)
    assert pipeline.make_plan(project.catalog, desired).is_empty
