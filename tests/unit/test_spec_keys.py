"""primary_key / foreign_keys in specs: the two forms, default names, and every offline rule at its line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from delta_sync.model import keys
from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import ForeignKey, Origin, PrimaryKey, Table, TableName
from delta_sync.specs.spec_files import load_spec_files
from delta_sync.specs.spec_models import spec_json_schema
from delta_sync.specs.spec_values import parse_references, references_text

CUSTOMERS = """\
table: shop.customers
columns:
  - name: Customer_ID
    type: bigint
    nullable: false
  - name: region
    type: string
    nullable: false
primary_key: [customer_id]
"""

ORDERS_HEAD = """\
table: shop.orders
columns:
  - name: order_id
    type: bigint
    nullable: false
  - name: customer_id
    type: bigint
  - name: note
    type: string
"""

CUSTOMERS_T = TableName(None, "shop", "customers")
ORDERS_T = TableName(None, "shop", "orders")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Problems name files relative to the working directory.
    monkeypatch.chdir(tmp_path)


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(tmp_path: Path, orders: str, customers: str | None = CUSTOMERS) -> list[SpecProblem]:
    paths = [write(tmp_path, "orders.yaml", orders)]
    if customers is not None:
        paths.insert(0, write(tmp_path, "customers.yaml", customers))
    with pytest.raises(SpecError) as info:
        load_spec_files(paths)
    return list(info.value.problems)


def only(tmp_path: Path, orders: str, customers: str | None = CUSTOMERS) -> SpecProblem:
    found = problems_of(tmp_path, orders, customers)
    assert len(found) == 1, found
    return found[0]


def tables(tmp_path: Path, orders: str, customers: str | None = CUSTOMERS) -> dict[str, Table]:
    paths = [write(tmp_path, "orders.yaml", orders)]
    if customers is not None:
        paths.append(write(tmp_path, "customers.yaml", customers))
    return {t.name.name: t for t in load_spec_files(paths).tables.values()}


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# --- the forms ----------------------------------------------------------------------------------------


def test_short_primary_key_gets_the_default_name_and_declared_spelling(tmp_path: Path) -> None:
    customers = tables(tmp_path, ORDERS_HEAD)["customers"]

    assert customers.primary_key == PrimaryKey("pk_shop_customers__customer_id", ("Customer_ID",))
    assert customers.primary_key.origin == Origin("customers.yaml", 9)


def test_long_primary_key_keeps_its_name_lower_cased(tmp_path: Path) -> None:
    text = ORDERS_HEAD + "primary_key:\n  name: Orders_PK\n  columns: [ORDER_ID]\n"
    orders = tables(tmp_path, text, None)["orders"]

    assert orders.primary_key == PrimaryKey("orders_pk", ("order_id",))


def test_long_primary_key_without_name_gets_the_default(tmp_path: Path) -> None:
    text = ORDERS_HEAD + "primary_key: {columns: [order_id]}\n"
    orders = tables(tmp_path, text, None)["orders"]

    assert orders.primary_key == PrimaryKey(keys.primary_key_name(ORDERS_T, ["order_id"]), ("order_id",))


def test_foreign_keys_default_and_given_names_sorted_by_name(tmp_path: Path) -> None:
    text = ORDERS_HEAD + (
        "primary_key: [order_id]\n"
        "foreign_keys:\n"
        "  - columns: [customer_id]\n"
        '    references: "shop.customers(customer_id)"\n'
        "  - {columns: [order_id], references: shop.orders(order_id), name: A_self}\n"
    )
    orders = tables(tmp_path, text)["orders"]

    assert orders.foreign_keys == (
        ForeignKey("a_self", ("order_id",), ORDERS_T, ("order_id",)),
        ForeignKey("fk_shop_orders__customer_id__shop_customers", ("customer_id",), CUSTOMERS_T, ("customer_id",)),
    )
    origins = {fk.name: fk.origin for fk in orders.foreign_keys}
    assert origins["a_self"] == Origin("orders.yaml", line_of(text, "A_self"))
    assert origins["fk_shop_orders__customer_id__shop_customers"] == Origin("orders.yaml", line_of(text, "- columns"))


def test_environment_catalog_and_vars_apply_to_a_two_part_reference(tmp_path: Path) -> None:
    text = ORDERS_HEAD + (
        "foreign_keys:\n"
        "  - {columns: [customer_id], references: '${schema}.customers(customer_id)'}\n"
        "  - {columns: [order_id], references: 'other.s.t(id)', name: elsewhere}\n"
    )
    customers = CUSTOMERS.replace("shop.customers", "${schema}.customers")
    paths = [write(tmp_path, "orders.yaml", text), write(tmp_path, "customers.yaml", customers)]

    state = load_spec_files(paths, vars={"schema": "shop"}, catalog="main")

    orders = state.tables[TableName("main", "shop", "orders")]
    parents = {fk.name: fk.table for fk in orders.foreign_keys}
    assert parents == {
        "elsewhere": TableName("other", "s", "t"),
        "fk_main_shop_orders__customer_id__main_shop_customers": TableName("main", "shop", "customers"),
    }


def test_undeclared_variable_in_a_reference_is_named_at_its_line(tmp_path: Path) -> None:
    text = ORDERS_HEAD + "foreign_keys:\n  - {columns: [customer_id], references: '${nope}.customers(customer_id)'}\n"
    problem = only(tmp_path, text)

    assert (problem.file, problem.line) == ("orders.yaml", line_of(text, "${nope}"))
    assert problem.message == "undeclared variable `nope`"


# --- rules at file:line ----------------------------------------------------------------------------------

RULES = [
    # (spec appended to ORDERS_HEAD, the line's marker, message fragment, hint fragment)
    ("primary_key: [order_id, nope]\n", "primary_key", "primary-key column `nope` is not a declared column", ""),
    (
        "primary_key:\n  - order_id\n  - ORDER_ID\n",
        "- ORDER_ID",
        "primary-key column `ORDER_ID` is listed twice",
        "list it once",
    ),
    (
        "primary_key:\n  name: pk\n  columns:\n    - order_id\n    - customer_id\n",
        "- customer_id",
        "primary-key column `customer_id` is nullable",
        "declare it nullable: false (line 6)",
    ),
    ("primary_key: []\n", "primary_key", "`primary_key` must not be empty", ""),
    ("primary_key: order_id\n", "primary_key", "`primary_key` must be a list of columns or a mapping", "[order_id]"),
    ("primary_key:\n  - order_id\n  - 3\n", "- 3", "`primary_key[1]` must be a string, got integer", ""),
    ("primary_key: {name: 1pk, columns: [order_id]}\n", "primary_key", "key name must be letters", "rename the key"),
    ("primary_key: {columns: [order_id], nmae: pk}\n", "primary_key", "unknown key `nmae`", "did you mean `name`?"),
    (
        "foreign_keys:\n  - columns: [customer_id, custid]\n    references: shop.customers(customer_id, region)\n",
        "- columns",
        "foreign-key column `custid` is not a declared column",
        "did you mean `customer_id`?",
    ),
    (
        "foreign_keys:\n  - columns: [customer_id]\n    references: shop.customers(customer_id, region)\n",
        "references",
        "foreign key lists 1 column but references 2 columns",
        "in the same order",
    ),
    (
        "foreign_keys:\n  - columns: [customer_id]\n    references: shop.customers\n",
        "references",
        "`references` must be schema.table(column, ...)",
        'references: "shop.customers(customer_id)"',
    ),
    (
        "foreign_keys:\n  - columns: [customer_id]\n    references: customers(customer_id)\n",
        "references",
        "`references`: table name 'customers' must be schema.table",
        "",
    ),
    (
        "foreign_keys:\n  - columns: [customer_id]\n    references: shop.customers()\n",
        "references",
        "`references` lists no usable column names",
        "",
    ),
    (
        "foreign_keys:\n  - references: shop.customers(customer_id)\n",
        "- references",
        "missing required key `columns`",
        "",
    ),
    (
        "foreign_keys:\n  - {columns: [customer_id], references: shop.customers(customer_id), name: a-b}\n",
        "- {columns",
        "key name must be letters",
        "",
    ),
    (
        "checks:\n  fk: note != ''\n"
        "foreign_keys:\n  - {columns: [customer_id], references: shop.customers(customer_id), name: FK}\n",
        "name: FK",
        "key name `fk` is already used by check `fk` (line 11)",
        "another name",
    ),
    (
        "foreign_keys:\n  - {columns: [customer_id], references: shop.customers(customer_id)}\n"
        "  - {columns: [customer_id], references: shop.customers(customer_id)}\n",
        "  - {columns",  # the second one: the first line with the marker is the first key, see below
        "is already used by the foreign key at line",
        "",
    ),
    # Rules against the referenced table, which is in the specs.
    (
        "foreign_keys:\n  - {columns: [note], references: shop.customers(region)}\n",
        "- {columns",
        "references (region) of `shop.customers`, not its primary key (Customer_ID)",
        'references: "shop.customers(Customer_ID)"',
    ),
    (
        "foreign_keys:\n  - {columns: [note], references: shop.customers(customer_id)}\n",
        "- {columns",
        "column `note` is string, but `shop.customers.Customer_ID` is bigint",
        "declare `note` as bigint",
    ),
    (
        "foreign_keys:\n  - {columns: [customer_id], references: shop.orders(order_id)}\n",
        "- {columns",
        "`shop.orders` declares no primary key",
        "declare primary_key: [order_id] in the spec of `shop.orders`",
    ),
]


@pytest.mark.parametrize(("spec", "marker", "message", "hint"), RULES, ids=[r[2][:40] for r in RULES])
def test_each_rule_is_one_problem_at_its_line(tmp_path: Path, spec: str, marker: str, message: str, hint: str) -> None:
    text = ORDERS_HEAD + spec
    problem = only(tmp_path, text)

    lines = [i for i, line in enumerate(text.splitlines(), 1) if marker in line]
    assert problem.file == "orders.yaml"
    # A repeated default name is reported at the repeat, not the first declaration.
    assert problem.line == lines[-1], (problem, lines)
    assert message in problem.message, problem
    assert hint in problem.hint, problem


def test_the_referenced_columns_may_be_the_primary_key_in_any_case(tmp_path: Path) -> None:
    text = ORDERS_HEAD + "foreign_keys:\n  - {columns: [CUSTOMER_ID], references: SHOP.Customers(customer_id)}\n"
    (fk,) = tables(tmp_path, text)["orders"].foreign_keys

    assert (fk.columns, fk.table, fk.references) == (("customer_id",), CUSTOMERS_T, ("customer_id",))


def test_a_composite_key_in_the_wrong_order_is_not_the_primary_key(tmp_path: Path) -> None:
    customers = CUSTOMERS.replace("primary_key: [customer_id]", "primary_key: [customer_id, region]")
    text = ORDERS_HEAD + (
        "  - name: region\n    type: string\n"
        "foreign_keys:\n  - {columns: [region, customer_id], references: 'shop.customers(region, customer_id)'}\n"
    )
    problem = only(tmp_path, text, customers)

    assert "not its primary key (Customer_ID, region)" in problem.message
    # The other order, the key's own, is accepted.
    fixed = text.replace("shop.customers(region, customer_id)", "shop.customers(customer_id, region)")
    fixed = fixed.replace("[region, customer_id]", "[customer_id, region]")
    assert tables(tmp_path, fixed, customers)["orders"].foreign_keys


def test_a_foreign_key_may_reference_its_own_table(tmp_path: Path) -> None:
    text = ORDERS_HEAD + (
        "  - name: parent_id\n    type: bigint\n"
        "primary_key: [order_id]\n"
        "foreign_keys:\n  - {columns: [parent_id], references: shop.orders(order_id)}\n"
    )
    (fk,) = tables(tmp_path, text, None)["orders"].foreign_keys

    assert fk.table == ORDERS_T


def test_a_referenced_table_outside_the_specs_is_not_judged(tmp_path: Path) -> None:
    text = ORDERS_HEAD + "foreign_keys:\n  - {columns: [note], references: crm.people(whatever)}\n"

    (fk,) = tables(tmp_path, text, None)["orders"].foreign_keys
    assert fk.table == TableName(None, "crm", "people")


def test_a_parent_in_another_file_without_a_key_is_named_with_its_file(tmp_path: Path) -> None:
    customers = CUSTOMERS.replace("primary_key: [customer_id]\n", "")
    text = ORDERS_HEAD + "foreign_keys:\n  - {columns: [customer_id], references: shop.customers(customer_id)}\n"
    problem = only(tmp_path, text, customers)

    assert problem.hint == "declare primary_key: [customer_id] in the spec of `shop.customers` (customers.yaml:1)"


def test_every_problem_of_every_file_is_reported(tmp_path: Path) -> None:
    customers = CUSTOMERS.replace("primary_key: [customer_id]", "primary_key: [region, nope]")
    text = ORDERS_HEAD + "primary_key: [customer_id]\n"

    found = problems_of(tmp_path, text, customers)

    assert [(p.file, p.line) for p in found] == [("customers.yaml", 9), ("orders.yaml", 10)]


def test_key_properties_are_reserved(tmp_path: Path) -> None:
    text = ORDERS_HEAD + "properties:\n  delta_sync.primary_key: x\n  delta_sync.foreign_key.fk: y\n"
    found = problems_of(tmp_path, text, None)

    assert [(p.line, p.message, p.hint) for p in found] == [
        (11, "property `delta_sync.primary_key`: reserved property", "declare the key under primary_key:"),
        (12, "property `delta_sync.foreign_key.fk`: reserved for foreign keys", "declare the key under foreign_keys:"),
    ]


# --- references text, schema ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "table", "columns"),
    [
        ("shop.customers(id)", CUSTOMERS_T, ("id",)),
        (" Cat.Shop.T ( a ,b ) ", TableName("cat", "shop", "t"), ("a", "b")),
        ("s.t(`a, b`, `x``y`)", TableName(None, "s", "t"), ("a, b", "x`y")),
    ],
)
def test_references_read_and_written_back(text: str, table: TableName, columns: tuple[str, ...]) -> None:
    assert parse_references(text) == (table, columns)
    assert parse_references(references_text(table, columns)) == (table, columns)


def test_json_schema_has_both_key_forms() -> None:
    schema = spec_json_schema()
    primary = schema["oneOf"][0]["properties"]["primary_key"]
    forms = next(v for v in primary["anyOf"] if "oneOf" in v)["oneOf"]

    assert forms[0] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert forms[1]["required"] == ["columns"]
    assert forms[1]["additionalProperties"] is False
    assert set(forms[1]["properties"]) == {"name", "columns"}
    foreign = schema["$defs"]["ForeignKeySpec"]
    assert foreign["required"] == ["columns", "references"]
    assert set(foreign["properties"]) == {"columns", "references", "name"}
    assert foreign["properties"]["name"]["anyOf"][0]["pattern"] == "^[A-Za-z_][A-Za-z0-9_]*$"
