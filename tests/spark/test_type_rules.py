"""What Delta 4.4 refuses of the column types a spec can write, checked on real Delta, so that the spec errors
that refuse them first (delta_sync.specs.entry_checks, delta_sync.specs.spec_values) quote Delta's own error
class, and the way out they give works: NOT NULL inside arrays and maps, with the CHECK offered instead, and
collated strings."""

from __future__ import annotations

from typing import Any

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.sql import types as sqltypes

from .conftest import Project


def condition(catalog: SparkCatalog, statement: str) -> str | None:
    """The error condition Spark or Delta raises for `statement`, or None when it runs."""
    try:
        catalog.spark.sql(statement).collect()
    except Exception as exc:  # pyspark's captured exceptions share no base class with a condition
        found: Any = getattr(exc, "getCondition", lambda: None)()
        return str(found) if found else type(exc).__name__
    return None


def failure(catalog: SparkCatalog, statement: str) -> str:
    """What `statement` failed with, in full (a CHECK's violation reaches pyspark as a bare Py4JJavaError, its
    error class in the Java side's text), or "" when it runs."""
    try:
        catalog.spark.sql(statement).collect()
    except Exception as exc:  # as condition()
        return str(exc)
    return ""


# A spec's type, rows a CHECK must let through, and a row whose NOT NULL field is NULL.
NESTED = [
    (
        "array<struct<qty: int not null>>",
        ["array(named_struct('qty', 1))", "null", "array(null)", "array()"],
        "array(named_struct('qty', null))",
    ),
    (
        "map<string, struct<a: int not null>>",
        ["map('k', named_struct('a', 1))", "null", "map('k', null)"],
        "map('k', named_struct('a', null))",
    ),
    ("map<struct<a: int not null>, int>", ["map(named_struct('a', 1), 1)", "null"], "map(named_struct('a', null), 1)"),
    (
        "struct<x: array<struct<a: int not null>>>",
        ["named_struct('x', array(named_struct('a', 1)))", "null", "named_struct('x', null)"],
        "named_struct('x', array(named_struct('a', null)))",
    ),
    (
        "array<array<struct<a: int not null>>>",
        ["array(array(named_struct('a', 1)), null)", "null", "array(array(null))"],
        "array(array(named_struct('a', null)))",
    ),
]


def test_delta_refuses_not_null_inside_arrays_and_maps_and_takes_the_check_offered(
    catalog: SparkCatalog, schema: str
) -> None:
    catalog.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    # What Delta keeps: a struct's NOT NULL field outside any array or map, and a map's key (never null).
    fine = "s struct<a: int not null>, m map<string, int>, n map<struct<a: int>, array<struct<b: int>>>"
    assert condition(catalog, f"CREATE TABLE {schema}.fine ({fine}) USING delta") is None
    for i, (written, passing, failing) in enumerate(NESTED):
        canonical = sqltypes.parse_type(written)
        (found,) = sqltypes.nested_not_null("c", canonical)
        assert found.check is not None
        assert condition(catalog, f"CREATE TABLE {schema}.t{i} (c {written}) USING delta") == (
            "DELTA_NESTED_NOT_NULL_CONSTRAINT"
        ), written
        # The way out: the field nullable, and the CHECK the problem offers.
        nullable = canonical.replace(" NOT NULL", "")
        catalog.spark.sql(f"CREATE TABLE {schema}.t{i} (c {nullable}) USING delta")
        assert condition(catalog, f"ALTER TABLE {schema}.t{i} ADD CONSTRAINT nn CHECK ({found.check})") is None
        rows = ", ".join(f"({value})" for value in passing)
        assert failure(catalog, f"INSERT INTO {schema}.t{i} VALUES {rows}") == "", written
        refused = failure(catalog, f"INSERT INTO {schema}.t{i} VALUES ({failing})")
        assert "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES" in refused, written


def test_the_way_out_the_problem_gives_applies_through_delta_sync(project: Project, schema: str) -> None:
    table = f"table: {schema}.orders\ncolumns:\n  - name: id\n    type: bigint\n  - name: items\n    type: "
    project.write("orders.yaml", table + '"array<struct<qty: int not null, sku: string>>"\n')
    with pytest.raises(SpecError) as info:
        project.desired()
    (problem,) = info.value.problems
    assert "DELTA_NESTED_NOT_NULL_CONSTRAINT" in problem.message
    # The spec as the hint says: the field nullable, the CHECK it gives under checks:.
    check = problem.hint.split("checks: ", 1)[1]
    project.write("orders.yaml", table + f'"array<struct<qty: int, sku: string>>"\nchecks: {check}\n')

    project.apply()

    assert project.plan().is_empty
    project.sql(f"INSERT INTO {schema}.orders VALUES (1, array(named_struct('qty', 2, 'sku', 'a'), null)), (2, null)")
    refused = failure(
        project.catalog, f"INSERT INTO {schema}.orders VALUES (3, array(named_struct('qty', null, 'sku', 'b')))"
    )
    assert "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES" in refused


def test_a_lambda_is_no_way_out_on_delta(catalog: SparkCatalog, schema: str) -> None:
    # Why the CHECK offered gathers values with functions: ADD CONSTRAINT takes no lambda, and a field read through
    # an array as a column is accepted there, then fails every write.
    catalog.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    catalog.spark.sql(f"CREATE TABLE {schema}.t (c array<struct<qty: int>>) USING delta")
    lambda_check = f"ALTER TABLE {schema}.t ADD CONSTRAINT l CHECK (forall(c, x -> x.qty IS NOT NULL))"
    assert condition(catalog, lambda_check) == "PARSE_SYNTAX_ERROR"
    catalog.spark.sql(f"ALTER TABLE {schema}.t ADD CONSTRAINT p CHECK (size(array_compact(c.qty)) = size(c))")
    insert = f"INSERT INTO {schema}.t VALUES (array(named_struct('qty', 1)))"
    assert condition(catalog, insert) == "DELTA_UNSUPPORTED_INVARIANT_NON_STRUCT"


@pytest.mark.parametrize(
    ("written", "on_add"),
    [
        ("string collate utf8_lcase", "DELTA_UNSUPPORTED_DATA_TYPES"),
        ("struct<city: string collate unicode_ci>", "DELTA_UNSUPPORTED_DATA_TYPES"),
        # Added to a table, a map's key is refused by Spark before Delta sees it.
        ("map<string collate utf8_lcase, int>", "UNSUPPORTED_FEATURE.COLLATIONS_IN_MAP_KEYS"),
    ],
)
def test_delta_refuses_collated_strings(catalog: SparkCatalog, schema: str, written: str, on_add: str) -> None:
    catalog.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    with pytest.raises(sqltypes.CollatedString):
        sqltypes.parse_type(written)

    assert condition(catalog, f"CREATE TABLE {schema}.t (c {written}) USING delta") == "DELTA_UNSUPPORTED_DATA_TYPES"
    catalog.spark.sql(f"CREATE TABLE {schema}.t (id int) USING delta")
    assert condition(catalog, f"ALTER TABLE {schema}.t ADD COLUMNS (c {written})") == on_add
    # The way out: a plain string, compared with the collation in the query.
    catalog.spark.sql(f"CREATE TABLE {schema}.plain (c string) USING delta")
    catalog.spark.sql(f"INSERT INTO {schema}.plain VALUES ('ABC')")
    rows = catalog.spark.sql(f"SELECT count(*) FROM {schema}.plain WHERE c COLLATE utf8_lcase = 'abc'").collect()
    assert rows[0][0] == 1


def test_the_default_collation_is_stored_as_plain_string(catalog: SparkCatalog, schema: str) -> None:
    catalog.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    catalog.spark.sql(f"CREATE TABLE {schema}.t (c string collate utf8_binary) USING delta")

    (field,) = catalog.spark.table(f"{schema}.t").schema.jsonValue()["fields"]

    stored = sqltypes.from_spark_json(field["type"], field["metadata"])
    assert stored == sqltypes.parse_type("string collate utf8_binary") == "string"
