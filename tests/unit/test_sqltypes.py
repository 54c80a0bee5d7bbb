from __future__ import annotations

import json
from typing import Any

import pytest

from delta_sync.sql.types import (
    CollatedString,
    Field,
    NestedNotNull,
    TypeSyntaxError,
    element_type,
    field_path,
    from_spark_json,
    map_types,
    nested_not_null,
    parse_type,
    struct_field,
    struct_fields,
)

# Column JSON exactly as Spark 4.2 + Delta 4.4 report it (`StructType.jsonValue()["fields"][i]`).
SPARK_ID = '{"metadata":{"comment":"it\'s `x` ${x}"},"name":"id","nullable":false,"type":"long"}'
SPARK_ST = (
    '{"metadata":{},"name":"st","nullable":true,"type":{"fields":[{"metadata":{},"name":"x",'
    '"nullable":false,"type":"integer"},{"metadata":{},"name":"y","nullable":true,"type":"string"}],'
    '"type":"struct"}}'
)
SPARK_M = (
    '{"metadata":{},"name":"m","nullable":true,"type":{"keyType":"string","type":"map",'
    '"valueContainsNull":true,"valueType":"integer"}}'
)
SPARK_ARR = (
    '{"metadata":{},"name":"arr","nullable":true,"type":{"containsNull":true,'
    '"elementType":"decimal(10,2)","type":"array"}}'
)
SPARK_C = '{"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"char(5)"},"name":"c","nullable":true,"type":"string"}'


def field_type(raw: str) -> str:
    f: dict[str, Any] = json.loads(raw)
    return from_spark_json(f["type"], f.get("metadata"))


# --- parse_type: atomic types and aliases -------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("boolean", "boolean"),
        ("bool", "boolean"),
        ("tinyint", "tinyint"),
        ("byte", "tinyint"),
        ("smallint", "smallint"),
        ("short", "smallint"),
        ("int", "int"),
        ("integer", "int"),
        ("bigint", "bigint"),
        ("long", "bigint"),
        ("float", "float"),
        ("real", "float"),
        ("double", "double"),
        ("string", "string"),
        ("binary", "binary"),
        ("date", "date"),
        ("timestamp", "timestamp"),
        ("timestamp_ltz", "timestamp"),
        ("timestamp_ntz", "timestamp_ntz"),
        ("variant", "variant"),
    ],
)
def test_atomic_aliases(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("LONG", "bigint"),
        ("BigInt", "bigint"),
        ("Integer", "int"),
        ("TIMESTAMP_LTZ", "timestamp"),
        ("Timestamp_NTZ", "timestamp_ntz"),
        ("DECIMAL(18,2)", "decimal(18,2)"),
        ("Array<Long>", "array<bigint>"),
        ("MAP<STRING, INT>", "map<string,int>"),
        ("VarChar(10)", "varchar(10)"),
        ("STRUCT<A: INT NOT NULL>", "struct<A:int NOT NULL>"),
    ],
)
def test_case_insensitive_keywords_but_field_names_kept(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("decimal", "decimal(10,0)"),
        ("dec", "decimal(10,0)"),
        ("numeric", "decimal(10,0)"),
        ("decimal(5)", "decimal(5,0)"),
        ("numeric(7)", "decimal(7,0)"),
        ("decimal(18,2)", "decimal(18,2)"),
        ("decimal(18, 2)", "decimal(18,2)"),
        ("decimal( 18 ,2 )", "decimal(18,2)"),
        ("decimal (18,2)", "decimal(18,2)"),
        ("dec(38,38)", "decimal(38,38)"),
        ("numeric(1,0)", "decimal(1,0)"),
        ("  decimal(18,2)  ", "decimal(18,2)"),
    ],
)
def test_decimal(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("char(5)", "char(5)"),
        ("character(5)", "char(5)"),
        ("CHARACTER(2)", "char(2)"),
        ("varchar(255)", "varchar(255)"),
        ("varchar( 3 )", "varchar(3)"),
    ],
)
def test_sized_strings(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


# --- parse_type: nested types -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("array<long>", "array<bigint>"),
        ("array< int >", "array<int>"),
        ("array<array<short>>", "array<array<smallint>>"),
        ("map<string,long>", "map<string,bigint>"),
        ("map<string, array<integer>>", "map<string,array<int>>"),
        ("map<double,double>", "map<double,double>"),
        ("map<decimal(18, 2), map<byte, real>>", "map<decimal(18,2),map<tinyint,float>>"),
        ("struct<a int, b: string NOT NULL>", "struct<a:int,b:string NOT NULL>"),
        ("struct<a:int,b:string not null>", "struct<a:int,b:string NOT NULL>"),
        ("struct< a : long , b : dec >", "struct<a:bigint,b:decimal(10,0)>"),
        ("struct<>", "struct<>"),
        (
            "struct<s: struct<x: integer NOT NULL>, l: array<long>>",
            "struct<s:struct<x:int NOT NULL>,l:array<bigint>>",
        ),
        ("array<struct<k:string,v:map<string,int>>>", "array<struct<k:string,v:map<string,int>>>"),
        ("struct<street:string,city:string>", "struct<street:string,city:string>"),
        # Field names that are type keywords are plain names.
        ("struct<array: int, map int>", "struct<array:int,map:int>"),
    ],
)
def test_nested(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("struct<`a b`: int>", "struct<`a b`:int>"),
        ("struct<`a-b`:int NOT NULL>", "struct<`a-b`:int NOT NULL>"),
        ("struct<`a``b`:int>", "struct<`a``b`:int>"),
        ("struct<`1st`:string>", "struct<`1st`:string>"),
        ("struct<`x.y`:string>", "struct<`x.y`:string>"),
        ("struct<`plain`:string>", "struct<plain:string>"),
        ("struct<`é`:string>", "struct<`é`:string>"),
    ],
)
def test_backquoted_field_names(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty type"),
        ("   ", "empty type"),
        ("uuid", "unknown type 'uuid'"),
        ("longs", "unknown type 'longs'"),
        ("decimal(40,2)", "decimal(40,2) needs 1 <= precision <= 38"),
        ("decimal(0)", "decimal(0,0) needs"),
        ("decimal(5,6)", "decimal(5,6) needs"),
        ("decimal(10,", "ended early"),
        ("decimal(10,2", "ended early"),
        ("decimal(,2)", "expected a number, found ','"),
        ("decimal(a,2)", "expected a number, found 'a'"),
        ("decimal(10,2,3)", "expected ')', found ','"),
        ("char", "ended early"),
        ("char(0)", "char(0) needs a positive length"),
        ("varchar(x)", "expected a number"),
        ("array<int", "ended early, expected >"),
        ("array<>", "unknown type '>'"),
        ("array<int>>", "unexpected '>' after array<int>"),
        ("map<string>", "expected ','"),
        ("map<string,int", "ended early"),
        ("int unsigned", "unexpected 'unsigned' after int"),
        ("bigint)", "unexpected ')' after bigint"),
        ("int,", "unexpected ',' after int"),
        ("int;", "unexpected ';'"),
        ("int -- x", "unexpected '-- x'"),
        ("struct<a:int", "ended early"),
        ("struct<a int b int>", "expected ','"),
        ("struct<a:int,>", "expected a struct field name, found '>'"),
        ("struct<,a:int>", "expected a struct field name, found ','"),
        ("struct<``:int>", "expected a struct field name"),
        ("struct<a:>", "unknown type '>'"),
        ("struct<a:int NULL>", "expected ','"),
        ("struct<a:int NOT>", "expected 'null', found '>'"),
        ("struct<a:int COMMENT>", "COMMENT needs a quoted string, found '>'"),
        ("struct<a:int NOT NULL COMMENT>", "COMMENT needs a quoted string, found '>'"),
        ("struct<a:int COMMENT 5>", "COMMENT needs a quoted string, found '5'"),
        ("struct<a:int COMMENT x>", "COMMENT needs a quoted string, found 'x'"),
        ("struct<a:int COMMENT", "ended early"),
        ("struct<a:int COMMENT 'x'", "ended early"),
        ("struct<a:int COMMENT 'x>", 'unexpected "\'x>"'),
        ("struct<a:int COMMENT 'x' NOT NULL>", "expected ',', found 'NOT'"),
        ("struct<a:int COMMENT 'x' 'y'>", "expected ',', found \"'y'\""),
        ("int COMMENT 'x'", "unexpected 'COMMENT' after int"),
        ("struct<a:int,a:string>", "struct field 'a' appears twice"),
        ("struct<a:int,A:string>", "struct field 'A' appears twice"),
        ("struct<`a`:int,a:string>", "struct field 'a' appears twice"),
        ("struct<a:int,`a b", "unexpected '`a b'"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(TypeSyntaxError) as info:
        parse_type(text)
    assert message in str(info.value)


# --- struct field comments ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("struct<a:int COMMENT 'x'>", "struct<a:int COMMENT 'x'>"),
        ("struct<a int not null comment 'the a'>", "struct<a:int NOT NULL COMMENT 'the a'>"),
        ("STRUCT<A: LONG Comment 'Kept As Written'>", "struct<A:bigint COMMENT 'Kept As Written'>"),
        ("struct<a:int COMMENT 'x', b:string>", "struct<a:int COMMENT 'x',b:string>"),
        ("struct<`a b`:int COMMENT 'odd name'>", "struct<`a b`:int COMMENT 'odd name'>"),
        # Characters that delimit types are plain text inside the comment.
        ("struct<a:int COMMENT 'a, b: <c> (d)'>", "struct<a:int COMMENT 'a, b: <c> (d)'>"),
        ("struct<a:int COMMENT '`x` ${x} \"y\"'>", "struct<a:int COMMENT '`x` ${x} \"y\"'>"),
        ("array<struct<x: long COMMENT 'in array'>>", "array<struct<x:bigint COMMENT 'in array'>>"),
        ("map<string, struct<v: int COMMENT 'v'>>", "map<string,struct<v:int COMMENT 'v'>>"),
        (
            "struct<s: struct<x: int COMMENT 'inner'> NOT NULL COMMENT 'outer'>",
            "struct<s:struct<x:int COMMENT 'inner'> NOT NULL COMMENT 'outer'>",
        ),
    ],
)
def test_struct_field_comment(written: str, canonical: str) -> None:
    assert parse_type(written) == canonical


@pytest.mark.parametrize(
    ("written", "comment", "canonical"),
    [
        # Spark's literal rules: a backslash escapes the next character.
        (r"'it\'s'", "it's", r"'it\'s'"),
        (r"'a\\b'", "a\\b", r"'a\\b'"),
        (r"'ends with \\'", "ends with \\", r"'ends with \\'"),
        (r"'line1\nline2'", "line1\nline2", r"'line1\nline2'"),
        ("'line1\nline2'", "line1\nline2", r"'line1\nline2'"),
        (r"'cr\r'", "cr\r", r"'cr\r'"),
        (r"'\q'", "q", "'q'"),
        (r"'\\\''", "\\'", r"'\\\''"),
        # A tab needs no escape in a Spark literal; it is kept as it is.
        (r"'a\tb'", "a\tb", "'a\tb'"),
        ("'é ü'", "é ü", "'é ü'"),
    ],
)
def test_struct_field_comment_escapes(written: str, comment: str, canonical: str) -> None:
    result = parse_type(f"struct<a:int COMMENT {written}>")
    assert result == f"struct<a:int COMMENT {canonical}>"
    assert struct_fields(result) == [Field("a", "int", True, comment)]
    assert parse_type(result) == result


@pytest.mark.parametrize(
    "comment",
    ["x", "it's", "a\\b", "ends with \\", "\\'", "'", "line1\nline2", "cr\r\nlf", "<>,:`()", "${x}", "\t"],
)
def test_struct_field_comment_round_trips(comment: str) -> None:
    canonical = f"struct<{struct_field('a', 'int', nullable=False, comment=comment)},b:int>"
    assert "\n" not in canonical
    assert parse_type(canonical) == canonical
    assert struct_fields(canonical) == [Field("a", "int", False, comment), Field("b", "int")]


def test_struct_field_with_comment() -> None:
    assert struct_field("a", "int", nullable=True, comment="x") == "a:int COMMENT 'x'"
    assert struct_field("a b", "int", nullable=False, comment="it's") == r"`a b`:int NOT NULL COMMENT 'it\'s'"
    assert struct_field("a", "int", nullable=True, comment=None) == "a:int"


def test_empty_struct_field_comment_means_no_comment() -> None:
    assert parse_type("struct<a:int COMMENT ''>") == "struct<a:int>"


def test_string_literal_is_not_a_struct_field_name() -> None:
    with pytest.raises(TypeSyntaxError, match="expected a struct field name"):
        parse_type("struct<'a':int>")


# --- struct_fields, element_type, map_types (canonical input) -----------------------------------


def test_struct_fields() -> None:
    assert struct_fields("struct<a:int NOT NULL COMMENT 'x, y>',`b c`:array<map<string,int>>>") == [
        Field("a", "int", nullable=False, comment="x, y>"),
        Field("b c", "array<map<string,int>>", nullable=True, comment=None),
    ]
    assert struct_fields("struct<s:struct<x:int COMMENT 'in'> COMMENT 'out'>") == [
        Field("s", "struct<x:int COMMENT 'in'>", comment="out")
    ]
    assert struct_fields("struct<`a``b`:int>") == [Field("a`b", "int")]
    assert struct_fields("struct<>") == []


@pytest.mark.parametrize("type_", ["int", "array<struct<a:int>>", "map<string,struct<a:int>>", "string"])
def test_struct_fields_of_other_types_is_none(type_: str) -> None:
    assert struct_fields(type_) is None


def test_field_key_is_lower_case_and_defaults() -> None:
    assert Field("MixedCase", "int").key == "mixedcase"
    assert Field("a", "int") == Field("a", "int", nullable=True, comment=None)


@pytest.mark.parametrize(
    ("type_", "element"),
    [
        ("array<int>", "int"),
        ("array<array<decimal(18,2)>>", "array<decimal(18,2)>"),
        ("array<struct<a:int COMMENT '>'>>", "struct<a:int COMMENT '>'>"),
        ("array<map<string,bigint>>", "map<string,bigint>"),
        ("int", None),
        ("struct<a:array<int>>", None),
        ("map<int,array<int>>", None),
    ],
)
def test_element_type(type_: str, element: str | None) -> None:
    assert element_type(type_) == element


@pytest.mark.parametrize(
    ("type_", "types"),
    [
        ("map<string,int>", ("string", "int")),
        ("map<decimal(18,2),struct<v:int COMMENT ','>>", ("decimal(18,2)", "struct<v:int COMMENT ','>")),
        ("map<map<int,int>,array<string>>", ("map<int,int>", "array<string>")),
        ("array<map<string,int>>", None),
        ("struct<m:map<string,int>>", None),
        ("string", None),
    ],
)
def test_map_types(type_: str, types: tuple[str, str] | None) -> None:
    assert map_types(type_) == types


def test_type_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown type"):
        parse_type("nope")


IDEMPOTENT = [
    "LONG",
    "decimal(18, 2)",
    "numeric",
    "array<map<string, struct<a: int NOT NULL, `b c`: array<real>>>>",
    "struct<`a``b`:int,`x.y`:string NOT NULL>",
    "map<varchar(3),character(2)>",
    "struct<>",
    "timestamp_ltz",
    "struct<a: int NOT NULL COMMENT 'it\\'s, <x>', b: array<struct<c: long comment 'c'>>>",
]


@pytest.mark.parametrize("written", IDEMPOTENT)
def test_parse_type_is_idempotent(written: str) -> None:
    once = parse_type(written)
    assert parse_type(once) == once


def test_struct_field_quotes_only_when_needed() -> None:
    assert struct_field("a", "int", nullable=True) == "a:int"
    assert struct_field("_a1", "int", nullable=False) == "_a1:int NOT NULL"
    assert struct_field("a b", "int", nullable=True) == "`a b`:int"
    assert struct_field("a`b", "int", nullable=True) == "`a``b`:int"


# --- from_spark_json ----------------------------------------------------------------------------


def test_from_spark_json_real_columns() -> None:
    assert field_type(SPARK_ID) == "bigint"
    assert field_type(SPARK_ST) == "struct<x:int NOT NULL,y:string>"
    assert field_type(SPARK_M) == "map<string,int>"
    assert field_type(SPARK_ARR) == "array<decimal(10,2)>"
    assert field_type(SPARK_C) == "char(5)"


@pytest.mark.parametrize(
    ("json_type", "canonical"),
    [
        ("boolean", "boolean"),
        ("byte", "tinyint"),
        ("short", "smallint"),
        ("integer", "int"),
        ("long", "bigint"),
        ("float", "float"),
        ("double", "double"),
        ("string", "string"),
        ("binary", "binary"),
        ("date", "date"),
        ("timestamp", "timestamp"),
        ("timestamp_ntz", "timestamp_ntz"),
        ("variant", "variant"),
        ("decimal(10,0)", "decimal(10,0)"),
        ("decimal(38,18)", "decimal(38,18)"),
    ],
)
def test_from_spark_json_atomic(json_type: str, canonical: str) -> None:
    assert from_spark_json(json_type) == canonical
    assert from_spark_json(json_type, {}) == canonical


def test_from_spark_json_varchar_metadata_wins_over_string() -> None:
    meta = {"__CHAR_VARCHAR_TYPE_STRING": "varchar(20)", "comment": "c"}
    assert from_spark_json("string", meta) == "varchar(20)"


def test_from_spark_json_nested_char_in_struct_field_metadata() -> None:
    data = {
        "type": "struct",
        "fields": [
            {
                "name": "code",
                "nullable": True,
                "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "char(2)"},
                "type": "string",
            },
            {"name": "n", "nullable": False, "type": "long"},
        ],
    }
    assert from_spark_json(data) == "struct<code:char(2),n:bigint NOT NULL>"


def test_from_spark_json_array_of_char_via_column_metadata() -> None:
    data = {"type": "array", "elementType": "string", "containsNull": True}
    assert from_spark_json(data, {"__CHAR_VARCHAR_TYPE_STRING": "array<char(3)>"}) == "array<char(3)>"


def test_from_spark_json_odd_field_names_are_quoted() -> None:
    data = {
        "type": "struct",
        "fields": [
            {"name": "a b", "nullable": True, "metadata": {}, "type": "integer"},
            {"name": "a`b", "nullable": False, "metadata": {}, "type": "integer"},
        ],
    }
    assert from_spark_json(data) == "struct<`a b`:int,`a``b`:int NOT NULL>"


def test_from_spark_json_deeply_nested() -> None:
    data = {
        "type": "map",
        "keyType": "string",
        "valueContainsNull": True,
        "valueType": {
            "type": "array",
            "containsNull": False,
            "elementType": {
                "type": "struct",
                "fields": [{"name": "v", "nullable": True, "metadata": {}, "type": "short"}],
            },
        },
    }
    assert from_spark_json(data) == "map<string,array<struct<v:smallint>>>"


def test_from_spark_json_nested_comment_metadata() -> None:
    data = {
        "type": "struct",
        "fields": [
            {"name": "a", "nullable": False, "metadata": {"comment": "it's \\ a\nb"}, "type": "integer"},
            {"name": "b", "nullable": True, "metadata": {"comment": ""}, "type": "string"},
            {"name": "c", "nullable": True, "metadata": None, "type": "string"},
            {
                "name": "code",
                "nullable": True,
                "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "char(2)", "comment": "ISO code"},
                "type": "string",
            },
        ],
    }
    canonical = from_spark_json(data)
    # An empty comment is no comment, as for top-level columns.
    assert canonical == (
        "struct<a:int NOT NULL COMMENT 'it\\'s \\\\ a\\nb',b:string,c:string,code:char(2) COMMENT 'ISO code'>"
    )
    assert parse_type(canonical) == canonical
    assert struct_fields(canonical) == [
        Field("a", "int", False, "it's \\ a\nb"),
        Field("b", "string"),
        Field("c", "string"),
        Field("code", "char(2)", True, "ISO code"),
    ]


def test_from_spark_json_comment_inside_array_and_map() -> None:
    inner = {
        "type": "struct",
        "fields": [{"name": "v", "nullable": True, "metadata": {"comment": "the v"}, "type": "long"}],
    }
    assert from_spark_json({"type": "array", "containsNull": True, "elementType": inner}) == (
        "array<struct<v:bigint COMMENT 'the v'>>"
    )
    data = {"type": "map", "keyType": "string", "valueContainsNull": True, "valueType": inner}
    assert from_spark_json(data) == "map<string,struct<v:bigint COMMENT 'the v'>>"


def test_from_spark_json_top_level_comment_is_not_part_of_the_type() -> None:
    # The column's own comment belongs to the column, not to its type.
    assert from_spark_json("integer", {"comment": "x"}) == "int"


def test_from_spark_json_unsupported_kind() -> None:
    with pytest.raises(TypeSyntaxError, match="unsupported Spark type 'udt'"):
        from_spark_json({"type": "udt", "class": "x.Y"})


def test_from_spark_json_unknown_atomic() -> None:
    with pytest.raises(TypeSyntaxError, match="unknown type 'void'"):
        from_spark_json("void")


# Pairs of (what a spec says, the JSON type Spark reports for a column created from it).
SPEC_VS_SPARK: list[tuple[str, Any, dict[str, Any] | None]] = [
    ("long", "long", None),
    ("bigint", "long", None),
    ("INT", "integer", None),
    ("integer", "integer", None),
    ("short", "short", None),
    ("smallint", "short", None),
    ("byte", "byte", None),
    ("tinyint", "byte", None),
    ("real", "float", None),
    ("bool", "boolean", None),
    ("timestamp_ltz", "timestamp", None),
    ("timestamp_ntz", "timestamp_ntz", None),
    ("decimal", "decimal(10,0)", None),
    ("numeric(18, 2)", "decimal(18,2)", None),
    ("char(5)", "string", {"__CHAR_VARCHAR_TYPE_STRING": "char(5)"}),
    ("varchar(9)", "string", {"__CHAR_VARCHAR_TYPE_STRING": "varchar(9)"}),
    (
        "map<double,double>",
        {"type": "map", "keyType": "double", "valueType": "double", "valueContainsNull": True},
        None,
    ),
    ("map<string, int>", json.loads(SPARK_M)["type"], None),
    ("array<decimal(10, 2)>", json.loads(SPARK_ARR)["type"], None),
    ("struct<x: integer NOT NULL, y string>", json.loads(SPARK_ST)["type"], None),
    (
        "struct<x: integer NOT NULL COMMENT 'it\\'s x', y string comment 'line1\\nline2'>",
        {
            "type": "struct",
            "fields": [
                {"name": "x", "nullable": False, "metadata": {"comment": "it's x"}, "type": "integer"},
                {"name": "y", "nullable": True, "metadata": {"comment": "line1\nline2"}, "type": "string"},
            ],
        },
        None,
    ),
    (
        "array<struct<`a b`: long>>",
        {
            "type": "array",
            "containsNull": True,
            "elementType": {
                "type": "struct",
                "fields": [{"name": "a b", "nullable": True, "metadata": {}, "type": "long"}],
            },
        },
        None,
    ),
]


@pytest.mark.parametrize(("spec", "spark", "metadata"), SPEC_VS_SPARK)
def test_spec_spelling_equals_spark_report(spec: str, spark: Any, metadata: dict[str, Any] | None) -> None:
    assert parse_type(spec) == from_spark_json(spark, metadata)


@pytest.mark.parametrize(("spec", "spark", "metadata"), SPEC_VS_SPARK)
def test_spark_report_is_a_fixed_point_of_parse_type(spec: str, spark: Any, metadata: dict[str, Any] | None) -> None:
    reported = from_spark_json(spark, metadata)
    assert parse_type(reported) == reported


# --- collations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "collation", "path"),
    [
        ("string collate utf8_lcase", "utf8_lcase", ()),
        ("STRING COLLATE UNICODE_CI", "UNICODE_CI", ()),
        ("string collate `sr_Cyrl_SRB`", "sr_Cyrl_SRB", ()),
        ("struct<city: string collate utf8_lcase>", "utf8_lcase", ("city",)),
        ("array<string collate unicode>", "unicode", ("element",)),
        ("map<string collate utf8_lcase, int>", "utf8_lcase", ("key",)),
        ("map<string, struct<`a b`: string collate unicode_ai>>", "unicode_ai", ("value", "a b")),
    ],
)
def test_a_collated_string_says_its_collation_and_where_it_is(
    written: str, collation: str, path: tuple[str, ...]
) -> None:
    with pytest.raises(CollatedString) as info:
        parse_type(written)
    assert (info.value.collation, info.value.path) == (collation, path)
    assert isinstance(info.value, TypeSyntaxError)


@pytest.mark.parametrize("written", ["string collate utf8_binary", "STRING COLLATE UTF8_BINARY"])
def test_the_default_collation_is_plain_string(written: str) -> None:
    # Delta stores `string COLLATE UTF8_BINARY` as string (checked on Delta 4.4: tests/spark/test_type_rules.py).
    assert parse_type(written) == "string"
    assert parse_type(f"array<{written}>") == "array<string>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("varchar(3) collate utf8_lcase", "COLLATE applies to string only, not to varchar(3)"),
        ("int collate utf8_lcase", "COLLATE applies to string only, not to int"),
        ("string collate", "ended early, expected a collation name"),
        ("string collate 3", "expected a collation name after COLLATE, found '3'"),
        ("string collate 'x'", "expected a collation name after COLLATE"),
    ],
)
def test_collate_errors(text: str, message: str) -> None:
    with pytest.raises(TypeSyntaxError) as info:
        parse_type(text)
    assert not isinstance(info.value, CollatedString)
    assert message in str(info.value)


# --- NOT NULL inside arrays and maps -----------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "paths"),
    [
        ("array<struct<qty:int NOT NULL>>", [("element", "qty")]),
        ("map<string,struct<a:int NOT NULL>>", [("value", "a")]),
        # Delta refuses a NOT NULL field of a key's struct too ("The key type of the field m ...").
        ("map<struct<a:int NOT NULL>,int>", [("key", "a")]),
        ("struct<x:array<struct<a:int NOT NULL>>>", [("x", "element", "a")]),
        ("array<array<struct<a:int NOT NULL>>>", [("element", "element", "a")]),
        ("array<struct<s:struct<a:int NOT NULL> NOT NULL>>", [("element", "s"), ("element", "s", "a")]),
    ],
)
def test_nested_not_null_finds_each_not_null_field_inside_an_array_or_map(
    type_: str, paths: list[tuple[str, ...]]
) -> None:
    assert [found.path for found in nested_not_null("c", type_)] == paths


@pytest.mark.parametrize(
    "type_",
    [
        "bigint",
        "struct<a:int NOT NULL>",  # a struct's NOT NULL field: Delta keeps it
        "struct<s:struct<a:int NOT NULL> NOT NULL>",
        "array<int>",
        "array<struct<a:int>>",
        "map<string,int>",  # a map's key is never null in Spark, and is no NOT NULL field
        "map<struct<a:int>,struct<b:string>>",
        "map<bigint,array<struct<a:int>>>",
    ],
)
def test_nested_not_null_leaves_what_delta_accepts(type_: str) -> None:
    assert nested_not_null("c", type_) == []


# Each CHECK below was run on Delta 4.4 (tests/spark/test_type_rules.py): accepted by ADD CONSTRAINT, passing rows
# whose arrays, maps or structs are NULL or hold NULL elements, refusing a row whose field is NULL.
@pytest.mark.parametrize(
    ("type_", "check"),
    [
        (
            "array<struct<qty:int NOT NULL>>",
            "coalesce(size(array_compact(array_compact(c).qty)) = size(array_compact(c)), true)",
        ),
        (
            "map<string,struct<a:int NOT NULL>>",
            "coalesce(size(array_compact(array_compact(map_values(c)).a)) = size(array_compact(map_values(c))), true)",
        ),
        (
            "map<struct<a:int NOT NULL>,int>",
            "coalesce(size(array_compact(array_compact(map_keys(c)).a)) = size(array_compact(map_keys(c))), true)",
        ),
        (
            "struct<x:array<struct<a:int NOT NULL>>>",
            "coalesce(size(array_compact(array_compact(c.x).a)) = size(array_compact(c.x)), true)",
        ),
        (
            "array<array<struct<a:int NOT NULL>>>",
            "coalesce(size(array_compact(array_compact(flatten(array_compact(c))).a)) = "
            "size(array_compact(flatten(array_compact(c)))), true)",
        ),
        (
            "array<struct<s:struct<a:int NOT NULL>>>",
            "coalesce(size(array_compact(array_compact(array_compact(c).s).a)) = "
            "size(array_compact(array_compact(c).s)), true)",
        ),
    ],
)
def test_nested_not_null_gives_a_check_delta_accepts(type_: str, check: str) -> None:
    (found,) = nested_not_null("c", type_)
    assert found.check == check


def test_names_that_need_them_are_backquoted_in_the_check_and_the_path() -> None:
    (found,) = nested_not_null("my col", "array<struct<`the qty`:int NOT NULL>>")
    assert found == NestedNotNull(
        ("element", "the qty"),
        "coalesce(size(array_compact(array_compact(`my col`).`the qty`)) = size(array_compact(`my col`)), true)",
    )
    assert field_path(("my col", *found.path)) == "`my col`.element.`the qty`"


def test_no_check_reaches_a_field_inside_an_array_of_maps() -> None:
    # Only a lambda does, and Delta's ADD CONSTRAINT takes none.
    (found,) = nested_not_null("c", "array<map<string,struct<a:int NOT NULL>>>")
    assert found == NestedNotNull(("element", "value", "a"), None)
