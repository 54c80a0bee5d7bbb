"""`delta-sync lint` without a JVM: every rule with a spec that passes and one that fails at its line, errors
against warnings and the exit codes, a spec turning rules off, the configuration's problems at their lines, the
JSON output, the example project, and an environment's `deny:` refusing an `--allow` on the command line and
in the library alike."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import delta_sync
from delta_sync.cli import main as cli
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState
from delta_sync.planning.diff.planner import plan
from delta_sync.review import environments
from delta_sync.specs import fmt_layout, lint_rules
from delta_sync.specs.fmt import format_text
from delta_sync.specs.lint import lint
from delta_sync.specs.project_file import load_project
from delta_sync.specs.spec_files import load_specs, spec_documents
from delta_sync.specs.spec_models import COLUMN_LINT_RULES, TableSpec
from delta_sync.specs.spec_values import LINT_RULES
from tests import docs_text

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
# The documentation's text (README and docs/), and the page that documents lint and deny.
README = docs_text.all_text()
LINT_PAGE = docs_text.page("lint-and-policy.md")

GOOD = """\
table: shop.orders
comment: Orders placed in the web shop
columns:
  - name: order_id
    type: bigint
    nullable: false
    comment: Surrogate key
  - name: customer_id
    type: bigint
    comment: Who placed it
  - name: total_amount
    type: decimal(18,2)
    comment: What it costs
primary_key: [order_id]
foreign_keys:
  - columns: [customer_id]
    references: shop.customers(customer_id)
properties:
  delta.enableChangeDataFeed: "true"
  owner.team: sales
"""


def project(root: Path, config: str, *specs: tuple[str, str]) -> Path:
    """A project in `root`: delta-sync.yaml holding `config`, and spec files (name, text) under specs/."""
    (root / "delta-sync.yaml").write_text(textwrap.dedent(config))
    folder = root / "specs"
    folder.mkdir(exist_ok=True)
    for name, text in specs:
        (folder / name).write_text(text)
    return folder


def run(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    monkeypatch.chdir(root)
    return runner.invoke(cli.app, ["lint", *args])


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# --- every rule: a spec that passes, a spec that fails at its line ------------------------------------------

# (id, lint: section, the failing spec, the finding it gives)
RULES = [
    pytest.param(
        "table-comment: error",
        edit(GOOD, "comment: Orders placed in the web shop\n", ""),
        "specs/t.yaml:1: error table-comment: table `shop.orders` has no comment",
        id="table-comment missing",
    ),
    pytest.param(
        "table-comment: error",
        edit(GOOD, "comment: Orders placed in the web shop", 'comment: "  "'),
        "specs/t.yaml:2: error table-comment: table `shop.orders` has no comment",
        id="table-comment empty",
    ),
    pytest.param(
        "column-comment: warning",
        edit(GOOD, "    comment: Who placed it\n", ""),
        "specs/t.yaml:8: warning column-comment: column `customer_id` has no comment",
        id="column-comment",
    ),
    pytest.param(
        "primary-key: error",
        edit(GOOD, "primary_key: [order_id]\n", ""),
        "specs/t.yaml:1: error primary-key: table `shop.orders` declares no primary key (primary_key:)",
        id="primary-key",
    ),
    pytest.param(
        "schema-name: {pattern: '[a-z][a-z0-9_]*'}",
        edit(GOOD, "table: shop.orders", "table: Shop.orders"),
        "specs/t.yaml:1: error schema-name: schema `Shop` does not match `[a-z][a-z0-9_]*`",
        id="schema-name",
    ),
    pytest.param(
        "table-name: {pattern: '[a-z]+(_[a-z]+)*', level: warning}",
        edit(GOOD, "table: shop.orders", "table: shop.orders2"),
        "specs/t.yaml:1: warning table-name: table `orders2` does not match `[a-z]+(_[a-z]+)*`",
        id="table-name",
    ),
    pytest.param(
        "column-name: {pattern: '[a-z][a-z0-9_]*'}",
        edit(GOOD, "  - name: customer_id\n", "  - name: customerId\n").replace(
            "columns: [customer_id]", "columns: [customerId]"
        ),
        "specs/t.yaml:8: error column-name: column `customerId` does not match `[a-z][a-z0-9_]*`",
        id="column-name",
    ),
    pytest.param(
        "required-properties: {properties: {delta.enableChangeDataFeed: true}}",
        edit(GOOD, '  delta.enableChangeDataFeed: "true"\n', ""),
        "specs/t.yaml:18: error required-properties: property `delta.enableChangeDataFeed` is not set; "
        'it must be "true"',
        id="required-properties missing",
    ),
    pytest.param(
        "required-properties: {properties: {delta.enableChangeDataFeed: true}}",
        edit(GOOD, 'delta.enableChangeDataFeed: "true"', 'delta.enableChangeDataFeed: "false"'),
        'specs/t.yaml:19: error required-properties: property `delta.enableChangeDataFeed` is "false"; '
        'it must be "true"',
        id="required-properties wrong value",
    ),
    pytest.param(
        "required-properties: {properties: {owner.team: null}, level: warning}",
        GOOD.split("properties:")[0],
        "specs/t.yaml:1: warning required-properties: property `owner.team` is not set; it must be set",
        id="required-properties any value, no properties at all",
    ),
    pytest.param(
        """\
        forbidden-types:
          - {types: [float, double], columns: "(amount|price|cost)", instead: "decimal(18,2)"}
        """,
        edit(GOOD, "type: decimal(18,2)", "type: double"),
        "specs/t.yaml:12: error forbidden-types: column `total_amount` is double, not allowed for columns matching "
        "`(amount|price|cost)`; use decimal(18,2)",
        id="forbidden-types by name",
    ),
    pytest.param(
        "forbidden-types: [{types: [string], in: primary-key}]",
        edit(GOOD, "type: bigint\n    nullable: false", "type: string\n    nullable: false"),
        "specs/t.yaml:5: error forbidden-types: column `order_id` is string, not allowed in a primary key",
        id="forbidden-types in a key",
    ),
    pytest.param(
        "forbidden-types: [{types: [double], columns: AMOUNT, level: warning}]",
        edit(GOOD, "type: decimal(18,2)", "type: array<struct<net:double>>"),
        "specs/t.yaml:12: warning forbidden-types: column `total_amount` is array<struct<net:double>> (it holds "
        "double), not allowed for columns matching `AMOUNT`",
        id="forbidden-types nested, any case",
    ),
    pytest.param(
        "forbidden-types: [{types: [decimal], in: [primary-key, foreign-key]}]",
        edit(GOOD, "  - name: customer_id\n    type: bigint", "  - name: customer_id\n    type: decimal(20,0)"),
        "specs/t.yaml:9: error forbidden-types: column `customer_id` is decimal(20,0), not allowed in a primary or "
        "foreign key",
        id="forbidden-types a family, in either key",
    ),
]


@pytest.mark.parametrize(("config", "failing", "finding"), RULES)
def test_a_rule_passes_the_good_spec_and_finds_the_bad_one_at_its_line(
    config: str, failing: str, finding: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = "lint:\n" + textwrap.indent(textwrap.dedent(config), "  ")
    project(tmp_path, section, ("t.yaml", GOOD))
    passed = run(tmp_path, monkeypatch)
    assert passed.exit_code == 0, passed.output
    assert passed.stdout == ""
    assert "1 table spec: no findings (1 rule)." in passed.stderr

    (tmp_path / "specs" / "t.yaml").write_text(failing)
    failed = run(tmp_path, monkeypatch)
    assert failed.stdout.splitlines() == [finding]
    level = finding.split(": ")[1].split()[0]
    assert failed.exit_code == (3 if level == "error" else 0), failed.output
    assert f"1 {level}" in failed.stderr


def test_every_rule_has_its_settings_and_its_check() -> None:
    # `rules:` names the team's Python rules (tests/unit/test_custom_rules.py), not a rule of its own.
    aliases = [field.alias for name, field in lint_rules.LintSettings.model_fields.items() if name != "rules"]
    assert tuple(lint_rules.RULES) == LINT_RULES == tuple(aliases)
    for name, (field, check) in lint_rules.RULES.items():
        assert lint_rules.LintSettings.model_fields[field].alias == name
        assert check.__name__ == field


# --- errors against warnings, the summary and the exit codes --------------------------------------------------

CONFIG = """\
lint:
  table-comment: error
  column-comment: warning
"""


def test_warnings_alone_exit_0_and_an_error_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warned = edit(GOOD, "    comment: Who placed it\n", "")
    project(tmp_path, CONFIG, ("a.yaml", warned), ("b.yaml", warned.replace("shop.orders", "shop.orders_b")))
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "specs/a.yaml:8: warning column-comment: column `customer_id` has no comment",
        "specs/b.yaml:8: warning column-comment: column `customer_id` has no comment",
    ]
    assert result.stderr.strip() == "0 errors, 2 warnings in 2 table specs."

    (tmp_path / "specs" / "b.yaml").write_text(
        edit(warned, "comment: Orders placed in the web shop\n", "").replace("shop.orders", "shop.orders_b")
    )
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 3, result.output
    assert result.stdout.splitlines() == [
        "specs/a.yaml:8: warning column-comment: column `customer_id` has no comment",
        "specs/b.yaml:1: error table-comment: table `shop.orders_b` has no comment",
        "specs/b.yaml:7: warning column-comment: column `customer_id` has no comment",
    ]
    assert result.stderr.strip() == "1 error, 2 warnings in 2 table specs."


def test_findings_are_sorted_by_file_and_line_across_the_paths_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = "table: s.{name}\ncolumns:\n  - name: a\n    type: int\n  - name: b\n    type: int\n"
    project(tmp_path, CONFIG, ("z.yaml", bare.format(name="z")), ("a.yaml", bare.format(name="a")))
    result = run(tmp_path, monkeypatch, "specs/z.yaml", "specs", "specs/a.yaml")
    assert result.exit_code == 3, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 6  # each file once, however often it was named
    assert lines == sorted(lines, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))
    assert lines[0] == "specs/a.yaml:1: error table-comment: table `s.a` has no comment"


def test_json_gives_the_same_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, CONFIG, ("t.yaml", edit(GOOD, "comment: Orders placed in the web shop\n", "")))
    text = run(tmp_path, monkeypatch)
    result = run(tmp_path, monkeypatch, "--format", "json")
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data == {
        "findings": [
            {
                "file": "specs/t.yaml",
                "line": 1,
                "level": "error",
                "rule": "table-comment",
                "message": "table `shop.orders` has no comment",
            }
        ],
        "summary": {"errors": 1, "warnings": 0, "tables": 1, "views": 0, "rules": 2},
    }
    assert [f"{f['file']}:{f['line']}: {f['level']} {f['rule']}: {f['message']}" for f in data["findings"]] == (
        text.stdout.splitlines()
    )


def test_without_a_lint_section_nothing_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "t.yaml").write_text("table: s.t\ncolumns: [{name: a, type: double}]\n")
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "no lint rules (add a `lint:` section to delta-sync.yaml" in result.stderr


def test_tombstones_are_not_linted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(
        tmp_path,
        CONFIG,
        ("t.yaml", GOOD),
        ("d.yaml", "table: shop.old_orders\ndrop: true\n"),
        ("w.yaml", "view: shop.old_view\ndrop: true\n"),
    )
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert "1 table spec: no findings (2 rules)." in result.stderr


# --- views: the rules of comments and names ----------------------------------------------------------------------

VIEW = """\
view: shop.open_orders
comment: Orders not yet shipped
sql: SELECT order_id, total_amount FROM shop.orders
columns:
  - {name: order_id}
  - {name: total_amount}
"""

EVERY_RULE = """\
lint:
  table-comment: error
  column-comment: error
  primary-key: error
  schema-name: {pattern: "[a-z]+"}
  table-name: {pattern: "[a-z_]+"}
  column-name: {pattern: "[a-z_]+"}
  required-properties: {properties: {owner.team: null}}
  forbidden-types: [{types: [double]}]
"""


@pytest.mark.parametrize(
    ("failing", "findings"),
    [
        (
            edit(VIEW, "comment: Orders not yet shipped\n", ""),
            ["specs/v.yaml:1: error table-comment: view `shop.open_orders` has no comment"],
        ),
        (
            edit(VIEW, "comment: Orders not yet shipped", 'comment: ""'),
            ["specs/v.yaml:2: error table-comment: view `shop.open_orders` has no comment"],
        ),
        (
            edit(VIEW, "view: shop.open_orders", "view: Shop.OpenOrders"),
            [
                "specs/v.yaml:1: error schema-name: schema `Shop` does not match `[a-z]+`",
                "specs/v.yaml:1: error table-name: view `OpenOrders` does not match `[a-z_]+`",
            ],
        ),
        (
            edit(VIEW, "{name: total_amount}", "{name: totalAmount}"),
            ["specs/v.yaml:6: error column-name: column `totalAmount` does not match `[a-z_]+`"],
        ),
    ],
    ids=["no comment", "empty comment", "names", "a listed column's name"],
)
def test_a_view_gets_the_rules_of_comments_and_names_and_no_other(
    failing: str, findings: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The good view passes every rule: a view has no key, no properties, no types and no comments of its own
    # columns to ask for.
    project(tmp_path, EVERY_RULE, ("t.yaml", GOOD), ("v.yaml", VIEW))
    passed = run(tmp_path, monkeypatch)
    assert passed.stdout == "", passed.output
    assert "1 table spec and 1 view spec: no findings (8 rules)." in passed.stderr

    (tmp_path / "specs" / "v.yaml").write_text(failing)
    failed = run(tmp_path, monkeypatch)
    assert failed.exit_code == 3, failed.output
    assert failed.stdout.splitlines() == findings


def test_a_view_without_columns_listed_has_no_column_names_to_check(tmp_path: Path) -> None:
    (tmp_path / "v.yaml").write_text("view: s.v\ncomment: c\nsql: SELECT camelCase FROM s.t\n")
    settings = lint_rules.LintSettings.model_validate({"column-name": {"pattern": "[a-z]+"}})

    report = lint(spec_documents([tmp_path / "v.yaml"]), settings)

    assert (report.findings, report.tables, report.views) == ((), 0, 1)
    assert report.summary() == "1 view spec: no findings (1 rule)."
    assert report.to_json()["summary"] == {"errors": 0, "warnings": 0, "tables": 0, "views": 1, "rules": 1}


def test_every_view_rule_is_a_rule_with_its_settings() -> None:
    assert set(lint_rules.VIEW_RULES) <= set(lint_rules.RULES)
    assert set(COLUMN_LINT_RULES) <= set(lint_rules.RULES)
    for name, check in lint_rules.VIEW_RULES.items():
        assert lint_rules.RULES[name][1].__name__ == check.__name__


def test_names_are_linted_as_the_environment_makes_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = """\
    default_env: dev
    envs:
      dev: {vars: {suffix: _dev}}
      ci: {vars: {suffix: _CI}}
    lint:
      table-name: {pattern: "[a-z_]+"}
    """
    project(tmp_path, config, ("t.yaml", edit(GOOD, "table: shop.orders", "table: shop.orders${suffix}")))
    assert run(tmp_path, monkeypatch).exit_code == 0
    result = run(tmp_path, monkeypatch, "--env", "ci")
    assert result.exit_code == 3, result.output
    assert result.stdout == "specs/t.yaml:1: error table-name: table `orders_CI` does not match `[a-z_]+`\n"


# --- turning rules off in a spec ---------------------------------------------------------------------------------


def test_a_spec_turns_rules_off_for_its_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = CONFIG + "  primary-key: error\n"
    bare = "table: s.legacy\ncolumns:\n  - name: a\n    type: int\n"
    project(tmp_path, config, ("legacy.yaml", bare), ("other.yaml", bare.replace("s.legacy", "s.other")))
    before = run(tmp_path, monkeypatch)
    assert before.exit_code == 3
    assert [line.split(": ")[0] for line in before.stdout.splitlines()] == ["specs/legacy.yaml:1"] * 2 + [
        "specs/legacy.yaml:3"
    ] + ["specs/other.yaml:1"] * 2 + ["specs/other.yaml:3"]

    disabled = bare + "lint:\n  disable: [primary-key, column-comment]   # keyed upstream; comments to come\n"
    (tmp_path / "specs" / "legacy.yaml").write_text(disabled)
    after = run(tmp_path, monkeypatch)
    assert after.exit_code == 3
    assert [line for line in after.stdout.splitlines() if "legacy" in line] == [
        "specs/legacy.yaml:1: error table-comment: table `s.legacy` has no comment"
    ]
    assert len(after.stdout.splitlines()) == 4  # other.yaml still has its three


COLUMNS = """\
table: s.legacy
comment: From the old system
columns:
  - name: id
    type: string
    nullable: false
    comment: Upstream key
    lint:
      disable: [forbidden-types]   # the upstream system keys by text
  - name: LegacyCode
    type: string
    lint: {disable: [column-name, column-comment]}
  - name: note
    type: string
primary_key: [id]
"""


def test_a_column_turns_column_rules_off_for_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = CONFIG + "  column-name: {pattern: '[a-z_]+'}\n  forbidden-types: [{types: [string], in: primary-key}]\n"
    project(tmp_path, config, ("legacy.yaml", COLUMNS))
    result = run(tmp_path, monkeypatch)
    # Only the column that turns nothing off is found; the table's own rules still run.
    assert result.stdout.splitlines() == ["specs/legacy.yaml:13: warning column-comment: column `note` has no comment"]
    assert result.exit_code == 0, result.output

    bare = COLUMNS.replace("    lint:\n      disable: [forbidden-types]   # the upstream system keys by text\n", "")
    (tmp_path / "specs" / "legacy.yaml").write_text(
        bare.replace("    lint: {disable: [column-name, column-comment]}\n", "")
    )
    result = run(tmp_path, monkeypatch)
    assert [line.split(": ")[1] for line in result.stdout.splitlines()] == [
        "error forbidden-types",
        "warning column-comment",
        "error column-name",
        "warning column-comment",
    ], result.output


@pytest.mark.parametrize(
    ("key", "line", "message"),
    [
        (
            "    lint: {disable: [column-coment]}\n",
            12,
            "column `LegacyCode`: `column-coment` is not a lint rule (did you mean `column-comment`?",
        ),
        (
            "    lint:\n      disable:\n        - column-name\n        - primary-key\n",
            15,
            "column `LegacyCode`: `primary-key` is a rule of the whole table, which a column cannot turn off (turn "
            "it off for the table with `lint: {disable: [primary-key]}` at the file's top level; a column turns off "
            "column-comment, column-name, forbidden-types)",
        ),
    ],
    ids=["unknown", "a table rule"],
)
def test_a_rule_a_column_cannot_turn_off_is_a_problem_at_its_line(
    key: str, line: int, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = COLUMNS.replace("    lint: {disable: [column-name, column-comment]}\n", key)
    project(tmp_path, CONFIG, ("legacy.yaml", text))
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert f"specs/legacy.yaml:{line}: {message}" in result.stderr, result.stderr
    validated = runner.invoke(cli.app, ["validate"])
    assert validated.exit_code == 1
    assert f"specs/legacy.yaml:{line}:" in validated.stderr


def test_the_plan_and_fmt_keep_a_column_s_lint_key(tmp_path: Path) -> None:
    keyed = edit(
        GOOD, "    comment: Who placed it\n", "    comment: Who placed it\n    lint: {disable: [column-name]}\n"
    )
    # The column's last key, as the file's own `lint:` is the file's.
    unordered = edit(GOOD, "  - name: customer_id\n", "  - lint: {disable: [column-name]}\n    name: customer_id\n")
    assert format_text(unordered) == keyed
    (tmp_path / "plain").mkdir()
    (tmp_path / "keyed").mkdir()
    (tmp_path / "plain" / "t.yaml").write_text(GOOD)
    (tmp_path / "keyed" / "t.yaml").write_text(keyed)
    plain = load_specs(tmp_path / "plain")
    current = CatalogState(plain.tables, frozenset(name.schema_name for name in plain.tables))
    assert plan(current, load_specs(tmp_path / "keyed")).is_empty
    column = TableSpec.model_json_schema()["$defs"]["ColumnSpec"]["properties"]["lint"]
    assert column["anyOf"][0] == {"$ref": "#/$defs/ColumnLintSpec"}


def test_required_properties_count_the_project_defaults_and_not_an_opt_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = """\
    defaults:
      delta.enableChangeDataFeed: TRUE
      owner.team: data
    envs:
      local: {}
      dev:
        defaults: {delta.enableChangeDataFeed: "false"}
    lint:
      required-properties:
        properties: {delta.enableChangeDataFeed: "true", owner.team: null}
    """
    bare = GOOD.split("properties:")[0]
    opted = bare + "properties:\n  owner.team: sales\n  delta.enableChangeDataFeed: null   # no feed here\n"
    project(tmp_path, config, ("bare.yaml", bare.replace("shop.orders", "shop.bare")), ("opted.yaml", opted))

    found = run(tmp_path, monkeypatch)  # bare.yaml gets both from the defaults: only the opt-out is found
    assert found.stdout.splitlines() == [
        "specs/opted.yaml:20: error required-properties: property `delta.enableChangeDataFeed` is not set (the spec "
        'opts out of the project\'s default); it must be "true"'
    ], found.output
    assert found.exit_code == 3

    dev = run(tmp_path, monkeypatch, "--env", "dev")  # dev's default is off: bare.yaml gets it so
    assert dev.stdout.splitlines()[0] == (
        'specs/bare.yaml:1: error required-properties: property `delta.enableChangeDataFeed` is "false" (from the '
        'project\'s defaults:); it must be "true"'
    ), dev.output


def test_the_plan_ignores_the_lint_key(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "keyed").mkdir()
    (tmp_path / "plain" / "t.yaml").write_text(GOOD)
    (tmp_path / "keyed" / "t.yaml").write_text(GOOD + "lint: {disable: [primary-key]}\n")
    plain = load_specs(tmp_path / "plain")
    keyed = load_specs(tmp_path / "keyed")
    current = CatalogState(plain.tables, frozenset(name.schema_name for name in plain.tables))
    assert plan(current, keyed).is_empty


def test_an_unknown_rule_to_disable_is_a_problem_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, CONFIG, ("t.yaml", GOOD + "lint:\n  disable:\n    - table-coment\n"))
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert "specs/t.yaml:23: `table-coment` is not a lint rule (did you mean `table-comment`?" in result.stderr
    validated = runner.invoke(cli.app, ["validate"])
    assert validated.exit_code == 1
    assert "specs/t.yaml:23:" in validated.stderr


def test_fmt_keeps_the_lint_key_and_its_comment_last() -> None:
    text = "lint:  # reviewed 2025-11\n  disable: [primary-key]\n" + GOOD
    formatted = format_text(text)
    assert formatted == GOOD + "lint:  # reviewed 2025-11\n  disable: [primary-key]\n"
    assert format_text(formatted) == formatted
    assert fmt_layout.TABLE_KEYS[-1] == "lint"
    assert TableSpec.model_json_schema()["properties"]["lint"]["anyOf"][0] == {"$ref": "#/$defs/LintSpec"}


# --- the configuration's problems, at their lines -------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "line", "message"),
    [
        ("lint:\n  table-coment: error\n", 2, "unknown key `table-coment` (did you mean `table-comment`?"),
        ("lint:\n  column-comment: eror\n", 2, "`eror` is not a lint level (did you mean `error`? write error or"),
        ("lint:\n  primary-key: true\n", 2, "boolean is not a lint level"),
        ("lint:\n  schema-name:\n    pattern: '[a-'\n", 3, "`[a-` is not a regular expression (unterminated"),
        ("lint:\n  table-name: {level: error}\n", 2, "missing required key `pattern` in `lint.table-name`"),
        ("lint:\n  column-name: '[a-z]+'\n", 2, "`lint.column-name` must be a mapping, got string"),
        ("lint:\n  required-properties:\n    properties: {}\n", 3, "`lint.required-properties.properties` must not be"),
        ("lint:\n  forbidden-types:\n    - types: [flot]\n", 3, "`flot` is not a Spark type"),
        ("lint:\n  forbidden-types:\n    - types: [string]\n      in: primry-key\n", 4, "`primry-key` is not a kind"),
        ("lint:\n  forbidden-types:\n    - types: [double]\n      colums: x\n", 4, "unknown key `colums`"),
        ("lint:\n  forbidden-types: []\n", 2, "`lint.forbidden-types` must not be empty"),
        ("envs:\n  local:\n    deny: [dataloss]\n", 3, "`dataloss` is not a hazard class"),
        ("envs:\n  local:\n    deny: [unsupported]\n", 3, "`unsupported` changes can never be allowed, so there is"),
        (
            "envs:\n  local:\n    allow:\n      - breaking\n      - destructive\n    deny: [destructive]\n",
            5,
            "env `local`: `destructive` is both allowed and denied here (remove `destructive` from allow:",
        ),
    ],
)
def test_a_bad_configuration_is_a_problem_at_its_line_and_exit_1(
    config: str, line: int, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path, config, ("t.yaml", GOOD))
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    assert f"delta-sync.yaml:{line}: {message}" in result.stderr
    assert "Traceback" not in result.output


def test_unreadable_specs_exit_1_with_their_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, CONFIG, ("t.yaml", "table: s.t\ncolumns: [\n"))
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert "specs/t.yaml:" in result.stderr
    assert run(tmp_path, monkeypatch, "nowhere").exit_code == 1


# --- deny: what --allow can never let through ---------------------------------------------------------------

DENY = """\
default_env: dev
envs:
  dev: {}
  prod:
    allow: [irreversible]
    deny: [destructive, breaking]
"""


@pytest.fixture
def denying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project(tmp_path, DENY, ("t.yaml", GOOD))
    monkeypatch.chdir(tmp_path)

    def no_catalog(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("refused before any catalog is opened")

    monkeypatch.setattr(environments, "open_catalog", no_catalog)
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--env", "prod", "--allow", "destructive"],
        ["plan", "--env", "prod", "--allow", "irreversible,breaking"],
        ["apply", "--env", "prod", "--allow", "destructive", "--yes"],
        ["rollback", "0123456789abcdef", "--env", "prod", "--allow", "breaking", "--yes"],
    ],
)
def test_deny_refuses_an_allow_on_the_command_line(denying: Path, argv: list[str]) -> None:
    result = runner.invoke(cli.app, argv)
    assert result.exit_code == 1, result.output
    denied = argv[argv.index("--allow") + 1].split(",")[-1]
    assert result.stderr == (
        f"Error: allow {denied}: environment prod denies {denied} changes (deny: in delta-sync.yaml), and no "
        "--allow can override that\n"
    )


def test_the_readme_example_of_deny_is_what_plan_prints(denying: Path) -> None:
    (block,) = [
        b
        for b in re.findall(r"```console\n(.*?)```", LINT_PAGE, re.DOTALL)
        if b.startswith("$ delta-sync plan --env prod --allow destructive")
    ]
    command, shown = block.rstrip("\n").splitlines()
    result = runner.invoke(cli.app, command.split()[2:])
    assert result.exit_code == 1
    assert result.stderr.rstrip("\n") == shown


def test_deny_refuses_an_allow_in_the_library(denying: Path) -> None:
    with pytest.raises(DeltaSyncError, match=r"^allow destructive: environment prod denies destructive changes"):
        delta_sync.plan(env="prod", allow=["destructive"])
    with pytest.raises(DeltaSyncError, match="denies breaking, destructive changes"):
        delta_sync.apply(env="prod", allow="breaking,destructive")
    assert environments.allowed_hazards(["rewrite"], load_project(denying).env("prod")) == {"rewrite", "irreversible"}


def test_deny_is_per_environment(denying: Path) -> None:
    assert environments.allowed_hazards(["destructive"], load_project(denying).env("dev")) == {"destructive"}
    assert load_project(denying).env("prod").deny == ["destructive", "breaking"]


# --- the example project, README's configuration, the pre-commit hook ------------------------------------------

README_LINT = [b for b in re.findall(r"```yaml\n(.*?)```", README, re.DOTALL) if b.startswith("lint:")]


def example(tmp_path: Path, config: str) -> Path:
    shutil.copytree(REPO / "specs", tmp_path / "specs")
    (tmp_path / "delta-sync.yaml").write_text(config)
    return tmp_path


def test_readme_shows_a_lint_configuration() -> None:
    assert len(README_LINT) == 1
    (block,) = README_LINT
    assert set(yaml.safe_load(block)["lint"]) == set(LINT_RULES)


def test_the_example_project_passes_readmes_rules_without_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(example(tmp_path, README_LINT[0]), monkeypatch)
    assert result.exit_code == 0, result.output
    assert " error " not in result.stdout
    assert "0 errors" in result.stderr


def test_the_example_project_is_clean_under_its_error_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = yaml.safe_load(README_LINT[0])["lint"]
    errors = {name: rule for name, rule in config.items() if _level(rule) == "error"}
    assert {"table-comment", "schema-name", "table-name", "column-name", "forbidden-types"} <= set(errors)
    result = run(example(tmp_path, yaml.safe_dump({"lint": errors})), monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"4 table specs: no findings ({len(errors)} rules)." in result.stderr


def _level(rule: Any) -> str:
    if isinstance(rule, str):
        return rule
    if isinstance(rule, list):
        levels = {_level(entry) for entry in rule}
        return "error" if levels == {"error"} else "mixed"
    return str(rule.get("level", "error"))


def test_the_readme_examples_of_lint_are_what_lint_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = docs_text.section(LINT_PAGE, "## Lint")
    (spec,) = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.DOTALL) if "finance.Payments" in b]
    (shown,) = re.findall(r"```console\n\$ delta-sync lint\n(.*?)```", section, re.DOTALL)
    project(tmp_path, README_LINT[0], ("payments.yaml", spec))
    monkeypatch.setenv("COLUMNS", "300")
    result = run(tmp_path, monkeypatch)
    assert result.exit_code == 3
    assert (result.stdout + result.stderr).splitlines() == shown.rstrip("\n").splitlines()


def test_lint_reads_documents_as_validate_does(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(GOOD)
    (doc,) = spec_documents([tmp_path / "t.yaml"], catalog="main")
    assert doc.data["table"] == "main.shop.orders"
    settings = lint_rules.LintSettings.model_validate({"schema-name": {"pattern": "shop"}})
    assert lint([doc], settings).findings == ()


def test_lint_with_every_rule_loads_no_spark(tmp_path: Path) -> None:
    from tests.unit.test_cli import _run_isolated

    project(tmp_path, README_LINT[0], ("t.yaml", edit(GOOD, "comment: Orders placed in the web shop\n", "")))
    code = """
        import sys
        from delta_sync.cli import main as cli
        try:
            cli.app(['lint'])
        except SystemExit as stop:
            code = stop.code
        loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))
        print('LOADED', loaded, 'EXIT', code)
    """
    done = _run_isolated(code, tmp_path)
    assert "LOADED [] EXIT 3" in done.stdout, done.stdout + done.stderr
    assert "error table-comment" in done.stdout
