"""import writes a table's keys back as a spec declares them, and the spec reads back as the same keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_sync.model import keys
from delta_sync.model.state import Column, ForeignKey, PrimaryKey, Table, TableName
from delta_sync.planning.diff import planner
from delta_sync.specs.importer import spec_data, spec_text
from delta_sync.specs.spec_files import load_spec_files

ORDERS = TableName(None, "shop", "orders")
CUSTOMERS = TableName(None, "shop", "customers")


def live(primary_key: PrimaryKey | None, *foreign_keys: ForeignKey, name: TableName = ORDERS) -> Table:
    return Table(
        name=name,
        columns=(
            Column("order_id", "bigint", nullable=False),
            Column("customer_id", "bigint"),
            Column("weird col", "string", nullable=False),
        ),
        primary_key=primary_key,
        foreign_keys=foreign_keys,
    )


def read_back(table: Table, tmp_path: Path) -> Table:
    path = tmp_path / "spec.yaml"
    path.write_text(spec_text(table), encoding="utf-8")
    (loaded,) = load_spec_files([path]).tables.values()
    return loaded


def test_default_names_are_written_in_the_short_form() -> None:
    pk = PrimaryKey(keys.primary_key_name(ORDERS, ["order_id"]), ("order_id",))
    fk = ForeignKey(keys.foreign_key_name(ORDERS, ["customer_id"], CUSTOMERS), ("customer_id",), CUSTOMERS, ("id",))

    data = spec_data(live(pk, fk))

    assert data["primary_key"] == ["order_id"]
    assert data["foreign_keys"] == [{"columns": ["customer_id"], "references": "shop.customers(id)"}]
    assert list(data) == ["table", "columns", "primary_key", "foreign_keys"]


def test_other_names_are_written_in_the_long_form() -> None:
    pk = PrimaryKey("orders_pk", ("order_id", "weird col"))
    fk = ForeignKey("to_customer", ("customer_id",), TableName("crm", "people", "all"), ("person id",))

    text = spec_text(live(pk, fk))

    assert yaml.safe_load(text)["primary_key"] == {"name": "orders_pk", "columns": ["order_id", "weird col"]}
    assert yaml.safe_load(text)["foreign_keys"] == [
        {"columns": ["customer_id"], "references": "crm.people.all(`person id`)", "name": "to_customer"}
    ]


def test_no_keys_no_key_entries() -> None:
    assert "primary_key" not in spec_data(live(None))
    assert "foreign_keys" not in spec_data(live(None))


def test_key_properties_that_did_not_read_as_keys_are_not_imported() -> None:
    table = Table(
        name=ORDERS,
        columns=(Column("id", "bigint"),),
        properties=(("delta_sync.foreign_key.x", "{}"), ("delta_sync.primary_key", "junk"), ("team", "a")),
    )

    assert spec_data(table)["properties"] == {"team": "a"}


def test_imported_keys_read_back_the_same_and_plan_nothing(tmp_path: Path) -> None:
    pk = PrimaryKey(keys.primary_key_name(ORDERS, ["weird col", "order_id"]), ("weird col", "order_id"))
    fks = (
        # Its own table, so checked against its primary key.
        ForeignKey("fk_named", ("weird col", "order_id"), ORDERS, ("weird col", "order_id")),
        ForeignKey(keys.foreign_key_name(ORDERS, ["customer_id"], CUSTOMERS), ("customer_id",), CUSTOMERS, ("id",)),
    )
    table = live(pk, *fks)

    loaded = read_back(table, tmp_path)

    assert (loaded.primary_key, loaded.foreign_keys) == (table.primary_key, table.foreign_keys)
    assert planner.diff_table(table, loaded) == []


identifiers = st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True)
# Column names as Delta allows them with column mapping: anything on one line.
column_names = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\n\r\x85\u2028\u2029"), min_size=1, max_size=12
).filter(lambda s: bool(s.strip()))
table_names = st.builds(
    TableName,
    st.none() | identifiers,
    identifiers,
    identifiers,
).filter(lambda t: t.catalog != "spark_catalog")


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    columns=st.lists(column_names, min_size=2, max_size=5, unique_by=str.lower),
    data=st.data(),
)
def test_any_keys_round_trip_through_a_spec(
    tmp_path_factory: pytest.TempPathFactory, columns: list[str], data: st.DataObject
) -> None:
    key_columns = data.draw(st.lists(st.sampled_from(columns), min_size=1, unique_by=str.lower), label="key")
    pk_name = data.draw(st.none() | identifiers, label="pk name")
    name_of = pk_name or keys.primary_key_name(ORDERS, key_columns)
    pk = PrimaryKey(name_of, tuple(key_columns))
    fks = []
    for i in range(data.draw(st.integers(0, 3), label="fks")):
        parent = data.draw(table_names.filter(lambda t: t != ORDERS), label="parent")
        fk_columns = data.draw(st.lists(st.sampled_from(columns), min_size=1, unique_by=str.lower), label="fk")
        references = data.draw(st.lists(column_names, min_size=len(fk_columns), max_size=len(fk_columns)))
        fk_name = data.draw(st.none() | identifiers.map(f"{{}}_{i}".format), label="fk name")
        name = fk_name or keys.foreign_key_name(ORDERS, fk_columns, parent)
        fks.append(ForeignKey(name, tuple(fk_columns), parent, tuple(references)))
    if len({fk.name for fk in fks} | {pk.name}) != len(fks) + 1:
        return  # two keys of one name: a spec refuses that
    table = Table(
        name=ORDERS,
        columns=tuple(Column(c, "bigint", nullable=False) for c in columns),
        primary_key=pk,
        foreign_keys=tuple(sorted(fks, key=lambda fk: fk.name)),
    )
    loaded = read_back(table, tmp_path_factory.mktemp("keys"))

    assert loaded.primary_key == table.primary_key
    assert loaded.foreign_keys == table.foreign_keys
