"""`delta-sync fmt` (delta_sync.specs.fmt): one canonical layout, the same tables, every comment kept with its key.

Every spec shipped in specs/, the documentation's examples (README and docs/) and a sample of the specs the
other tests write are formatted and loaded again: the loader must read the same tables (including the spec-only
column fields that table equality ignores). A Hypothesis property writes specs in random key orders, type spellings and
styles, with comments, and checks the layout is a fixed point and that each comment stays with its key.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_sync.model.errors import DeltaSyncError, SpecError, SpecProblem
from delta_sync.model.state import CatalogState
from delta_sync.specs import fmt, fmt_comments, fmt_layout
from delta_sync.specs.fmt import format_file, format_text, needs_format
from delta_sync.specs.spec_files import load_specs
from delta_sync.specs.spec_models import ColumnSpec, TableSpec
from delta_sync.sql import types as sqltypes
from tests import docs_text

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "specs").rglob("*.yaml"))
README_SPECS = [b for b in re.findall(r"```yaml\n(.*?)```", docs_text.all_text(), re.DOTALL) if b.startswith("table:")]


# --- helpers ------------------------------------------------------------------------------------------


def load(text: str, vars: Mapping[str, str] | None = None) -> tuple[CatalogState, list[Any]]:
    """The tables `text` declares, and the column fields table equality leaves out (spec-only, compare=False)."""
    with tempfile.TemporaryDirectory(prefix="fmt-") as folder:
        (Path(folder) / "spec.yaml").write_text(text, encoding="utf-8")
        state = load_specs(Path(folder), vars)
    spec_only = [
        (table.name, c.name, c.renamed_from, c.backfill, c.using)
        for table in state.tables.values()
        for c in table.columns
    ]
    return state, spec_only


def outcome(text: str, vars: Mapping[str, str] | None = None) -> Any:
    """What the loader makes of `text`: the tables, or the messages of its problems (lines left out)."""
    try:
        return load(text, vars)
    except SpecError as error:
        return sorted(re.sub(r"line \d+", "line N", p.message) for p in error.problems)


def assert_round_trip(text: str, vars: Mapping[str, str] | None = None) -> str:
    """Formats `text`; the loader reads the same tables from both, and the layout is a fixed point."""
    formatted = format_text(text)
    assert load(formatted, vars) == load(text, vars)
    assert format_text(formatted) == formatted
    return formatted


def problem_of(text: str, source: str = "specs/t.yaml") -> SpecProblem:
    with pytest.raises(SpecError) as info:
        format_text(text, source)
    (problem,) = info.value.problems
    return problem


def line_index(lines: list[str], prefix: str) -> int:
    (index,) = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    return index


def comments_above(lines: list[str], index: int) -> list[str]:
    """The run of full-line comments right above line `index`."""
    found = []
    while index > 0 and lines[index - 1].lstrip().startswith("#"):
        index -= 1
        found.append(lines[index].strip())
    return found


# --- the specs that exist ------------------------------------------------------------------------------


def test_the_corpus_is_there() -> None:
    assert len(SHIPPED) >= 4
    assert len(README_SPECS) >= 2


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_specs_are_already_canonical(path: Path) -> None:
    text = path.read_text(encoding="utf-8")

    assert format_text(text, str(path)) == text
    assert not needs_format(path)


def scramble(text: str) -> str:
    """`text` with its top-level keys and each block column's keys in reverse order and its types in
    capitals: what fmt must undo. Lines that start a key keep their end-of-line comments; comment lines
    stay with the key below them."""
    blocks: list[list[str]] = []
    pending: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("#"):
            pending.append(line)
        elif line.startswith(" ") and blocks:
            blocks[-1].append(line)
        else:
            blocks.append([*pending, line])
            pending = []
    out = []
    for block in reversed(blocks):
        if block[0].startswith("columns:"):
            block = [block[0], *scramble_columns(block[1:])]
        out.extend(block)
    return "".join(out) + "".join(pending)


def scramble_columns(lines: list[str]) -> list[str]:
    items: list[list[str]] = []
    for line in lines:
        if line.startswith("  - "):
            items.append(["    " + line[4:]])
        else:
            items[-1].append(line)
    out = []
    for keys in items:
        # (not a struct: its field names are names)
        keys = [re.sub(r"^(    type: )([^\s\"']+)", lambda m: m.group(1) + m.group(2).upper(), k) for k in keys]
        keys.reverse()
        out.extend(["  - " + keys[0][4:], *keys[1:]])
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_specs_come_back_from_any_key_order_and_type_case(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    scrambled = scramble(text)
    assert scrambled != text
    assert load(scrambled) == load(text)

    assert format_text(scrambled) == text


@pytest.mark.parametrize("block", README_SPECS, ids=lambda b: b.split("\n", 1)[0])
def test_readme_specs_are_canonical(block: str) -> None:
    assert format_text(block) == block
    assert format_text(scramble(block)) == block


# A sample of the specs the other tests write (tests/unit and tests/spark), as they write them.
CORPUS = {
    # tests/unit/test_spec.py VALID: aliases, spaced and upper-case types, a quoted struct, YAML booleans
    # and numbers as property values.
    "spec_valid": """\
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
""",
    # tests/unit/test_spec_properties.py VALID_TEXT: flow columns, identity, a numeric default.
    "properties_valid": """\
table: shop.orders
comment: Orders
columns:
  - {name: id, type: bigint, nullable: false, identity: {start: 1, step: 1}}
  - name: amount
    type: decimal(18,2)
    default: 0
  - {name: day, type: date, generated: CAST(created AS DATE)}
  - {name: created, type: timestamp}
checks:
  positive: amount >= 0
partitioned_by: [day]
properties:
  delta.appendOnly: true
""",
    # tests/unit/test_spec_keys.py: both primary-key forms and foreign keys, block and flow.
    "keys": """\
table: shop.orders
columns:
  - name: order_id
    type: bigint
    nullable: false
  - name: customer_id
    type: bigint
  - name: note
    type: string
primary_key:
  name: Orders_PK
  columns: [ORDER_ID]
foreign_keys:
  - columns: [customer_id]
    references: "shop.customers(customer_id)"
  - {columns: [order_id], references: shop.orders(order_id), name: A_self}
""",
    # tests/unit/test_planner_rewrites.py: backfill and using (fields table equality ignores).
    "rewrites": """\
table: s.t
columns:
  - name: id
    type: bigint
  - name: status
    type: string
    nullable: false
    backfill: coalesce(legacy_status, 'new')
  - name: code
    type: int
    using: CAST(regexp_replace(code, '[^0-9]', '') AS int)
""",
    # tests/unit/test_spec.py: odd property values YAML reads as booleans and numbers.
    "odd_properties": """\
table: s.t
columns: [{name: a, type: int}]
properties:
  z.on: yes
  y.off: false
  x.int: 8
  w.float: 1.5
  v.text: "0010"
  u.octal: 0010
  legacy.owner: null
""",
    # tests/spark/test_rewrites.py: a generated column and a layout.
    "generated": """\
table: s.g
columns:
  - name: id
    type: bigint
  - name: twice
    type: bigint
    generated: id * 2
  - name: region
    type: string
clustered_by: [region]
""",
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_specs_load_the_same_after_formatting(name: str) -> None:
    assert_round_trip(CORPUS[name])


def test_spec_with_variables_keeps_them() -> None:
    # tests/unit/test_spec_vars.py: `${suffix}` is filled per environment, `$${x}` is a literal `${x}`.
    text = "columns:\n  - name: id\n    type: BIGINT\n    comment: costs $${x}\ntable: shop.orders${suffix}\n"

    formatted = assert_round_trip(text, {"suffix": "_stg"})

    assert (
        formatted == "table: shop.orders${suffix}\ncolumns:\n  - name: id\n    type: bigint\n    comment: costs $${x}\n"
    )


def test_the_corpus_is_rewritten_where_it_is_not_canonical() -> None:
    formatted = format_text(CORPUS["spec_valid"])

    assert "    type: bigint\n" in formatted
    assert "    type: decimal(18,2)\n" in formatted
    assert "    type: array<string>\n" in formatted
    assert '    type: "struct<street:string,zip:int NOT NULL>"\n' in formatted  # its quotes kept
    assert "partitioned_by: [ORDER_DATE]\n" in formatted
    keys = format_text(CORPUS["keys"])
    assert "primary_key:\n  name: Orders_PK\n  columns: [ORDER_ID]\nforeign_keys:\n" in keys
    assert "  - {columns: [order_id], references: shop.orders(order_id), name: A_self}\n" in keys


# --- the layout ----------------------------------------------------------------------------------------


def test_key_orders_follow_the_readme_and_the_models() -> None:
    assert set(fmt_layout.TABLE_KEYS) == set(TableSpec.model_fields)
    assert (
        tuple(ColumnSpec.model_fields)
        == fmt_layout.COLUMN_KEYS
        == (
            "name",
            "type",
            "nullable",
            "comment",
            "default",
            "generated",
            "identity",
            "renamed_from",
            "backfill",
            "using",
            "lint",
        )
    )
    assert (fmt_layout.IDENTITY_KEYS, fmt_layout.PRIMARY_KEY_KEYS, fmt_layout.FOREIGN_KEY_KEYS) == (
        ("start", "step", "always"),
        ("name", "columns"),
        ("columns", "references", "name"),
    )
    documented = [line.split(":")[0] for line in README_SPECS[0].splitlines() if re.match(r"\w+:", line)]
    assert documented == [key for key in fmt_layout.TABLE_KEYS if key in documented]


def test_keys_are_put_in_canonical_order_unknown_ones_kept_after() -> None:
    text = """\
zeta: 1
properties:
  b: "2"
  a: "1"
foreign_keys:
  - name: fk
    references: s.p(id)
    columns: [id]
primary_key: {columns: [id], name: pk}
clustered_by: [id]
checks:
  z_check: id > 0
  a_check: id < 9
columns:
  - using: CAST(id AS bigint)
    backfill: "0"
    renamed_from: old_id
    identity: {always: false, step: 2, start: 5}
    comment: the key
    nullable: false
    type: long
    name: id
comment: T
alpha: 2
table: s.t
"""
    assert (
        format_text(text)
        == """\
table: s.t
comment: T
columns:
  - name: id
    type: bigint
    nullable: false
    comment: the key
    identity: {start: 5, step: 2, always: false}
    renamed_from: old_id
    backfill: "0"
    using: CAST(id AS bigint)
checks:
  z_check: id > 0
  a_check: id < 9
primary_key: {name: pk, columns: [id]}
foreign_keys:
  - columns: [id]
    references: s.p(id)
    name: fk
clustered_by: [id]
properties:
  b: "2"
  a: "1"
zeta: 1
alpha: 2
"""
    )


def test_unknown_keys_are_kept_and_still_reported() -> None:
    text = "columns: [{name: a, type: int, colour: red}]\ntable: s.t\ntabel: oops\n"

    formatted = format_text(text)

    assert formatted == "table: s.t\ncolumns: [{name: a, type: int, colour: red}]\ntabel: oops\n"
    assert outcome(formatted) == outcome(text)
    assert any("unknown key `tabel`" in m for m in outcome(formatted))


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("BIGINT", "bigint"),
        ("long", "bigint"),
        ("Integer", "int"),
        ("decimal(10, 2)", "decimal(10,2)"),
        ("NUMERIC", "decimal(10,0)"),
        ("timestamp_ltz", "timestamp"),
        ("VARCHAR(20)", "varchar(20)"),
        ("array<array<long>>", "array<array<bigint>>"),
        ("map<string, long>", "map<string,bigint>"),
        ("'STRUCT<a: INT, `b c`: string NOT NULL>'", "'struct<a:int,`b c`:string NOT NULL>'"),
        ("\"struct<a int comment 'x: y'>\"", "\"struct<a:int COMMENT 'x: y'>\""),
        ("int  ", "int"),
        # left as written: not a type, a variable, a number
        ("not a type", "not a type"),
        ("${column_type}", "${column_type}"),
        ("decimal(${p},2)", "decimal(${p},2)"),
        ("5", "5"),
        ("'INT'", "'int'"),
    ],
)
def test_column_types_are_spelled_as_the_loader_reads_them(written: str, canonical: str) -> None:
    text = f"table: s.t\ncolumns:\n  - name: c\n    type: {written}\n"

    formatted = format_text(text)

    assert formatted == f"table: s.t\ncolumns:\n  - name: c\n    type: {canonical}\n"
    assert outcome(formatted, {"column_type": "int", "p": "9"}) == outcome(text, {"column_type": "int", "p": "9"})


def test_a_canonical_type_that_needs_quotes_gets_them() -> None:
    # Plain, the comment's ` #` would start a YAML comment: quoted, it is part of the type.
    text = "table: s.t\ncolumns:\n  - {name: c, type: \"STRUCT<a: INT COMMENT 'a #1'>\"}\n"

    formatted = assert_round_trip(text)

    assert "type: \"struct<a:int COMMENT 'a #1'>\"" in formatted


def test_scalars_keep_their_spelling_and_quotes() -> None:
    text = """\
table: s.t
columns:
  - name: a
    type: int
    comment: 'single ''quoted'''
    default: "'new'"
  - {name: b, type: string, nullable: no, comment: "tab\\tand ${x} and $${y}"}
properties:
  p.yes: yes
  p.octal: 0010
  p.tilde: ~
  p.empty:
  p.big: 1e400
  p.true: True
  p.hex: 0x1F
  p.time: 12:30:00
  p.text: plain text
"""
    formatted = format_text(text)

    assert formatted == text  # already canonical: not one character changed
    assert load(formatted, {"x": "1"}) == load(text, {"x": "1"})


def test_long_lines_are_not_wrapped() -> None:
    long = " ".join(["word"] * 60)
    text = f"table: s.t\ncomment: {long}\ncolumns:\n  - name: a\n    type: int\n    comment: '{long}'\n"

    assert format_text(text) == text


def test_indentation_is_two_spaces_with_items_under_their_key() -> None:
    text = """\
table: s.t
columns:
- name: a
  type: int
  identity:
        start: 1
primary_key:
    name: pk
    columns:
    - a
"""
    assert (
        format_text(text)
        == """\
table: s.t
columns:
  - name: a
    type: int
    identity:
      start: 1
primary_key:
  name: pk
  columns:
    - a
"""
    )


def test_a_multi_line_plain_scalar_becomes_one_line_with_the_same_text() -> None:
    text = "table: s.t\ncomment: a comment\n  that goes on\ncolumns: [{name: a, type: int}]\n"

    formatted = assert_round_trip(text)

    assert formatted == "table: s.t\ncomment: a comment that goes on\ncolumns: [{name: a, type: int}]\n"


def test_block_scalars_stay_block_scalars() -> None:
    text = """\
columns:
  - name: a
    type: int
    comment: |
      Two lines,
      # this one is text, not a comment.
table: s.t
comment: >-
  Folded
  text.
"""
    formatted = assert_round_trip(text)

    assert (
        formatted
        == """\
table: s.t
comment: >-
  Folded
  text.
columns:
  - name: a
    type: int
    comment: |
      Two lines,
      # this one is text, not a comment.
"""
    )


# --- comments -------------------------------------------------------------------------------------------

COMMENTED = """\
# Orders, as the shop writes them.
# Owned by the data team.

# The table's properties: CDF for the downstream feed.
properties:   # TBLPROPERTIES
  delta.enableChangeDataFeed: "true"  # needed by the feed
columns:
  # The key comes first.
  - type: long      # a long is a bigint
    # Never NULL.
    nullable: false
    name: order_id  # surrogate

  # Money.
  - {type: 'decimal(18, 2)', name: amount}  # in euros
checks:
  positive: amount >= 0  # refunds are separate rows
table: shop.orders  # schema.table
# The end.
"""


def test_comments_move_with_their_keys() -> None:
    formatted = format_text(COMMENTED)

    assert (
        formatted
        == """\
# Orders, as the shop writes them.
# Owned by the data team.

table: shop.orders  # schema.table
columns:
  # The key comes first.
  - name: order_id  # surrogate
    type: bigint    # a long is a bigint
    # Never NULL.
    nullable: false

  # Money.
  - {name: amount, type: 'decimal(18,2)'}   # in euros
checks:
  positive: amount >= 0  # refunds are separate rows
# The table's properties: CDF for the downstream feed.
properties:   # TBLPROPERTIES
  delta.enableChangeDataFeed: "true"  # needed by the feed
# The end.
"""
    )
    assert load(formatted) == load(COMMENTED)


def test_every_comment_survives_once() -> None:
    formatted = format_text(COMMENTED)

    def comments(text: str) -> list[str]:
        return sorted(m.group(0).rstrip() for m in re.finditer(r"(?<!\S)#.*", text))

    assert comments(formatted) == comments(COMMENTED)
    lines = formatted.splitlines()
    assert comments_above(lines, line_index(lines, "properties:")) == [
        "# The table's properties: CDF for the downstream feed."
    ]
    assert lines[0] == "# Orders, as the shop writes them."  # the header stays on top
    assert lines[-1] == "# The end."  # and the end at the end


COLUMNS_FIRST = "columns: [{name: a, type: int}]\ntable: s.t\n"


@pytest.mark.parametrize(
    ("text", "formatted"),
    [
        # Right above the first key: the header still, whichever key comes first now.
        (f"# Owned by the sales team\n{COLUMNS_FIRST}", "# Owned by the sales team\ntable: s.t\ncolumns: [{"),
        (
            f"# Owned by the sales team\n# since 2024\n{COLUMNS_FIRST}",
            "# Owned by the sales team\n# since 2024\ntable:",
        ),
        # A blank line between the header and the first key stays too.
        (f"# Owned by the sales team\n\n{COLUMNS_FIRST}", "# Owned by the sales team\n\ntable: s.t\ncolumns: [{"),
        # Below the header's blank line, right above the first key: that key's comment.
        (f"# Owned\n\n# about the columns\n{COLUMNS_FIRST}", "# Owned\n\ntable: s.t\n# about the columns\ncolumns: ["),
        (f"# Owned\n\n# more\n\n# about the columns\n{COLUMNS_FIRST}", "# Owned\n\n# more\n\ntable: s.t\n# about the"),
        (f"\n# about the columns\n{COLUMNS_FIRST}", "table: s.t\n# about the columns\ncolumns: ["),
        # A view's keys move the same way.
        (
            "# Owned by the sales team\nsql: SELECT 1\nview: s.v\n",
            "# Owned by the sales team\nview: s.v\nsql: SELECT 1\n",
        ),
        # A byte order mark (which libyaml's marks do not count) changes none of it.
        (f"\ufeff# Owned by the sales team\n\n{COLUMNS_FIRST}", "# Owned by the sales team\n\ntable: s.t\ncolumns:"),
    ],
)
def test_the_comments_that_start_the_file_stay_on_top(text: str, formatted: str) -> None:
    assert format_text(text).startswith(formatted)
    assert_round_trip(text)


@pytest.mark.parametrize("blank", ["", "\n"])
def test_a_header_above_a_first_key_that_does_not_move_stays_on_top(blank: str) -> None:
    text = f"# Owned by the sales team\n{blank}table: s.t\ncolumns: [{{name: a, type: int}}]\ncomment: T\n"

    formatted = format_text(text)

    assert formatted == f"# Owned by the sales team\n{blank}table: s.t\ncomment: T\ncolumns: [{{name: a, type: int}}]\n"
    assert format_text(formatted) == formatted


def test_comments_inside_a_multi_line_flow_collection_move_above_its_key() -> None:
    text = """\
table: s.t
columns: [
  # the first
  {name: a, type: int},  # a
  {name: b, type: LONG}
]  # two columns
"""
    formatted = assert_round_trip(text)

    assert (
        formatted
        == """\
table: s.t
# the first
# a
columns: [{name: a, type: int}, {name: b, type: bigint}] # two columns
"""
    )


def test_a_commented_flow_item_under_a_commented_key_leaves_the_next_item_whole() -> None:
    # ruamel.yaml alone writes the second item as `- name: b type: int`, which is not YAML.
    text = "table: s.t\ncolumns: # two\n  - {name: a, type: int} # a\n  - name: b\n    type: int\n"

    assert assert_round_trip(text) == text


def test_a_comment_after_a_block_scalar_indicator_moves_above_its_key() -> None:
    text = "table: s.t\ncomment: >-  # folded\n  long\n  text\ncolumns: [{name: a, type: int}]\n"

    assert format_text(text) == "table: s.t\n# folded\ncomment: >-\n  long\n  text\ncolumns: [{name: a, type: int}]\n"


def test_blank_lines_are_kept_one_at_a_time() -> None:
    text = "\n\ntable: s.t\n\n\n\ncolumns:\n\n  - name: a\n    type: int\n\n\n  - name: b\n    type: int\n\n\n"

    assert format_text(text) == "table: s.t\n\ncolumns:\n  - name: a\n    type: int\n\n  - name: b\n    type: int\n"


def test_tabs_between_tokens_are_read_as_the_loader_reads_them() -> None:
    # libyaml (the loader's parser) takes a tab for a space between tokens; ruamel.yaml refuses it.
    text = "table: s.t\t# the name\ncolumns: [{name: a,\ttype: int}]\ncomment:\t'it is'\t\n"

    formatted = assert_round_trip(text)

    assert formatted == "table: s.t # the name\ncomment: 'it is'\ncolumns: [{name: a, type: int}]\n"


def test_a_tab_inside_an_unquoted_value_is_reported() -> None:
    text = "table: s.t\ncolumns: [{name: a, type: int}]\nchecks:\n  c: a >\t0\n"
    assert outcome(text)  # the loader reads it

    problem = problem_of(text)

    assert (problem.line, problem.message) == (4, "fmt cannot read a tab inside an unquoted value")
    assert problem.hint == "quote the value, or use spaces"


def test_a_hash_inside_a_value_is_not_a_comment() -> None:
    text = "table: s.t\ncolumns: [{name: a, type: int}]\nchecks:\n  c: \"a <> '#'\"\n  d: a#b = 1\n"

    assert format_text(text) == text


# --- Hypothesis: any spec, any order ---------------------------------------------------------------------

TYPES = {
    "bigint": ["bigint", "BIGINT", "long", "Long"],
    "int": ["int", "INT", "integer"],
    "string": ["string", "STRING"],
    "decimal(10,2)": ["decimal(10,2)", "DECIMAL(10, 2)", "numeric(10,2)", "dec( 10 , 2 )"],
    "array<string>": ["array<string>", "ARRAY<STRING>", "array< string >"],
    "map<string,int>": ["map<string,int>", "MAP<string, integer>"],
    "struct<a:int,b:string>": ["struct<a:int,b:string>", "STRUCT<a: INT, b: STRING>", "struct<a int, b string>"],
    "timestamp": ["timestamp", "TIMESTAMP_LTZ"],
}
OPTIONAL_TABLE_KEYS = ["comment", "checks", "primary_key", "partitioned_by", "properties"]
OPTIONAL_COLUMN_KEYS = ["nullable", "comment", "default", "identity", "renamed_from", "using"]


def quoted(text: str, style: str, flow: bool = False) -> str:
    """`text` as a YAML scalar in `style` (' or "), or plain when plain reads back as the same text."""
    if style == "'":
        return "'" + text.replace("'", "''") + "'"
    if style == '"':
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    needs_quotes = ": " in text or " #" in text or (flow and any(c in text for c in ",[]{}"))
    return quoted(text, "'") if needs_quotes else text


@dataclass
class Drawn:
    text: str
    pre: dict[tuple[str, ...], str]  # a key -> the comment written right above it
    eol: dict[tuple[str, ...], str]  # a key -> the comment written after it on its line
    first_keys: set[tuple[str, ...]]  # column keys written first in their item
    types: list[str]  # each column's canonical type


@st.composite
def specs(draw: st.DrawFn) -> Drawn:
    """A spec (mostly valid) in random key orders, subsets of optional keys, type spellings, quoting,
    flow or block columns, with comments above and after keys (each naming its key) and blank lines."""
    pre: dict[tuple[str, ...], str] = {}
    eol: dict[tuple[str, ...], str] = {}
    first_keys: set[tuple[str, ...]] = set()
    types: list[str] = []

    def commented(key: tuple[str, ...], entry: str) -> str:
        """`entry` (a key and its value, without the last line break), with the comments drawn for it."""
        line, *rest = entry.split("\n")
        indent = line[: len(line) - len(line.lstrip(" -"))].replace("-", " ")
        above = ""
        if draw(st.booleans()):
            above = ("\n" if draw(st.booleans()) and len(key) == 1 else "") + f"{indent}# about {'.'.join(key)}\n"
            pre[key] = f"# about {'.'.join(key)}"
        if draw(st.booleans()):
            line += " " * draw(st.integers(1, 3)) + f"# eol {'.'.join(key)}"
            eol[key] = f"# eol {'.'.join(key)}"
        return above + "\n".join([line, *rest]) + "\n"

    table_keys = ["table", "columns", *draw(st.lists(st.sampled_from(OPTIONAL_TABLE_KEYS), unique=True))]
    count = draw(st.integers(2 if "partitioned_by" in table_keys else 1, 3))
    columns = []
    for i in range(count):
        canonical = draw(st.sampled_from(sorted(TYPES)))
        types.append(canonical)
        flow = draw(st.booleans())
        written = draw(st.sampled_from(TYPES[canonical]))
        entries = {"name": f"c{i}", "type": quoted(written, draw(st.sampled_from(["", "'", '"'])), flow)}
        for key in draw(st.lists(st.sampled_from(OPTIONAL_COLUMN_KEYS), unique=True)):
            entries[key] = {
                "nullable": "false",
                "comment": quoted("a: column", draw(st.sampled_from(["'", '"']))),
                "default": "0",
                "identity": "{" + ", ".join(draw(st.permutations(["start: 1", "step: 2", "always: false"]))) + "}",
                "renamed_from": f"old_c{i}",
                "using": quoted(f"CAST(c{i} AS {canonical})", "'"),
            }[key]
        if i == 0 and "primary_key" in table_keys:
            entries["nullable"] = "false"
        if canonical != "int":
            entries.pop("default", None)
        if canonical != "bigint":
            entries.pop("identity", None)
        if "identity" in entries:
            entries.pop("using", None)
        order = draw(st.permutations(list(entries)))
        if flow:
            columns.append(commented((f"c{i}",), "  - {" + ", ".join(f"{k}: {entries[k]}" for k in order) + "}"))
        else:
            first_keys.add((f"c{i}", order[0]))
            lines = [f"{'  - ' if j == 0 else '    '}{k}: {entries[k]}" for j, k in enumerate(order)]
            columns.append("".join(commented((f"c{i}", k), line) for k, line in zip(order, lines, strict=True)))
    top = {
        "table": "s.t${suffix}",
        "columns": "\n" + "".join(columns).rstrip("\n"),
        "comment": quoted("Orders: all of them", draw(st.sampled_from(["'", '"']))),
        "checks": "\n  c0_known: c0 IS NOT NULL",
        "primary_key": draw(st.sampled_from(["[c0]", "{columns: [c0], name: pk}", "\n  columns: [c0]\n  name: pk"])),
        "partitioned_by": f"[c{count - 1}]",
        "properties": "\n  delta.appendOnly: true\n  x.y: ${suffix}",
        "unknown_key": "kept",
    }
    if draw(st.integers(0, 9)) == 9:  # rarely: the loader refuses it, fmt keeps it
        table_keys.append("unknown_key")
    order = draw(st.permutations(table_keys))
    body = "".join(commented((key,), f"{key}: {top[key]}".replace(": \n", ":\n", 1)) for key in order)
    header = "# A header.\n\n" if draw(st.booleans()) else ""
    return Drawn(header + body, pre, eol, first_keys, types)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(specs())
def test_any_spec_formats_to_a_fixed_point_with_its_comments_in_place(drawn: Drawn) -> None:
    formatted = format_text(drawn.text)

    assert format_text(formatted) == formatted
    vars = {"suffix": "_x"}
    assert outcome(formatted, vars) == outcome(drawn.text, vars)
    data = yaml.safe_load(formatted)
    assert [k for k in data if k in fmt_layout.TABLE_KEYS] == [k for k in fmt_layout.TABLE_KEYS if k in data]
    for column, canonical in zip(data["columns"], drawn.types, strict=True):
        assert list(column) == [k for k in fmt_layout.COLUMN_KEYS if k in column]
        assert column["type"] == canonical == sqltypes.parse_type(column["type"])
    lines = formatted.splitlines()
    for key, comment in drawn.pre.items():
        if drawn.text.startswith(comment):
            # No blank line sets it apart from the file's top: the file's header, it stays there.
            assert lines[0] == comment, formatted
            continue
        # Comment lines right above a `- ` line are about the item, whichever key was first in it.
        line = key_line(lines, key[:1] if key in drawn.first_keys else key)
        assert comment in comments_above(lines, line), (key, formatted)
    for key, comment in drawn.eol.items():
        assert lines[key_line(lines, key)].endswith(comment), (key, formatted)
    if drawn.text.startswith("# A header.\n\n"):
        assert formatted.startswith("# A header.\n\n")


def key_line(lines: list[str], key: tuple[str, ...]) -> int:
    """The line of a top-level key, of a column's item (its `- name:` line), or of a key of a column."""
    if key[0] in (*fmt_layout.TABLE_KEYS, "unknown_key"):
        return line_index(lines, f"{key[0]}:")
    item = next(i for i, line in enumerate(lines) if re.match(rf"  - (\{{)?name: {key[0]}\b", line))
    if len(key) == 1 or key[1] == "name":
        return item
    end = next((i for i in range(item + 1, len(lines)) if not lines[i].startswith("    ")), len(lines))
    return next(i for i in range(item + 1, end) if lines[i].startswith(f"    {key[1]}:"))


# --- files: format_file and needs_format (--check) --------------------------------------------------------


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Problems name files relative to the working directory.
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_format_file_rewrites_only_what_is_not_canonical(in_tmp: Path) -> None:
    messy = in_tmp / "messy.yaml"
    messy.write_text(COMMENTED, encoding="utf-8")
    messy.chmod(0o640)
    tidy = in_tmp / "tidy.yaml"
    tidy.write_text(format_text(COMMENTED), encoding="utf-8")
    before = tidy.stat()

    assert needs_format(messy)
    assert messy.read_text(encoding="utf-8") == COMMENTED  # --check changes nothing
    assert not needs_format(tidy)

    assert format_file(messy)
    assert not format_file(tidy)

    assert messy.read_text(encoding="utf-8") == format_text(COMMENTED)
    assert stat.S_IMODE(messy.stat().st_mode) == 0o640
    assert not needs_format(messy)
    assert not format_file(messy)
    assert (tidy.stat().st_ino, tidy.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not touched
    assert sorted(p.name for p in in_tmp.iterdir()) == ["messy.yaml", "tidy.yaml"]  # no temporary file left


def test_format_file_keeps_a_symlink_a_symlink(in_tmp: Path) -> None:
    target = in_tmp / "real.yaml"
    target.write_text("columns: [{name: a, type: LONG}]\ntable: s.t\n", encoding="utf-8")
    link = in_tmp / "link.yaml"
    link.symlink_to(target)

    assert format_file(link)

    assert link.is_symlink()
    assert target.read_text(encoding="utf-8") == "table: s.t\ncolumns: [{name: a, type: bigint}]\n"


def test_line_endings_become_line_feeds(in_tmp: Path) -> None:
    path = in_tmp / "crlf.yaml"
    path.write_bytes(b"table: s.t\r\ncolumns: [{name: a, type: int}]\r\n")

    assert needs_format(path)
    assert format_file(path)

    assert path.read_bytes() == b"table: s.t\ncolumns: [{name: a, type: int}]\n"


def test_a_bad_file_is_reported_at_its_line_and_left_alone(in_tmp: Path) -> None:
    path = in_tmp / "bad.yaml"
    text = "table: s.t\ncolumns:\n  - name: a\n    type: [int\n"
    path.write_text(text, encoding="utf-8")

    for attempt in (format_file, needs_format):
        with pytest.raises(SpecError) as info:
            attempt(path)
        (problem,) = info.value.problems
        assert (problem.file, problem.line) == ("bad.yaml", 5)
        assert problem.message.startswith("invalid YAML: ")
        assert str(problem).startswith("bad.yaml:5: invalid YAML: ")
    assert path.read_text(encoding="utf-8") == text


def test_a_file_that_is_not_utf8_is_reported(in_tmp: Path) -> None:
    path = in_tmp / "latin.yaml"
    path.write_bytes(b"table: s.t\ncomment: caf\xe9\n")

    with pytest.raises(SpecError) as info:
        needs_format(path)

    assert info.value.problems == (SpecProblem("latin.yaml", 2, "file is not UTF-8 (byte 0xe9)", "save it as UTF-8"),)


# --- errors at file:line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("", 1, "file is empty"),
        ("# nothing but a comment\n", 1, "file is empty"),
        ("- table: s.t\n", 1, "top level must be a mapping, got list"),
        ("just text\n", 1, "top level must be a mapping, got string"),
        ("table: s.t\ncolumns: [\n", 3, "invalid YAML: "),
        ("table: s.t\ncolumns:\n  - name: a\n   type: int\n", 4, "invalid YAML: "),
        ("table: s.t\ncomment: x\ncomment: y\n", 3, "key `comment` appears twice (first at line 2)"),
        ("table: s.t\ncolumns:\n  - &col {name: a, type: int}\n", 3, "YAML anchors and aliases are not supported"),
        ("table: s.t\ncolumns:\n  - name: a\n    <<: {type: int}\n", 4, "`<<` merge keys are not supported"),
        ("table: s.t\n[a]: b\n", 2, "a key must be plain text"),
        ("table: s.t\nproperties: !!set {a}\n", 2, "unsupported YAML tag"),
        ("table: s.t\ncomment: 2001-02-30\n", 2, "`2001-02-30` cannot be read as timestamp"),
    ],
)
def test_what_cannot_be_read_is_an_error_at_its_line(text: str, line: int, message: str) -> None:
    problem = problem_of(text)

    assert (problem.file, problem.line) == ("specs/t.yaml", line)
    assert problem.message.startswith(message), problem


def test_fmt_refuses_to_write_what_would_change_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    real = fmt_layout._canonicalise

    def losing(data: Any) -> None:
        real(data)
        del data["checks"]

    monkeypatch.setattr(fmt, "_canonicalise", losing)

    problem = problem_of("table: s.t\ncolumns: [{name: a, type: int}]\nchecks:\n  c: a > 0\n")

    assert (problem.line, problem.message) == (3, "fmt would change what this entry means")


def test_fmt_refuses_to_write_what_would_lose_a_comment(monkeypatch: pytest.MonkeyPatch) -> None:
    real = fmt_comments._attach

    def forgetting(data: Any, anchors: Any, header: list[str], end: list[str]) -> None:
        real(data, anchors, header, [])

    monkeypatch.setattr(fmt, "_attach", forgetting)

    problem = problem_of("table: s.t\ncolumns: [{name: a, type: int}]\n# the end\n")

    assert (problem.line, problem.message) == (3, "fmt would lose this comment")


def test_the_default_source_names_the_text() -> None:
    with pytest.raises(SpecError) as info:
        format_text("a: [\n")

    assert str(info.value.problems[0]).startswith("<spec>:2: invalid YAML: ")


def test_writing_leaves_no_temporary_file_when_it_fails(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = in_tmp / "t.yaml"
    path.write_text("columns: [{name: a, type: int}]\ntable: s.t\n", encoding="utf-8")

    def failing(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", failing)

    with pytest.raises(DeltaSyncError, match=r"t\.yaml: cannot rewrite the file: Permission denied"):
        format_file(path)

    assert sorted(p.name for p in in_tmp.iterdir()) == ["t.yaml"]
    assert path.read_text(encoding="utf-8") == "columns: [{name: a, type: int}]\ntable: s.t\n"
