from __future__ import annotations

import re

import pytest

from delta_sync.model.state import Check, Column, SchemaName, TableName, quote_ident
from delta_sync.planning.actions import (
    AddCheck,
    AddColumns,
    CreateSchema,
    CreateTable,
    DropCheck,
    Plan,
    PropertyChange,
    SetColumnComment,
    SetProperties,
    SetTableComment,
    Unsupported,
)
from delta_sync.planning.ddl import column_definition, plan_statements, string_literal, to_sql
from tests.unit.builders import col, name, schema, table

T = name("s.t")


def spark_unescape(literal: str) -> str:
    """What Spark's parser makes of a single-quoted literal (ParserUtils.unescapeSQLString, the cases
    string_literal can produce plus the ones it must avoid producing by accident)."""
    assert literal[0] == literal[-1] == "'"
    body = literal[1:-1]
    simple = {
        "0": "\0",
        "'": "'",
        '"': '"',
        "b": "\b",
        "n": "\n",
        "r": "\r",
        "t": "\t",
        "Z": "\x1a",
        "\\": "\\",
    }
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "'":
            raise AssertionError(f"unescaped quote ends the literal early in {literal!r}")
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt in "%_":
            out.append("\\" + nxt)
            i += 2
        else:
            out.append(simple.get(nxt, nxt))
            i += 2
    return "".join(out)


# --- string literals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("", "''"),
        ("plain", "'plain'"),
        ("it's", "'it\\'s'"),
        ("''", "'\\'\\''"),
        ("a\\b", "'a\\\\b'"),
        ("C:\\new", "'C:\\\\new'"),
        ("line1\nline2", "'line1\\nline2'"),
        ("cr\r\nlf", "'cr\\r\\nlf'"),
        ("tab\there", "'tab\there'"),
        ("${x}", "'${x}'"),
        ("`x`", "'`x`'"),
        ('say "hi"', "'say \"hi\"'"),
        ("café ✓ 日本", "'café ✓ 日本'"),
        ("\\u0041", "'\\\\u0041'"),
        ("50%_off\\%", "'50%_off\\\\%'"),
        ("it's `x` ${x}", "'it\\'s `x` ${x}'"),
        ("\\'", "'\\\\\\''"),
    ],
)
def test_string_literal(value: str, literal: str) -> None:
    assert string_literal(value) == literal


@pytest.mark.parametrize(
    "value",
    [
        "",
        "it's",
        "a\\b\\\\c",
        "trailing\\",
        "\\'",
        "x\n\ry",
        "\\n is not a newline",
        "\\u0041 stays",
        "\\%",
        "${x} ${spark.x} `t`",
        "ümlaut ✓",
        "\0nul",
    ],
)
def test_string_literal_round_trips_through_spark_unescaping(value: str) -> None:
    assert spark_unescape(string_literal(value)) == value


# --- identifiers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ident", "quoted"),
    [("id", "`id`"), ("Mixed", "`Mixed`"), ("a b", "`a b`"), ("we`ird", "`we``ird`"), ("``", "``````")],
)
def test_quote_ident_doubles_backticks(ident: str, quoted: str) -> None:
    assert quote_ident(ident) == quoted


def test_table_and_schema_names_are_quoted_per_part() -> None:
    assert name("Shop.Orders").sql() == "`shop`.`orders`"
    assert name("cat.shop.orders").sql() == "`cat`.`shop`.`orders`"
    assert TableName(None, "s", "we`ird").sql() == "`s`.`we``ird`"
    assert SchemaName("c", "s").sql() == "`c`.`s`"


# --- column definitions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "sql"),
    [
        (col("id", "bigint"), "`id` bigint"),
        (col("id", "bigint", nullable=False), "`id` bigint NOT NULL"),
        (col("id", "bigint", comment="Key"), "`id` bigint COMMENT 'Key'"),
        (col("id", "bigint", nullable=False, comment="it's"), "`id` bigint NOT NULL COMMENT 'it\\'s'"),
        (col("id", "bigint", comment=""), "`id` bigint COMMENT ''"),
        (col("we`ird name", "int"), "`we``ird name` int"),
        (
            col("st", "struct<x:int NOT NULL,`a b`:string>", nullable=False),
            "`st` struct<x:int NOT NULL,`a b`:string> NOT NULL",
        ),
        (col("price", "decimal(18,2)"), "`price` decimal(18,2)"),
    ],
)
def test_column_definition(column: Column, sql: str) -> None:
    assert column_definition(column) == sql


# --- one statement per action -------------------------------------------------------------------


def test_create_schema() -> None:
    assert to_sql(CreateSchema(schema("shop"))) == ("CREATE SCHEMA IF NOT EXISTS `shop`",)
    assert to_sql(CreateSchema(schema("cat.shop"))) == ("CREATE SCHEMA IF NOT EXISTS `cat`.`shop`",)


def test_create_table_full() -> None:
    t = table(
        "shop.orders",
        col("order_id", "bigint", nullable=False, comment="Surrogate key"),
        col("status", "string"),
        col("order date", "date", nullable=False),
        comment="Orders' table\nline two",
        partitioned_by=["order date", "status"],
        properties={"owner.team": "crm", "delta.appendOnly": "false"},
        checks={"ignored_here": "order_id > 0"},
    )
    assert to_sql(CreateTable(t)) == (
        "CREATE TABLE `shop`.`orders` (\n"
        "  `order_id` bigint NOT NULL COMMENT 'Surrogate key',\n"
        "  `status` string,\n"
        "  `order date` date NOT NULL\n"
        ") USING DELTA\n"
        "PARTITIONED BY (`order date`, `status`)\n"
        "COMMENT 'Orders\\' table\\nline two'\n"
        "TBLPROPERTIES ('delta.appendOnly' = 'false', 'owner.team' = 'crm')",
    )


def test_create_table_minimal() -> None:
    t = table("s.t", col("id", "int"))
    assert to_sql(CreateTable(t)) == ("CREATE TABLE `s`.`t` (\n  `id` int\n) USING DELTA",)


def test_create_table_with_empty_comment_keeps_it() -> None:
    t = table("s.t", col("id", "int"), comment="")
    assert to_sql(CreateTable(t)) == ("CREATE TABLE `s`.`t` (\n  `id` int\n) USING DELTA\nCOMMENT ''",)


def test_add_columns() -> None:
    action = AddColumns(T, (col("note", "string", comment="free text"), col("a`b", "array<int>")))
    assert to_sql(action) == ("ALTER TABLE `s`.`t` ADD COLUMNS (`note` string COMMENT 'free text', `a``b` array<int>)",)


def test_set_column_comment() -> None:
    assert to_sql(SetColumnComment(T, "Order_Id", "old", "it's new")) == (
        "ALTER TABLE `s`.`t` ALTER COLUMN `Order_Id` COMMENT 'it\\'s new'",
    )


def test_removing_a_column_comment_blanks_it() -> None:
    assert to_sql(SetColumnComment(T, "id", "old", None)) == ("ALTER TABLE `s`.`t` ALTER COLUMN `id` COMMENT ''",)


def test_set_table_comment() -> None:
    assert to_sql(SetTableComment(T, None, "Orders ${x}")) == ("COMMENT ON TABLE `s`.`t` IS 'Orders ${x}'",)
    assert to_sql(SetTableComment(T, "old", None)) == ("COMMENT ON TABLE `s`.`t` IS NULL",)


def test_set_properties_in_one_statement() -> None:
    action = SetProperties(
        T,
        (
            PropertyChange("delta.appendOnly", "true", "false"),
            PropertyChange("owner.team", None, "o'brien"),
        ),
    )
    assert to_sql(action) == (
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.appendOnly' = 'false', 'owner.team' = 'o\\'brien')",
    )


def test_add_check_constraint_name_unquoted_expression_verbatim() -> None:
    check = Check("known_status", "status IN ('new', 'paid')")
    assert to_sql(AddCheck(T, check)) == (
        "ALTER TABLE `s`.`t` ADD CONSTRAINT known_status CHECK (status IN ('new', 'paid'))",
    )


def test_replacing_add_check_is_the_same_statement() -> None:
    old = Check("c1", "a = 'z'")
    new = Check("c1", "a = 'y'")
    assert to_sql(AddCheck(T, new, replaces=old)) == ("ALTER TABLE `s`.`t` ADD CONSTRAINT c1 CHECK (a = 'y')",)


def test_add_check_spells_out_another_engines_cast_for_delta() -> None:
    # delta-rs stores `'0'::decimal(12, 2)`; Delta's ADD CONSTRAINT re-lexes `::` as `: :` and fails.
    check = Check("amount_positive", "amount >= '0'::decimal(12, 2)")
    assert to_sql(AddCheck(T, check)) == (
        "ALTER TABLE `s`.`t` ADD CONSTRAINT amount_positive CHECK (amount >= CAST('0' AS decimal(12, 2)))",
    )


def test_drop_check() -> None:
    assert to_sql(DropCheck(T, Check("c1", "a = 'z'"))) == ("ALTER TABLE `s`.`t` DROP CONSTRAINT c1",)


def test_unsupported_has_no_sql() -> None:
    assert to_sql(Unsupported(T, "id", "reason", "remedy")) == ()


def test_three_part_table_name_in_alter() -> None:
    assert to_sql(DropCheck(name("cat.s.t"), Check("c", "x"))) == ("ALTER TABLE `cat`.`s`.`t` DROP CONSTRAINT c",)


def test_plan_statements_pairs_actions_with_sql_and_skips_unsupported() -> None:
    drop = DropCheck(T, Check("c", "a > 0"))
    blocked = Unsupported(T, "id", "r", "f")
    create = CreateSchema(schema("s"))
    result = plan_statements(Plan(actions=(create, blocked, drop), tables=(T,)))
    assert result == (
        (create, "CREATE SCHEMA IF NOT EXISTS `s`"),
        (drop, "ALTER TABLE `s`.`t` DROP CONSTRAINT c"),
    )


def test_plan_statements_of_empty_plan() -> None:
    assert plan_statements(Plan(actions=(), tables=())) == ()
