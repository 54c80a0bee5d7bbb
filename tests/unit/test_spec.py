from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from delta_sync.errors import SpecError, SpecProblem
from delta_sync.model import CatalogState, Check, Column, Table, TableName
from delta_sync.spec import TableSpec, load_spec_files, load_specs, spec_json_schema

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
    path.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")

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
        "did you mean `comment`? allowed keys: table, comment, columns, checks, partitioned_by, properties",
        id="unknown-top-key",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "    nulable: false\n",
        5,
        "column `id`: unknown key `nulable`",
        "did you mean `nullable`? allowed keys: name, type, nullable, comment",
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
    pytest.param(
        "table: 42\n" + COLUMNS, 1, "`table` must be a string, got integer", "quote", id="table-not-string"
    ),
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
        "table: s.t\n" + COLUMNS + "properties:\n  a.b: x\n  a.c:\n",
        7,
        "property `a.c`: value must be a string, boolean or number, got null",
        "quote the value",
        id="property-null",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "properties:\n  a.c: [1, 2]\n",
        6,
        "property `a.c`: value must be a string, boolean or number, got list",
        "quote the value",
        id="property-list",
    ),
    pytest.param(
        "table: s.t\n" + COLUMNS + "properties:\n  a.c: {x: 1}\n",
        6,
        "property `a.c`: value must be a string, boolean or number, got mapping",
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


@pytest.mark.parametrize(("text", "line", "message", "hint"), PROBLEMS)
def test_problem_is_reported_at_its_line(
    tmp_path: Path, text: str, line: int, message: str, hint: str
) -> None:
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
    schema = spec_json_schema()

    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema["title"] == "delta-sync table spec"
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["table", "columns"]
    assert set(schema["properties"]) == {
        "table",
        "comment",
        "columns",
        "checks",
        "partitioned_by",
        "properties",
    }
    assert all(field.get("description") for field in schema["properties"].values())
    column = schema["$defs"]["ColumnSpec"]
    assert column["additionalProperties"] is False
    assert column["required"] == ["name", "type"]
    assert all(field.get("description") for field in column["properties"].values())
    values = schema["properties"]["properties"]["additionalProperties"]
    assert values == {"type": ["string", "boolean", "number"]}
    assert schema["properties"]["checks"]["additionalProperties"] is False
    json.dumps(schema)


def test_schema_example_round_trips(tmp_path: Path) -> None:
    (example,) = spec_json_schema()["examples"]
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

    assert spec_json_schema()["title"] == "delta-sync table spec"
