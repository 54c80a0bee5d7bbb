from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from delta_sync.model import keys
from delta_sync.model.failures import EngineFailure, describe
from delta_sync.model.state import Check, Column, ForeignKey, PrimaryKey, Table, TableName
from delta_sync.planning.actions import DropCheck
from delta_sync.planning.diff.conventions import not_null_check_name
from delta_sync.planning.diff.planner import plan
from delta_sync.spark.introspect import CONSTRAINT_PREFIX, table_from_catalog
from delta_sync.sql.expressions import normalize
from delta_sync.sql.types import parse_type
from tests.unit.builders import col, name, state, table

# Fields exactly as Spark 4.2 + Delta 4.4 report them (`spark.table(...).schema.jsonValue()`).
REAL_FIELDS = [
    '{"metadata":{"comment":"it\'s `x` ${x}"},"name":"id","nullable":false,"type":"long"}',
    '{"metadata":{},"name":"st","nullable":true,"type":{"fields":[{"metadata":{},"name":"x",'
    '"nullable":false,"type":"integer"},{"metadata":{},"name":"y","nullable":true,"type":"string"}],'
    '"type":"struct"}}',
    '{"metadata":{},"name":"m","nullable":true,"type":{"keyType":"string","type":"map",'
    '"valueContainsNull":true,"valueType":"integer"}}',
    '{"metadata":{},"name":"arr","nullable":true,"type":{"containsNull":true,'
    '"elementType":"decimal(10,2)","type":"array"}}',
    '{"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"char(5)"},"name":"c","nullable":true,"type":"string"}',
]
SCHEMA_JSON: dict[str, Any] = {"type": "struct", "fields": [json.loads(f) for f in REAL_FIELDS]}

# What DESCRIBE DETAIL's `properties` holds for such a table after two ADD CONSTRAINTs.
DETAIL_PROPERTIES = {
    "delta.appendOnly": "false",
    "delta.constraints.c1": "a = 'z'",
    "delta.constraints.positive_id": "id > 0",
    "owner.team": "crm",
}
FEATURES = ["appendOnly", "checkConstraints", "invariants"]

T = name("s.t")


def read(
    *,
    schema_json: dict[str, Any] = SCHEMA_JSON,
    description: str | None = "Orders",
    partition_columns: list[str] | None = None,
    properties: dict[str, str] = DETAIL_PROPERTIES,
    features: list[str] = FEATURES,
) -> Table:
    return table_from_catalog(T, schema_json, description, partition_columns or [], properties, features)


def test_real_schema_json_to_columns() -> None:
    assert read().columns == (
        Column("id", "bigint", nullable=False, comment="it's `x` ${x}"),
        Column("st", "struct<x:int NOT NULL,y:string>", nullable=True, comment=None),
        Column("m", "map<string,int>", nullable=True, comment=None),
        Column("arr", "array<decimal(10,2)>", nullable=True, comment=None),
        Column("c", "char(5)", nullable=True, comment=None),
    )


def test_whole_table() -> None:
    assert read(partition_columns=["c"]) == Table(
        name=T,
        columns=read().columns,
        comment="Orders",
        checks=(Check("c1", "a = 'z'"), Check("positive_id", "id > 0")),
        partitioned_by=("c",),
        properties=(
            ("delta.appendOnly", "false"),
            ("delta.feature.appendOnly", "supported"),
            ("delta.feature.checkConstraints", "supported"),
            ("delta.feature.invariants", "supported"),
            ("owner.team", "crm"),
        ),
    )


def test_empty_description_means_no_comment() -> None:
    assert read(description="").comment is None
    assert read(description=None).comment is None
    assert read(description=" ").comment == " "


def test_empty_column_comment_means_no_comment() -> None:
    schema_json = {
        "type": "struct",
        "fields": [
            {"name": "a", "nullable": True, "metadata": {"comment": ""}, "type": "string"},
            {"name": "b", "nullable": True, "type": "string"},
            {"name": "c", "nullable": True, "metadata": None, "type": "string"},
        ],
    }
    assert [c.comment for c in read(schema_json=schema_json).columns] == [None, None, None]


def test_constraints_become_checks_sorted_and_lower_cased() -> None:
    properties = {
        "delta.constraints.Zeta": "b > 0",
        "DELTA.CONSTRAINTS.alpha": "concat ( a , 'x' ) != 'yx'",
        "delta.constraints.c1": "a = 'z'",
    }
    result = read(properties=properties, features=[])
    assert result.checks == (
        Check("alpha", "concat ( a , 'x' ) != 'yx'"),
        Check("c1", "a = 'z'"),
        Check("zeta", "b > 0"),
    )
    assert result.properties == ()
    assert result.check("ZETA") == Check("zeta", "b > 0")


def test_constraint_prefix() -> None:
    assert CONSTRAINT_PREFIX == "delta.constraints."


def test_table_features_exposed_as_properties() -> None:
    result = read(properties={}, features=["appendOnly", "checkConstraints", "invariants"])
    assert result.property_map == {
        "delta.feature.appendOnly": "supported",
        "delta.feature.checkConstraints": "supported",
        "delta.feature.invariants": "supported",
    }


def test_properties_sorted() -> None:
    result = read(properties={"z.b": "1", "a.b": "2", "delta.x": "3"}, features=["zFeature"])
    assert [k for k, _ in result.properties] == ["a.b", "delta.feature.zFeature", "delta.x", "z.b"]


def test_partition_columns_kept_in_order_and_case() -> None:
    assert read(partition_columns=["Region", "day"]).partitioned_by == ("Region", "day")
    assert read().partitioned_by == ()


def test_what_delta_reports_plans_clean_against_the_matching_spec() -> None:
    """The spec a user would write for the table above gives no diff against the introspected state."""
    current = read(partition_columns=["c"])
    desired = table(
        "s.t",
        col("id", "long", nullable=False, comment="it's `x` ${x}"),
        col("st", "struct<x:int NOT NULL,y:string>"),
        col("m", "map<string,int>"),
        col("arr", "array<decimal(10,2)>"),
        col("c", "char(5)"),
        comment="Orders",
        partitioned_by=["c"],
        checks={"c1": "a = 'z'", "positive_id": "id>0"},
        properties={
            "delta.appendOnly": "FALSE",
            "delta.feature.checkconstraints": "supported",
            "owner.team": "crm",
        },
    )
    # The spec layer canonicalises types; do the same here.
    desired = dataclasses.replace(
        desired,
        columns=tuple(dataclasses.replace(c, type=parse_type(c.type)) for c in desired.columns),
    )
    assert normalize(current.checks[1].expression) == normalize("id>0")
    assert plan(state(current), state(desired)).actions == ()


def test_nested_field_comments_are_part_of_the_column_type() -> None:
    field = {
        "name": "st",
        "nullable": True,
        "metadata": {"comment": "the struct"},
        "type": {
            "type": "struct",
            "fields": [
                {"name": "x", "nullable": False, "metadata": {"comment": "it's x"}, "type": "integer"},
                {"name": "y", "nullable": True, "metadata": {"comment": ""}, "type": "string"},
            ],
        },
    }
    (column,) = read(schema_json={"type": "struct", "fields": [field]}).columns
    assert column == Column("st", "struct<x:int NOT NULL COMMENT 'it\\'s x',y:string>", comment="the struct")
    desired = table("s.t", col("st", parse_type("struct<x: int NOT NULL COMMENT 'it\\'s x', y: string>")))
    assert column.type == desired.columns[0].type


NN_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"name": "Order_Id", "nullable": True, "metadata": {}, "type": "long"},
        {"name": "a b", "nullable": True, "metadata": {}, "type": "string"},
        {"name": "strict", "nullable": False, "metadata": {}, "type": "string"},
        {"name": "loose", "nullable": True, "metadata": {}, "type": "string"},
    ],
}


def test_not_null_check_marks_the_column_it_enforces() -> None:
    properties = {
        f"delta.constraints.{not_null_check_name('Order_Id')}": "`Order_Id` IS NOT NULL",
        f"delta.constraints.{not_null_check_name('a b')}": "`a b` IS NOT NULL",
        "delta.constraints.ds_nn_strict": "`strict` IS NOT NULL",
        "delta.constraints.loose_set": "loose IS NOT NULL",
    }
    result = read(schema_json=NN_SCHEMA, properties=properties, features=[])
    assert [(c.name, c.nullable, c.not_null_by_check) for c in result.columns] == [
        ("Order_Id", True, True),
        ("a b", True, True),
        # Already NOT NULL in the schema: the check adds nothing.
        ("strict", False, False),
        # A check of another name does not count.
        ("loose", True, False),
    ]
    # Still a plain nullable column for equality: the marker is not compared.
    assert result.columns[0] == Column("Order_Id", "bigint")


def test_column_enforced_by_check_plans_clean_against_a_not_null_spec() -> None:
    properties = {"delta.constraints.ds_nn_order_id": "`Order_Id` IS NOT NULL"}
    current = read(schema_json=NN_SCHEMA, properties=properties, features=[], description=None)
    strict = dataclasses.replace(current.columns[0], nullable=False)
    desired = dataclasses.replace(current, columns=(strict, *current.columns[1:]), checks=())
    assert plan(state(current), state(desired)).actions == ()
    # Declared nullable again: the enforcing check goes, nothing else changes.
    loosened = dataclasses.replace(desired, columns=current.columns)
    assert plan(state(current), state(loosened)).actions == (
        DropCheck(T, Check("ds_nn_order_id", "`Order_Id` IS NOT NULL")),
    )


def test_clustering_columns_and_file_count_are_kept() -> None:
    result = table_from_catalog(T, SCHEMA_JSON, None, [], {}, [], ["id", "M"], 3)
    assert result.clustered_by == ("id", "M")
    assert result.num_files == 3
    assert read().clustered_by == ()
    assert read().num_files is None


# --- failures.describe: engine errors -> sentences ----------------------------------------------

VIOLATION = EngineFailure(
    "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
    "[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] 1 rows in spark_catalog.s.t violate the new CHECK constraint "
    "(a = 'z')\nstack...",
    {"numRows": "1", "tableName": "spark_catalog.s.t", "checkConstraint": "a = 'z'"},
)


def violation(rows: str) -> EngineFailure:
    return EngineFailure(VIOLATION.error_class, VIOLATION.message, {**VIOLATION.parameters, "numRows": rows})


def test_check_violation_with_table_and_constraint() -> None:
    assert describe(violation("2"), table="s.t", constraint="`c1`") == (
        "2 existing rows in s.t violate the new CHECK constraint `c1` (a = 'z')"
    )


def test_check_violation_falls_back_to_the_engine_table_name() -> None:
    assert describe(violation("12")) == (
        "12 existing rows in spark_catalog.s.t violate the new CHECK constraint (a = 'z')"
    )


def test_check_violation_one_row_noun() -> None:
    assert describe(VIOLATION, table="s.t").startswith("1 existing row in s.t ")


def test_check_violation_without_parameters() -> None:
    failure = EngineFailure("DELTA_NEW_CHECK_CONSTRAINT_VIOLATION", "boom")
    assert describe(failure, table="s.t") == "some existing rows in s.t violate the new CHECK constraint (?)"


def test_check_violation_singular_verb() -> None:
    assert describe(VIOLATION, table="s.t", constraint="`c1`") == (
        "1 existing row in s.t violates the new CHECK constraint `c1` (a = 'z')"
    )
    assert describe(VIOLATION) == ("1 existing row in spark_catalog.s.t violates the new CHECK constraint (a = 'z')")


RACE = "was created by someone else in the meantime; re-run plan"


@pytest.mark.parametrize(
    ("error_class", "expected"),
    [
        ("DELTA_CONSTRAINT_ALREADY_EXISTS", "a constraint with this name already exists on s.t"),
        (
            "TABLE_OR_VIEW_ALREADY_EXISTS",
            "table s.t was created by someone else in the meantime; re-run plan",
        ),
        ("DELTA_TABLE_ALREADY_EXISTS", "table s.t was created by someone else in the meantime; re-run plan"),
        ("TABLE_OR_VIEW_NOT_FOUND", "table s.t does not exist (any more); re-run plan"),
        (
            "UNRESOLVED_COLUMN.WITH_SUGGESTION",
            "the expression references a column that s.t does not have: [UNRESOLVED_COLUMN] nope",
        ),
        (
            "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION",
            "the expression references a column that s.t does not have: [UNRESOLVED_COLUMN] nope",
        ),
    ],
)
def test_known_classes(error_class: str, expected: str) -> None:
    failure = EngineFailure(error_class, "  [UNRESOLVED_COLUMN] nope\n  at line 2\n")
    assert describe(failure, table="s.t") == expected


def test_unknown_class_gives_first_line_only() -> None:
    failure = EngineFailure("SOMETHING_NEW", "\n  [SOMETHING_NEW] first line\nsecond line\nthird")
    assert describe(failure) == "[SOMETHING_NEW] first line"


def test_no_class_gives_first_line() -> None:
    assert describe(EngineFailure(None, "java.lang.RuntimeException: x\n\tat y")) == ("java.lang.RuntimeException: x")


def test_first_line_truncated_at_400_characters() -> None:
    exact = "x" * 400
    assert describe(EngineFailure("X", exact + "\nmore")) == exact
    assert describe(EngineFailure("X", "y" * 401)) == "y" * 400 + "..."
    assert describe(EngineFailure("X", "z" * 1000 + "\nmore")) == "z" * 400 + "..."


def test_empty_message() -> None:
    assert describe(EngineFailure(None, "")) == "unknown error"
    assert describe(EngineFailure("X", "  \n ")) == "unknown error"


def test_keys_kept_as_properties_are_read_as_keys_not_properties() -> None:
    properties = {
        **DETAIL_PROPERTIES,
        "delta_sync.primary_key": '{"name":"pk_s_t__id","columns":["id"]}',
        "delta_sync.foreign_key.fk_to_c": '{"columns":["c"],"references":"cat.s.codes","parent_columns":["code"]}',
        "delta_sync.foreign_key.fk_self": '{"columns":["m"],"references":"s.t","parent_columns":["id"]}',
    }

    result = read(properties=properties)

    assert result.primary_key == PrimaryKey("pk_s_t__id", ("id",))
    assert result.foreign_keys == (
        ForeignKey("fk_self", ("m",), T, ("id",)),
        ForeignKey("fk_to_c", ("c",), TableName("cat", "s", "codes"), ("code",)),
    )
    assert result.properties == read().properties


def test_a_key_property_that_does_not_decode_stays_a_property() -> None:
    properties = {"delta_sync.primary_key": "edited by hand", "delta_sync.foreign_key.x": "{}"}

    result = read(properties=properties, features=[])

    assert (result.primary_key, result.foreign_keys) == (None, ())
    assert result.property_map == properties


def test_a_table_read_with_its_keys_plans_clean_against_the_spec_declaring_them() -> None:
    pk = PrimaryKey("pk_s_t__id", ("ID",))
    properties = {keys.PRIMARY_KEY_PROPERTY: keys.encode_primary_key(pk)}
    current = read(properties=properties, features=[])
    desired = dataclasses.replace(current, primary_key=PrimaryKey("pk_s_t__id", ("id",)))

    assert plan(state(current), state(desired)).actions == ()
