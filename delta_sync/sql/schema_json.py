"""A table spec as the JSON form of a Spark schema: what `StructType.fromJson` takes and `StructType.jsonValue()`
gives, so that `delta_sync.spark_schema` builds the schema a pipeline writes the table with. Pure: the inverse of
`types.from_spark_json`, which reads Delta's schema back into the model.

What each field carries, and why (the keys as Delta and Spark spell them: `DeltaSourceUtils`, `ResolveDefaultColumns`,
`CharVarcharUtils`):

- `nullable`: as the spec declares it. On an existing table delta-sync may enforce NOT NULL with a CHECK
  (`planning.diff.conventions.not_null_check_name`) instead of the schema, but the schema a writer should use is the
  declared one: a `nullable=False` field is what the rows must satisfy either way.
- `comment`: the column comment, the key Spark reads a field's comment from (`StructField.getComment`).
- `delta.generationExpression`: a generated column's expression, as Delta's log stores it. A writer may leave the
  column out (Delta computes it) or give values Delta checks against it; a table created from the schema
  (`DeltaTable.create(spark).addColumns(schema)`, `spark.catalog.createTable(..., schema=schema)`) gets the column.
- `delta.identity.start`, `delta.identity.step`, `delta.identity.allowExplicitInsert`: an identity column, as Delta's
  own column builder declares one. Not `delta.identity.highWaterMark`: that is the table's state, not its
  declaration, and Delta sets it as it hands out values.
- Not `CURRENT_DEFAULT` / `EXISTS_DEFAULT`: a DataFrame writer gives every column a value, so a default is never
  used by it; a write that creates the table from a schema carrying them fails
  (WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED) unless the same statement names the allowColumnDefaults
  feature; and `EXISTS_DEFAULT` is the value Spark computes when the column is added, not something declared.
  Delta leaves all of them out of the schema a read returns too (`DeltaTableUtils.removeInternalWriterMetadata`).
- `__CHAR_VARCHAR_TYPE_STRING`: a `char(n)` / `varchar(n)` column is a string with this key naming its declared
  type, on the top-level field, as Spark keeps it in a table's schema (`replaceCharVarcharWithStringInSchema`).
"""

from __future__ import annotations

from typing import Any

from delta_sync.model.state import Column, Table
from delta_sync.sql import types as sqltypes

JsonType = str | dict[str, Any]

COMMENT = "comment"
GENERATION_EXPRESSION = "delta.generationExpression"
IDENTITY_START = "delta.identity.start"
IDENTITY_STEP = "delta.identity.step"
IDENTITY_ALLOW_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
CHAR_VARCHAR_TYPE = "__CHAR_VARCHAR_TYPE_STRING"

# The SQL spelling of an atomic type -> its name in Spark's JSON form, where they differ.
_JSON_NAMES = {"tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long"}


def type_json(type_: str) -> JsonType:
    """The JSON form of a canonical type (`types.parse_type`'s spelling). char/varchar become `string` (the key
    that keeps their declared type goes on the top-level field: `field_json`)."""
    fields = sqltypes.struct_fields(type_)
    if fields is not None:
        return {
            "type": "struct",
            "fields": [
                _field(f.name, f.type, f.nullable, {COMMENT: f.comment} if f.comment is not None else {})
                for f in fields
            ],
        }
    element = sqltypes.element_type(type_)
    if element is not None:
        # The model has no element nullability: an array's elements and a map's values may be null, as in a
        # table created from the same type in SQL.
        return {"type": "array", "elementType": type_json(element), "containsNull": True}
    entry = sqltypes.map_types(type_)
    if entry is not None:
        key, value = entry
        return {"type": "map", "keyType": type_json(key), "valueType": type_json(value), "valueContainsNull": True}
    if type_.startswith(("char(", "varchar(")):
        return "string"
    return _JSON_NAMES.get(type_, type_)


def _field(name: str, type_: str, nullable: bool, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "type": type_json(type_), "nullable": nullable, "metadata": metadata}


def _has_sized_string(type_: str) -> bool:
    """Whether a char/varchar is anywhere in `type_` (a field's name may hold the word: walk the type)."""
    if type_.startswith(("char(", "varchar(")):
        return True
    fields = sqltypes.struct_fields(type_)
    element, entry = sqltypes.element_type(type_), sqltypes.map_types(type_)
    inner = [f.type for f in fields or ()] + ([element] if element is not None else []) + list(entry or ())
    return any(_has_sized_string(t) for t in inner)


def column_metadata(column: Column) -> dict[str, Any]:
    """The field metadata of a top-level column (see the module's notes for what is left out and why)."""
    metadata: dict[str, Any] = {}
    if column.comment is not None:
        metadata[COMMENT] = column.comment
    if _has_sized_string(column.type):
        metadata[CHAR_VARCHAR_TYPE] = column.type
    if column.generated is not None:
        metadata[GENERATION_EXPRESSION] = column.generated
    if column.identity is not None:
        metadata[IDENTITY_START] = column.identity.start
        metadata[IDENTITY_STEP] = column.identity.step
        metadata[IDENTITY_ALLOW_EXPLICIT_INSERT] = not column.identity.always
    return metadata


def field_json(column: Column) -> dict[str, Any]:
    return _field(column.name, column.type, column.nullable, column_metadata(column))


def table_schema_json(table: Table) -> dict[str, Any]:
    """The JSON form of the schema `table` declares, columns in the spec's order."""
    return {"type": "struct", "fields": [field_json(c) for c in table.columns]}
