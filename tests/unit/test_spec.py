from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import CatalogState, Check, Column, Identity, Table, TableName
from delta_sync.specs.spec_files import load_spec_files, load_specs
from delta_sync.specs.spec_models import TableSpec, spec_json_schema
from delta_sync.specs.variables import escape_vars

VALID = """\
table: Sales.Orders
comment: Orders placed in the web shop
columns:
  - name: order_id
    type: long
    nullable: false
    comment: Surrogate key
  - name: Amount
    type: decimal(18, 2)
  - name: tags
    type: ARRAY<string>
  - name: address
    type: "struct<street: string, zip: integer not null>"
  - name: attributes
    type: map<string,int>
  - name: order_date
    type: date
checks:
  Amount_Non_Negative: amount >= 0
  has_tags: size(tags) > 0
partitioned_by: [ORDER_DATE]
properties:
  delta.enableChangeDataFeed: true
  delta.logRetentionDuration: interval 30 days
  delta.dataSkippingNumIndexedCols: 8
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(*paths: Path) -> tuple[SpecProblem, ...]:
    with pytest.raises(SpecError) as info:
        load_spec_files(paths)
    return info.value.problems


def only_problem(tmp_path: Path, text: str) -> SpecProblem:
    found = problems(write(tmp_path, "spec.yaml", text))
    assert len(found) == 1, found
    return found[0]


def load_one(tmp_path: Path, text: str) -> Table:
    state = load_spec_files([write(tmp_path, "spec.yaml", text)])
    (table,) = state.tables.values()
    return table


# --- a valid file ---------------------------------------------------------------------------------


def test_valid_file_gives_the_canonical_model(tmp_path: Path) -> None:
    path = write(tmp_path, "orders.yaml", VALID)

    state = load_spec_files([path])

    name = TableName(None, "sales", "orders")
    assert state == CatalogState(
        tables={
            name: Table(
                name=name,
                columns=(
                    Column("order_id", "bigint", nullable=False, comment="Surrogate key"),
                    Column("Amount", "decimal(18,2)"),
                    Column("tags", "array<string>"),
                    Column("address", "struct<street:string,zip:int NOT NULL>"),
                    Column("attributes", "map<string,int>"),
                    Column("order_date", "date"),
                ),
                comment="Orders placed in the web shop",
                checks=(
                    Check("amount_non_negative", "amount >= 0"),
                    Check("has_tags", "size(tags) > 0"),
                ),
                partitioned_by=("order_date",),
                properties=(
                    ("delta.dataSkippingNumIndexedCols", "8"),
                    ("delta.enableChangeDataFeed", "true"),
                    ("delta.logRetentionDuration", "interval 30 days"),
                ),
            )
        }
    )


def test_origins_point_at_the_declaring_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "orders.yaml", "# the orders\n" + VALID)

    table = load_spec_files([path]).tables[TableName(None, "sales", "orders")]

    assert str(table.origin) == f"{path}:2"
    assert [c.origin.line for c in table.columns if c.origin] == [5, 9, 11, 13, 15, 17]
    assert [(c.name, c.origin.line) for c in table.checks if c.origin] == [
        ("amount_non_negative", 20),
        ("has_tags", 21),
    ]
    assert {c.origin.file for c in table.columns if c.origin} == {str(path)}


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("long", "bigint"),
        ("BIGINT", "bigint"),
        ("integer", "int"),
        ("short", "smallint"),
        ("bool", "boolean"),
        ("decimal", "decimal(10,0)"),
        ("numeric(5)", "decimal(5,0)"),
        ("varchar(20)", "varchar(20)"),
        ("array<array<long>>", "array<array<bigint>>"),
        ("map<string, struct<a:long>>", "map<string,struct<a:bigint>>"),
        ("struct<`odd name`:string>", "struct<`odd name`:string>"),
    ],
)
def test_column_types_are_canonical(tmp_path: Path, written: str, canonical: str) -> None:
    table = load_one(tmp_path, f"table: s.t\ncolumns:\n  - name: c\n    type: '{written}'\n")

    assert table.columns[0].type == canonical


def test_defaults_and_empty_comments(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: cat.s.t
        comment: ""
        columns:
          - {name: a, type: int, comment: ""}
        """,
    )

    assert table.name == TableName("cat", "s", "t")
    assert table.comment is None
    assert table.columns == (Column("a", "int", nullable=True, comment=None),)
    assert (table.checks, table.partitioned_by, table.properties) == ((), (), ())


def test_property_values_become_text(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: s.t
        columns: [{name: a, type: int}]
        properties:
          z.on: yes
          y.off: false
          x.int: 8
          w.float: 1.5
          v.text: "0010"
        """,
    )

    assert table.properties == (
        ("v.text", "0010"),
        ("w.float", "1.5"),
        ("x.int", "8"),
        ("y.off", "false"),
        ("z.on", "true"),
    )


def test_odd_strings_round_trip_unchanged(tmp_path: Path) -> None:
    odd = "it's `quoted` \\ back\\slash\nsecond line ${x} %s {0} naïve 日本語 \t tab "
    expression = "note = 'it''s' OR note = \"a\\\\b\" OR `odd col` <> '${x}'"
    spec = {
        "table": "s.t",
        "comment": odd,
        "columns": [{"name": "weird `col` ü", "type": "string", "comment": odd}],
        "checks": {"odd": expression},
        "properties": {"x.odd": odd},
    }
    path = tmp_path / "odd.yaml"
    path.write_text(yaml.safe_dump(escape_vars(spec), allow_unicode=True), encoding="utf-8")

    (table,) = load_spec_files([path]).tables.values()

    assert table.comment == odd
    assert table.columns[0].name == "weird `col` ü"
    assert table.columns[0].comment == odd
    assert table.checks[0].expression == expression
    assert table.properties == (("x.odd", odd),)


def test_block_scalars_are_kept_exactly(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: s.t
        comment: |
          Line one
            indented 'two'
        columns: [{name: a, type: int}]
        checks:
          multi: >-
            a > 0
            AND a < 10
        """,
    )

    assert table.comment == "Line one\n  indented 'two'\n"
    assert table.checks[0].expression == "a > 0 AND a < 10"


# --- finding files --------------------------------------------------------------------------------


def test_load_specs_reads_yaml_and_yml_files_recursively(tmp_path: Path) -> None:
    write(tmp_path, "b.yaml", "table: s.b\ncolumns: [{name: a, type: int}]\n")
    write(tmp_path, "nested/deeper/a.yml", "table: s.a\ncolumns: [{name: a, type: int}]\n")
    write(tmp_path, "notes.txt", "not a spec")

    state = load_specs(tmp_path)

    assert sorted(str(name) for name in state.tables) == ["s.a", "s.b"]


def test_load_specs_accepts_a_single_file(tmp_path: Path) -> None:
    path = write(tmp_path, "one.yaml", "table: s.one\ncolumns: [{name: a, type: int}]\n")

    assert list(load_specs(path).tables) == [TableName(None, "s", "one")]


def test_folder_without_specs_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "readme.md", "# nothing here")
    folder = tmp_path / "specs"
    folder.mkdir()

    with pytest.raises(SpecError) as info:
        load_specs(folder)

    (problem,) = info.value.problems
    assert (problem.file, problem.line) == (str(folder), 0)
    assert problem.message == f"no *.yaml or *.yml files under {folder}/"
    assert problem.hint


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"

    with pytest.raises(SpecError) as info:
        load_specs(missing)

    (problem,) = info.value.problems
    assert (problem.file, problem.line) == (str(missing), 0)
    assert "does not exist" in problem.message


def test_no_files_gives_an_empty_state() -> None:
    assert load_spec_files([]) == CatalogState(tables={})


# --- problems, one per case -----------------------------------------------------------------------

COLUMNS = "columns:\n  - name: id\n    type: bigint\n"

PROBLEMS = [
    pytest.param(
        "table: s.t\ncolumns: [\n  {name: a, type: int}\n",
        4,
        "invalid YAML",
        "indentation",
        id="yaml-syntax",
    ),
    pytest.param("", 1, "file is empty", "table:", id="empty"),
    pytest.param("# only a comment\n", 1, "file is empty", "table:", id="only-comment"),
    pytest.param("- table: s.t\n", 1, "top level must be a mapping, got list", "table:", id="top-list"),
    pytest.param("just text\n", 1, "top level must be a mapping, got string", "table:", id="top-scalar"),
    pytest.param(
        "table: s.t\ncoment: x\n" + COLUMNS,
        2,
        "unknown key `coment`",
        "did you mean `comment`? allowed keys: table, comment, columns, checks, partitioned_by, "
        "clustered_by, properties",
        id="unknown-top-key",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "    nulable: false\n",
        5,
        "column `id`: unknown key `nulable`",
        "did you mean `nullable`? allowed keys: name, type, nullable, comment, default, generated, "
        "identity, renamed_from",
        id="unknown-column-key",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "zzz:\n  - 1\n",
        5,
        "unknown key `zzz`",
        "allowed keys: table,",
        id="unknown-key-no-suggestion",
    ),
    pytest.param("# spec\n" + COLUMNS, 2, "missing required key `table`", "add `table:`", id="missing-table"),
    pytest.param("table: s.t\n", 1, "missing required key `columns`", "add `columns:`", id="missing-columns"),
    pytest.param(
        "table: s.t\ncolumns:\n  - name: a\n    type: int\n  - name: b\n    comment: x\n",
        5,
        "column `b`: missing required key `type`",
        "add `type:` - Spark SQL type",
        id="missing-type",
    ),
    pytest.param(
        "table: s.t\ncolumns:\n  - type: int\n",
        3,
        "column #1: missing required key `name`",
        "add `name:`",
        id="missing-name",
    ),
    pytest.param(
        "table: s.t\ncolumns:\n  id: bigint\n",
        2,
        "`columns` must be a list, got mapping",
        "- item",
        id="columns-not-list",
    ),
    pytest.param("table: s.t\ncolumns: []\n", 2, "`columns` must not be empty", "", id="columns-empty"),
    pytest.param(
        "table: s.t\ncolumns:\n  - id\n",
        3,
        "column #1 must be a mapping, got string 'id'",
        "key: value",
        id="column-not-mapping",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "    nullable: 'false'\n",
        5,
        "column `id`: `nullable` must be true or false, got string 'false'",
        "without quotes",
        id="nullable-not-bool",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "    comment: 12\n",
        5,
        "column `id`: `comment` must be a string, got integer",
        "quote",
        id="column-comment-not-string",
    ),
    pytest.param(
        "table: s.t\ncomment: [a]\n" + COLUMNS,
        2,
        "`comment` must be a string, got list",
        "quote",
        id="comment-not-string",
    ),
    pytest.param("table: 42\n" + COLUMNS, 1, "`table` must be a string, got integer", "quote", id="table-not-string"),
    pytest.param(
        "table: orders\n" + COLUMNS,
        1,
        "table name 'orders' must be schema.table or catalog.schema.table",
        "sales.orders",
        id="table-name-one-part",
    ),
    pytest.param(
        "table: s.order-items\n" + COLUMNS,
        1,
        "table name part 'order-items' must be letters, digits and underscores",
        "sales.orders",
        id="table-name-bad-part",
    ),
    pytest.param(
        "table: s.t\ncolumns:\n  - name: ' '\n    type: int\n",
        3,
        "column #1: name is empty",
        "give every column a name",
        id="column-name-empty",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "  - name: x\n    type: int\n  - name: ID\n    type: int\n",
        7,
        "column `ID` is declared twice (first at line 3)",
        "case-insensitive",
        id="duplicate-column",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "  - name: amount\n    type: decimal(40,2)\n",
        6,
        "column `amount`: bad type `decimal(40,2)`: decimal(40,2) needs 1 <= precision <= 38",
        "decimal(18,2)",
        id="bad-type",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "  - name: x\n    type: strin\n",
        6,
        "column `x`: bad type `strin`: unknown type 'strin'",
        "valid types look like bigint",
        id="unknown-type",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "checks:\n  1st: id > 0\n",
        6,
        "check `1st`: name must be letters, digits and underscores",
        "rename the check",
        id="check-bad-name",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "checks:\n  ok: id > 0\n  bad: id > 0; DROP TABLE x\n",
        7,
        "check `bad`: bad expression: ';' is not allowed",
        "one boolean SQL expression",
        id="check-bad-expression",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "checks:\n  pos: (id > 0\n",
        6,
        "check `pos`: bad expression: unbalanced parentheses",
        "",
        id="check-unbalanced",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "checks:\n  pos: true\n",
        6,
        "check `pos` must be a string, got boolean",
        "quote",
        id="check-not-string",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "checks:\n  Positive: id > 0\n  positive: id >= 1\n",
        7,
        "check `positive` is declared twice (as `Positive` at line 6)",
        "lower-cased",
        id="duplicate-check",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "partitioned_by: [idd]\n",
        5,
        "partition column `idd` is not a declared column",
        "did you mean `id`?",
        id="partition-unknown",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "  - {name: d, type: date}\npartitioned_by:\n  - d\n  - D\n",
        8,
        "partition column `D` is listed twice",
        "",
        id="partition-twice",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "partitioned_by: [ID]\n",
        5,
        "every column is a partition column",
        "at least one column that is not a partition column",
        id="partition-all",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "partitioned_by: id\n",
        5,
        "`partitioned_by` must be a list, got string 'id'",
        "",
        id="partition-not-list",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "properties:\n  a.c: [1, 2]\n",
        6,
        "property `a.c`: value must be a string, boolean, number or null, got list",
        "quote the value",
        id="property-list",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "properties:\n  a.c: {x: 1}\n",
        6,
        "property `a.c`: value must be a string, boolean, number or null, got mapping",
        "quote the value",
        id="property-mapping",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "properties: [a]\n",
        5,
        "`properties` must be a mapping, got list",
        "key: value",
        id="properties-not-mapping",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "table: s.u\n",
        5,
        "key `table` appears twice (first at line 1)",
        "last",
        id="duplicate-yaml-key",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "properties:\n  on: x\n",
        6,
        "key `on` is read as bool, not text",
        'quote it: "on":',
        id="non-text-key",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "comment: !custom x\n",
        5,
        "invalid YAML: could not determine a constructor for the tag '!custom'",
        "",
        id="custom-tag",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "comment: !!set {a}\n",
        5,
        "unsupported YAML tag `tag:yaml.org,2002:set`",
        "remove the tag",
        id="set-tag",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "!!set comment: x\n",
        5,
        "unsupported YAML tag `tag:yaml.org,2002:set`",
        "remove the tag",
        id="set-tag-on-a-key",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "? [a]\n: b\n",
        5,
        "a key must be plain text",
        "",
        id="complex-key",
    ),
    pytest.param(
        "table: s.t\ncolumns:\n  - &col {name: a, type: int}\n  - *col\n",
        3,
        "YAML anchors and aliases are not supported",
        "write the value out in full",
        id="anchor",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "---\ntable: s.u\n",
        5,
        "invalid YAML: but found another document",
        "",
        id="two-documents",
    ),
    pytest.param(
        "table: s.t\ncomment: a \x01 b\n" + COLUMNS,
        2,
        "characters are not allowed",
        "",
        id="control-character",
    ),
]


ID = "table: s.t\n" + COLUMNS  # the column `id` ends on line 4; line 5 is the next key
TWO = "table: s.t\n" + COLUMNS + "  - {name: d, type: date}\n"  # `d` is on line 5

OPTION_PROBLEMS = [
    # column names
    pytest.param(
        'table: s.t\ncolumns:\n  - name: "a\\nb"\n    type: int\n',
        3,
        "column #1: name contains a line break",
        "one line",
        id="column-name-newline",
    ),
    pytest.param(
        'table: s.t\ncolumns:\n  - name: "a\\rb"\n    type: int\n',
        3,
        "column #1: name contains a line break",
        "one line",
        id="column-name-carriage-return",
    ),
    pytest.param(
        "table: s.t\ncolumns:\n  - name: ''\n    type: int\n",
        3,
        "column #1: name is empty",
        "give every column a name",
        id="column-name-empty-string",
    ),
    # renamed_from
    pytest.param(
        ID + "    renamed_from: ''\n",
        5,
        "column `id`: `renamed_from` is empty",
        "previous name",
        id="renamed-from-empty",
    ),
    pytest.param(
        ID + "    renamed_from: 3\n",
        5,
        "column `id`: `renamed_from` must be a string, got integer",
        "quote",
        id="renamed-from-not-string",
    ),
    pytest.param(
        ID + "    renamed_from: ID\n",
        5,
        "column `id`: `renamed_from` is the column's own name",
        "case-insensitive",
        id="renamed-from-own-name",
    ),
    pytest.param(
        ID + "  - name: a\n    type: string\n    renamed_from: email\n"
        "  - name: b\n    type: string\n    renamed_from: Email\n",
        10,
        "column `b`: `Email` is already renamed to `a` at line 7",
        "remove one renamed_from:",
        id="renamed-from-twice",
    ),
    pytest.param(
        ID + "  - name: email\n    type: string\n  - name: customer_email\n    type: string\n    renamed_from: EMAIL\n",
        9,
        "column `customer_email`: `email` is still declared; a rename needs the old name gone from columns:",
        "remove `email` (line 5) from columns:",
        id="renamed-from-still-declared",
    ),
    # generated
    pytest.param(
        ID + "  - name: d\n    type: date\n    generated: CAST(created_at AS DATE\n",
        7,
        "column `d`: bad generated expression: unbalanced parentheses",
        "CAST(created_at AS DATE)",
        id="generated-bad-expression",
    ),
    pytest.param(
        ID + "  - name: d\n    type: date\n    generated: to_date(x); DROP TABLE t\n",
        7,
        "column `d`: bad generated expression: ';' is not allowed",
        "",
        id="generated-statements",
    ),
    pytest.param(
        ID + "    generated: (SELECT max(id) FROM t)\n",
        5,
        "column `id`: bad generated expression: subqueries are not allowed",
        "",
        id="generated-subquery",
    ),
    pytest.param(
        ID + "    generated: true\n",
        5,
        "column `id`: `generated` must be a string, got boolean",
        "quote",
        id="generated-not-string",
    ),
    pytest.param(
        ID + "    generated: other + 1\n    identity: {}\n",
        6,
        "column `id`: `identity` and `generated` cannot be combined",
        "either an identity or generated",
        id="generated-with-identity",
    ),
    pytest.param(
        ID + "    default: 0\n    generated: other + 1\n",
        6,
        "column `id`: `generated` and `default` cannot be combined",
        "always computed",
        id="generated-with-default",
    ),
    pytest.param(
        ID + "  - name: Total\n    type: int\n    generated: TOTAL + 1\n",
        7,
        "column `Total`: the generated expression refers to the column itself",
        "computed from other columns",
        id="generated-self-reference",
    ),
    pytest.param(
        ID + "  - name: odd col\n    type: int\n    generated: coalesce(`Odd Col`, 0)\n",
        7,
        "column `odd col`: the generated expression refers to the column itself",
        "",
        id="generated-self-reference-quoted",
    ),
    # identity
    pytest.param(
        "table: s.t\ncolumns:\n  - name: id\n    type: int\n    identity: {}\n",
        5,
        "column `id`: an identity column must be bigint, not int",
        "type: bigint",
        id="identity-not-bigint",
    ),
    pytest.param(
        ID + "    identity: {step: 0}\n",
        5,
        "column `id`: identity step must not be 0",
        "-1 to count down",
        id="identity-step-zero",
    ),
    pytest.param(
        ID + "    identity:\n      start: true\n",
        6,
        "column `id`: `identity.start` must be a whole number, got boolean",
        "without quotes",
        id="identity-start-bool",
    ),
    pytest.param(
        ID + "    identity:\n      start: 1\n      step: 1.0\n",
        7,
        "column `id`: `identity.step` must be a whole number, got number",
        "",
        id="identity-step-float",
    ),
    pytest.param(
        ID + "    identity:\n      start: '1'\n",
        6,
        "column `id`: `identity.start` must be a whole number, got string '1'",
        "",
        id="identity-start-string",
    ),
    pytest.param(
        ID + "    identity:\n      always: 'yes'\n",
        6,
        "column `id`: `identity.always` must be true or false, got string 'yes'",
        "without quotes",
        id="identity-always-not-bool",
    ),
    pytest.param(
        ID + "    identity:\n      start: 9223372036854775808\n",
        6,
        "column `id`: identity value 9223372036854775808 does not fit in a bigint",
        "",
        id="identity-start-too-big",
    ),
    pytest.param(
        ID + "    identity: true\n",
        5,
        "column `id`: `identity` must be a mapping, got boolean",
        "identity: {start: 1, step: 1, always: true}",
        id="identity-not-mapping",
    ),
    pytest.param(
        ID + "    identity:\n      begin: 1\n",
        6,
        "column `id`: unknown key `begin`",
        "allowed keys: start, step, always",
        id="identity-unknown-key",
    ),
    pytest.param(
        ID + "    identity: {}\n    default: 0\n",
        6,
        "column `id`: `identity` and `default` cannot be combined",
        "remove default:",
        id="identity-with-default",
    ),
    pytest.param(
        ID + "    default: 0\n    identity: {}\n",
        6,
        "column `id`: `identity` and `default` cannot be combined",
        "",
        id="identity-with-default-reversed",
    ),
    pytest.param(
        ID + "    identity: {}\n  - {name: d, type: date}\n  - {name: x, type: int}\npartitioned_by:\n  - d\n  - id\n",
        10,
        "partition column `id` is an identity column",
        "cannot partition by an identity column",
        id="identity-partition",
    ),
    # default
    pytest.param(
        ID + "    default: (SELECT max(id) FROM t)\n",
        5,
        "column `id`: bad default: subqueries are not allowed",
        "default: \"'new'\"",
        id="default-subquery",
    ),
    pytest.param(
        ID + '    default: "\'new"\n',
        5,
        "column `id`: bad default: unterminated quote '",
        "quote a string literal",
        id="default-unterminated",
    ),
    pytest.param(
        ID + "    default: 0 -- zero\n",
        5,
        "column `id`: bad default: SQL comments are not allowed",
        "",
        id="default-comment",
    ),
    pytest.param(
        ID + "    default: 1.50\n",
        5,
        "column `id`: `default` is read as the YAML number 1.5",
        "quote it",
        id="default-float",
    ),
    pytest.param(
        ID + "    default: [1]\n",
        5,
        "column `id`: `default` must be a string, got list",
        "quote",
        id="default-list",
    ),
    # clustered_by
    pytest.param(
        ID + "clustered_by: [idd]\n",
        5,
        "clustering column `idd` is not a declared column",
        "did you mean `id`?",
        id="clustering-unknown",
    ),
    pytest.param(
        TWO + "clustered_by:\n  - d\n  - D\n",
        8,
        "clustering column `D` is listed twice",
        "list it once",
        id="clustering-twice",
    ),
    pytest.param(
        ID + "  - {name: a, type: int}\n  - {name: b, type: int}\n  - {name: c, type: int}\n"
        "  - {name: e, type: int}\nclustered_by: [id, a, b, c, e]\n",
        9,
        "`clustered_by` lists 5 columns; Delta allows at most 4",
        "",
        id="clustering-too-many",
    ),
    pytest.param(
        TWO + "partitioned_by: [d]\nclustered_by: [id]\n",
        7,
        "`clustered_by` and `partitioned_by` cannot both be set",
        "a table is either partitioned or clustered",
        id="clustering-and-partitioning",
    ),
    pytest.param(
        ID + "clustered_by: id\n",
        5,
        "`clustered_by` must be a list, got string 'id'",
        "",
        id="clustering-not-list",
    ),
    # properties
    pytest.param(
        ID + "properties:\n  a.b: x\n  delta.minReaderVersion: null\n",
        7,
        "property `delta.minReaderVersion`: reserved property",
        "managed by Delta",
        id="reserved-property-null",
    ),
    pytest.param(
        ID + "properties:\n  Delta.Constraints.x: ~\n",
        6,
        "property `Delta.Constraints.x`: reserved for CHECK constraints",
        "checks:",
        id="constraint-property-null",
    ),
]


@pytest.mark.parametrize(("text", "line", "message", "hint"), PROBLEMS + OPTION_PROBLEMS)
def test_problem_is_reported_at_its_line(tmp_path: Path, text: str, line: int, message: str, hint: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")

    found = problems(path)

    assert len(found) == 1, found
    assert (found[0].file, found[0].line) == (str(path), line)
    assert message in found[0].message
    assert hint in found[0].hint


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("delta.constraints.positive", "declare it under checks:"),
        ("Delta.Constraints.x", "declare it under checks:"),
        ("comment", "use the top-level comment:"),
        ("location", "Spark sets it"),
        ("provider", "Spark sets it"),
        ("owner", "Spark sets it"),
        ("external", "Spark sets it"),
        ("delta.columnMapping.maxColumnId", "managed by Delta"),
        ("delta.minReaderVersion", "managed by Delta"),
        ("delta.minWriterVersion", "managed by Delta"),
    ],
)
def test_reserved_properties_are_rejected(tmp_path: Path, key: str, hint: str) -> None:
    problem = only_problem(tmp_path, f"table: s.t\n{COLUMNS}properties:\n  ok.key: x\n  {key}: '1'\n")

    assert problem.line == 7
    assert problem.message.startswith(f"property `{key}`: reserved")
    assert hint in problem.hint


def test_properties_that_merely_start_like_reserved_ones_are_fine(tmp_path: Path) -> None:
    table = load_one(tmp_path, f"table: s.t\n{COLUMNS}properties:\n  owner.team: crm\n  commentary: x\n")

    assert table.properties == (("commentary", "x"), ("owner.team", "crm"))


# --- column options, clustering, property removal ------------------------------------------------

COMBINED = """\
table: sales.orders
columns:
  - name: id
    type: long
    nullable: false
    identity: {start: 1, step: 1, always: true}
  - name: customer_id
    type: bigint
  - name: customer_email
    type: string
    renamed_from: email
  - name: created_at
    type: timestamp
  - name: order_date
    type: date
    generated: CAST(created_at AS DATE)
  - name: status
    type: string
    default: "'new'"
clustered_by: [Customer_ID]
properties:
  delta.enableChangeDataFeed: true
  some.key: null
  delta.feature.allowColumnDefaults: supported
  another.key:
"""


def test_combined_example_gives_the_exact_model(tmp_path: Path) -> None:
    table = load_one(tmp_path, COMBINED)

    assert table == Table(
        name=TableName(None, "sales", "orders"),
        columns=(
            Column(name="id", type="bigint", nullable=False, identity=Identity(start=1, step=1, always=True)),
            Column(name="customer_id", type="bigint"),
            Column(name="customer_email", type="string"),
            Column(name="created_at", type="timestamp"),
            Column(name="order_date", type="date", generated="CAST(created_at AS DATE)"),
            Column(name="status", type="string", default="'new'"),
        ),
        clustered_by=("customer_id",),
        properties=(
            ("delta.enableChangeDataFeed", "true"),
            ("delta.feature.allowColumnDefaults", "supported"),
        ),
        removed_properties=("another.key", "some.key"),
    )
    # Not part of equality, so checked one by one.
    assert [c.renamed_from for c in table.columns] == [None, None, "email", None, None, None]
    assert [c.origin.line for c in table.columns if c.origin] == [3, 7, 9, 12, 14, 17]
    assert table.partitioned_by == ()


def test_renamed_from_is_kept_as_written(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: s.t
        columns:
          - {name: customer_email, type: string, renamed_from: Email}
          - {name: b, type: int, renamed_from: "old name"}
          - {name: c, type: int, renamed_from: null}
          - {name: d, type: int}
        """,
    )

    assert [c.renamed_from for c in table.columns] == ["Email", "old name", None, None]
    # A rename hint is not part of what the column is: the same column without one compares equal.
    assert table.columns[0] == Column(name="customer_email", type="string")


def test_renames_may_chain_through_names_no_longer_declared(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: s.t
        columns:
          - {name: a, type: int, renamed_from: x}
          - {name: b, type: int, renamed_from: y}
        """,
    )

    assert [(c.name, c.renamed_from) for c in table.columns] == [("a", "x"), ("b", "y")]


@pytest.mark.parametrize(
    ("written", "identity"),
    [
        ("{}", Identity(start=1, step=1, always=True)),
        ("{start: 100}", Identity(start=100, step=1, always=True)),
        ("{step: -1}", Identity(start=1, step=-1, always=True)),
        ("{always: false}", Identity(start=1, step=1, always=False)),
        ("{start: -5, step: 10, always: false}", Identity(start=-5, step=10, always=False)),
        ("{start: 9223372036854775807}", Identity(start=2**63 - 1, step=1, always=True)),
        ("null", None),
    ],
)
def test_identity_is_parsed_with_defaults(tmp_path: Path, written: str, identity: Identity | None) -> None:
    table = load_one(tmp_path, f"table: s.t\ncolumns:\n  - {{name: id, type: LONG, identity: {written}}}\n")

    (column,) = table.columns
    assert column == Column(name="id", type="bigint", identity=identity)
    assert column.identity == identity


@pytest.mark.parametrize(
    ("written", "default"),
    [
        ("\"'new'\"", "'new'"),
        ("\"'it''s'\"", "'it''s'"),
        ("0", "0"),
        ("-1", "-1"),
        ("true", "true"),
        ("false", "false"),
        ("'1.50'", "1.50"),
        ("current_timestamp()", "current_timestamp()"),
        ('"NULL"', "NULL"),
        ("null", None),
    ],
)
def test_default_is_a_sql_expression(tmp_path: Path, written: str, default: str | None) -> None:
    table = load_one(tmp_path, f"table: s.t\ncolumns:\n  - name: c\n    type: string\n    default: {written}\n")

    assert table.columns[0] == Column(name="c", type="string", default=default)


def test_generated_is_kept_as_written(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: s.t
        columns:
          - {name: address, type: "struct<city:string>"}
          - {name: city, type: string, generated: UPPER(address.city)}
          - {name: upper, type: string, generated: upper(city)}
          - {name: year, type: int, generated: "year(`d`)"}
          - {name: d, type: date}
        partitioned_by: [year]
        """,
    )

    assert [c.generated for c in table.columns] == [
        None,
        "UPPER(address.city)",
        "upper(city)",
        "year(`d`)",
        None,
    ]
    assert table.partitioned_by == ("year",)


def test_generated_partition_column_and_identity_clustering_column(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        """\
        table: s.t
        columns:
          - {name: ID, type: bigint, identity: {always: false}}
          - {name: ts, type: timestamp}
          - {name: d, type: date, generated: CAST(ts AS DATE)}
        clustered_by: [id, D]
        partitioned_by: []
        """,
    )

    assert table.clustered_by == ("ID", "d")
    assert table.partitioned_by == ()


def test_clustered_by_uses_the_declared_spelling(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        f"table: s.t\n{COLUMNS}  - {{name: Region, type: string}}\nclustered_by: [REGION, id]\n",
    )

    assert table.clustered_by == ("Region", "id")
    assert table.partitioned_by == ()


def test_clustered_by_allows_four_columns(tmp_path: Path) -> None:
    names = ["a", "b", "c", "d"]
    columns = "".join(f"  - {{name: {n}, type: int}}\n" for n in names)
    table = load_one(tmp_path, f"table: s.t\n{COLUMNS}{columns}clustered_by: [{', '.join(names)}]\n")

    assert table.clustered_by == tuple(names)


def test_null_properties_are_removals(tmp_path: Path) -> None:
    table = load_one(
        tmp_path,
        f"table: s.t\n{COLUMNS}properties:\n  z.gone: null\n  b.kept: x\n  a.gone:\n  m.gone: ~\n",
    )

    assert table.properties == (("b.kept", "x"),)
    assert table.removed_properties == ("a.gone", "m.gone", "z.gone")


def test_without_the_new_keys_nothing_changes(tmp_path: Path) -> None:
    table = load_one(tmp_path, "table: s.t\n" + COLUMNS)

    (column,) = table.columns
    assert (column.default, column.generated, column.identity, column.renamed_from) == (None,) * 4
    assert (table.clustered_by, table.removed_properties) == ((), ())


@pytest.mark.parametrize(
    "name",
    ["has space", "a.b", "weird `col`", "naïve", "with\ttab", "-dash", "123", "sel;ect", " padded "],
)
def test_odd_column_names_are_kept(tmp_path: Path, name: str) -> None:
    path = tmp_path / "odd.yaml"
    spec = {"table": "s.t", "columns": [{"name": name, "type": "int"}]}
    path.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")

    (table,) = load_spec_files([path]).tables.values()

    assert table.columns[0].name == name


def test_column_option_problems_are_reported_together(tmp_path: Path) -> None:
    found = problems(
        write(
            tmp_path,
            "spec.yaml",
            """\
            table: s.t
            columns:
              - name: id
                type: int
                identity: {step: 0}
              - name: total
                type: int
                default: 0
                generated: total + 1
              - name: email
                type: string
              - name: mail
                type: string
                renamed_from: Email
            partitioned_by: [id]
            clustered_by: [total, nope]
            properties:
              owner: null
            """,
        )
    )

    assert [(p.line, p.message) for p in found] == [
        (5, "column `id`: identity step must not be 0"),
        (5, "column `id`: an identity column must be bigint, not int"),
        (9, "column `total`: `generated` and `default` cannot be combined"),
        (9, "column `total`: the generated expression refers to the column itself"),
        (
            14,
            "column `mail`: `email` is still declared; a rename needs the old name gone from columns:",
        ),
        (15, "partition column `id` is an identity column"),
        (16, "clustering column `nope` is not a declared column"),
        (16, "`clustered_by` and `partitioned_by` cannot both be set"),
        (18, "property `owner`: reserved property"),
    ]


def test_file_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("table: s.t\ncomment: caf\u00e9\n".encode("latin-1"))

    (problem,) = problems(path)

    assert problem.line == 2
    assert "not UTF-8" in problem.message
    assert "UTF-8" in problem.hint


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbftable: s.t\ncolumns: [{name: a, type: int}]\n")

    assert list(load_spec_files([path]).tables) == [TableName(None, "s", "t")]


def test_file_larger_than_one_mib(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("table: s.t\n" + COLUMNS + "# " + "x" * (1024 * 1024) + "\n", encoding="utf-8")

    (problem,) = problems(path)

    assert "larger than 1 MiB" in problem.message
    assert "one table per file" in problem.hint


def test_alias_bomb_is_rejected_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 30)]
    path = write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")

    start = time.perf_counter()
    (problem,) = problems(path)

    assert time.perf_counter() - start < 1
    assert (problem.line, problem.message) == (1, "YAML anchors and aliases are not supported")


def test_unused_anchor_is_rejected(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "table: s.t\ncomment: &c hello\n" + COLUMNS)

    assert (problem.line, problem.message) == (2, "YAML anchors and aliases are not supported")


def test_ampersands_in_strings_are_not_anchors(tmp_path: Path) -> None:
    table = load_one(tmp_path, f"table: s.t\ncomment: R&D\n{COLUMNS}checks:\n  c: id > 0 && id < 9\n")

    assert table.comment == "R&D"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("table: s.t\nx: " + "[" * 300_000 + "]" * 300_000 + "\n", id="flow"),
        pytest.param("table: s.t\nx:\n" + "- " * 300_000 + "y\n", id="compact-sequences"),
        pytest.param(
            "table: s.t\nx:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 60)) + " " * 60 + "v\n",
            id="indentation",
        ),
    ],
)
def test_deep_nesting_is_rejected(tmp_path: Path, text: str) -> None:
    problem = only_problem(tmp_path, text)

    assert problem.message == "nesting is deeper than 50 levels"
    assert problem.line > 1


def test_nesting_up_to_the_limit_is_parsed(tmp_path: Path) -> None:
    text = "table: s.t\n" + COLUMNS + "x: " + "[" * 49 + "]" * 49 + "\n"

    problem = only_problem(tmp_path, text)

    assert problem.message.startswith("unknown key `x`")


# --- several problems together --------------------------------------------------------------------


def test_all_problems_of_all_files_are_reported_together(tmp_path: Path) -> None:
    good = write(tmp_path, "a_good.yaml", "table: s.good\n" + COLUMNS)
    broken = write(
        tmp_path,
        "b_broken.yaml",
        """\
        table: s.broken
        colums: []
        comment: 5
        """,
    )
    syntax = write(tmp_path, "c_syntax.yaml", "table: s.t\ncolumns: [\n")
    columns = write(
        tmp_path,
        "d_columns.yaml",
        """\
        table: s.cols
        columns:
          - name: id
            type: nope
          - name: ID
            type: int
            nullable: maybe
        partitioned_by: [missing]
        """,
    )

    found = problems(good, broken, syntax, columns)

    expected = [
        (str(broken), 1, "missing required key `columns`"),
        (str(broken), 2, "unknown key `colums`"),
        (str(broken), 3, "`comment` must be a string, got integer"),
        (str(syntax), 3, "invalid YAML: "),
        (str(columns), 4, "column `id`: bad type `nope`: unknown type 'nope'"),
        (str(columns), 5, "column `ID` is declared twice (first at line 3)"),
        (str(columns), 7, "column `ID`: `nullable` must be true or false, got string 'maybe'"),
        (str(columns), 8, "partition column `missing` is not a declared column"),
    ]
    assert [(p.file, p.line) for p in found] == [(file, line) for file, line, _ in expected]
    for problem, (_, _, message) in zip(found, expected, strict=True):
        assert problem.message.startswith(message)


def test_spec_error_message_lists_every_problem(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", "table: s\n" + COLUMNS)
    second = write(tmp_path, "b.yaml", "")

    with pytest.raises(SpecError) as info:
        load_spec_files([first, second])

    text = str(info.value)
    assert text.startswith("2 problems in specs:")
    assert f"{first}:1: table name 's'" in text
    assert f"{second}:1: file is empty" in text


def test_duplicate_table_across_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", "# orders\ntable: sales.orders\n" + COLUMNS)
    second = write(tmp_path, "b/orders.yml", COLUMNS + "table: Sales.ORDERS\n")

    found = problems(first, second)

    assert [(p.file, p.line, p.message) for p in found] == [
        (str(second), 4, f"table `sales.orders` is already declared at {first}:2"),
    ]
    assert "one spec file per table" in found[0].hint


def test_duplicate_table_is_found_even_when_the_first_file_is_broken(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", "table: s.t\ncolumns: nope\n")
    second = write(tmp_path, "b.yaml", "table: s.t\n" + COLUMNS)

    found = problems(first, second)

    assert [(p.file, p.line) for p in found] == [(str(first), 2), (str(second), 1)]
    assert found[1].message == f"table `s.t` is already declared at {first}:1"


def test_a_folder_with_broken_files_is_validated_fast(tmp_path: Path) -> None:
    for i in range(50):
        write(tmp_path, f"ok/t{i}.yaml", VALID.replace("Sales.Orders", f"s.t{i}"))
    write(tmp_path, "bad/a.yaml", "table: s.x\ncolumns: [\n")
    write(tmp_path, "bad/b.yaml", "table: s.y\ncolumns: [{name: a, type: nope}]\n")
    write(tmp_path, "bad/c.yaml", "table: s.z\ncolumns: [{name: a, type: int}]\nextra: 1\n")

    start = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)

    assert time.perf_counter() - start < 0.5
    assert len(info.value.problems) == 3


# --- models and JSON schema -----------------------------------------------------------------------


def test_models_are_frozen_and_strict() -> None:
    spec = TableSpec.model_validate({"table": "s.t", "columns": [{"name": "a", "type": "int"}]})

    assert spec.columns[0].nullable is True
    with pytest.raises(ValueError, match="frozen"):
        spec.table = "s.u"  # type: ignore[misc]


def test_json_schema_describes_the_file() -> None:
    document = spec_json_schema()
    schema, tombstone, view, view_tombstone = document["oneOf"]
    assert view["required"] == ["view", "sql"]
    assert set(view["properties"]) == {"view", "comment", "sql", "columns", "protect"}
    assert view_tombstone["required"] == ["view", "drop"]

    assert document["$schema"].startswith("https://json-schema.org/")
    assert document["title"] == "delta-sync spec"
    assert tombstone["required"] == ["table", "drop"]
    assert tombstone["properties"]["drop"]["const"] is True
    assert tombstone["additionalProperties"] is False
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["table", "columns"]
    assert set(schema["properties"]) == {
        "table",
        "protect",
        "allow",
        "comment",
        "columns",
        "checks",
        "partitioned_by",
        "clustered_by",
        "properties",
        "primary_key",
        "foreign_keys",
        "location",
        "renamed_from",
        "lint",
    }
    assert all(field.get("description") for field in schema["properties"].values())
    column = document["$defs"]["ColumnSpec"]
    assert column["additionalProperties"] is False
    assert column["required"] == ["name", "type"]
    assert all(field.get("description") for field in column["properties"].values())
    values = schema["properties"]["properties"]["additionalProperties"]
    assert values == {"type": ["string", "boolean", "number", "null"]}
    assert schema["properties"]["checks"]["additionalProperties"] is False
    json.dumps(schema)


def test_json_schema_describes_the_column_options() -> None:
    schema = spec_json_schema()
    defs = schema["$defs"]
    column = defs["ColumnSpec"]["properties"]

    assert {"default", "generated", "identity", "renamed_from"} <= set(column)
    assert {"type": "string"} in column["generated"]["anyOf"]
    assert {"type": "string"} in column["renamed_from"]["anyOf"]
    assert {"type": ["string", "integer", "boolean"]} in column["default"]["anyOf"]
    assert {"$ref": "#/$defs/IdentitySpec"} in column["identity"]["anyOf"]
    identity = defs["IdentitySpec"]
    assert identity["type"] == "object"
    assert identity["additionalProperties"] is False
    assert "required" not in identity
    assert {name: field["type"] for name, field in identity["properties"].items()} == {
        "start": "integer",
        "step": "integer",
        "always": "boolean",
    }
    assert {name: field["default"] for name, field in identity["properties"].items()} == {
        "start": 1,
        "step": 1,
        "always": True,
    }
    assert all(field.get("description") for field in identity["properties"].values())
    clustered = schema["oneOf"][0]["properties"]["clustered_by"]
    assert (clustered["type"], clustered["items"], clustered["maxItems"]) == ("array", {"type": "string"}, 4)
    assert "null" in schema["oneOf"][0]["properties"]["properties"]["description"]


def test_schema_example_round_trips(tmp_path: Path) -> None:
    (example,) = spec_json_schema()["oneOf"][0]["examples"]
    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(example, sort_keys=False), encoding="utf-8")

    (table,) = load_spec_files([path]).tables.values()

    assert str(table.name) == example["table"]
    assert [c.name for c in table.columns] == [c["name"] for c in example["columns"]]
    assert dict(table.properties) == example["properties"]
    assert {c.name: c.expression for c in table.checks} == example["checks"]
    assert list(table.partitioned_by) == example["partitioned_by"]


def test_schema_is_a_fresh_copy() -> None:
    schema: dict[str, Any] = spec_json_schema()
    schema["title"] = "changed"

    assert spec_json_schema()["title"] == "delta-sync spec"
