"""The team's policy on real Delta tables (issue 48), as users run it: through the warm engine, as at a terminal,
then in-process, as on CI. One project and one catalog for the whole module (each Delta commit through Derby
costs about a second, and the engine starts once): a protected table's rewrite, rename and drop blocked whatever
--allow says, and lifting the protection shown as a change; an allow for one column letting that drop through and
blocking a second, then stale once applied; safe_below letting a backfill through on a small table and not on a
bigger one; a rewrite above limits.rewrite blocked with both figures; a Python rule blocking a plan (exit 3), a
raising one in one sentence, and the plan it judged holding to the JSON Schema in the repository; a statement over
statement_timeout cancelled (exit 130) and the re-run converging, in-process; and on spark-submit's driver.

The tests run in this file's order and build on one another's tables.
"""

from __future__ import annotations

import importlib
import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from delta_sync.planfile.schema import SCHEMA_FILE
from tests.spark.cli import ENGINE, IN_PROCESS, Cli

S = "t_policy"
ALL = "destructive,irreversible,breaking,rewrite,compatibility"
jsonschema = importlib.import_module("jsonschema")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    runner = Cli(tmp_path_factory.mktemp("policy"), ENGINE)
    yield runner
    runner.close()


def write(cli: Cli, path: str, text: str) -> None:
    file = cli.root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(textwrap.dedent(text))


def run(cli: Cli, *args: str, code: int = 0) -> str:
    """A command's stdout, asserting its exit code (its output shown when it is another)."""
    done = cli.run(list(args))
    assert done.returncode == code, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def plan_json(cli: Cli, *args: str, code: int) -> dict[str, Any]:
    done = cli.run(["plan", *args, "--format", "json"])
    assert done.returncode == code, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def hazards(document: dict[str, Any], table: str) -> list[dict[str, Any]]:
    return [h for a in document["actions"] if a.get("table") == f"{S}.{table}" for h in a["hazards"]]


ORDERS = f"""\
table: {S}.orders
protect: true
columns:
  - {{name: id, type: bigint}}
  - {{name: amount, type: {{amount}}}}
"""


def test_a_protected_table_is_never_rewritten_renamed_or_dropped(cli: Cli) -> None:
    write(cli, "specs/protect/orders.yaml", ORDERS.replace("{amount}", "int"))
    run(cli, "apply", "specs/protect", "--yes")

    write(cli, "specs/protect/orders.yaml", ORDERS.replace("{amount}", "string"))
    said = run(cli, "plan", "specs/protect", "--allow", ALL, code=3)
    assert (
        f"`{S}.orders` is protected: its spec says protect: true (specs/protect/orders.yaml:2), so no plan may "
        "rewrite it"
    ) in said

    # The table itself remembers: a spec renaming it, or a tombstone, no longer says protect: true.
    write(
        cli,
        "specs/protect/orders.yaml",
        f"table: {S}.orders_v2\nrenamed_from: {S}.orders\ncolumns:\n  - {{name: id, type: bigint}}\n"
        "  - {name: amount, type: int}\n",
    )
    said = run(cli, "plan", "specs/protect", "--allow", ALL, code=3)
    assert f"`{S}.orders` is protected: the table is marked protected" in said
    assert "so no plan may rename it" in said
    write(cli, "specs/protect/orders.yaml", f"table: {S}.orders\ndrop: true\n")
    said = run(cli, "plan", "specs/protect", "--allow", ALL, code=3)
    assert "so no plan may drop it" in said

    # Lifting the protection is a change of its own, which the plan shows.
    write(cli, "specs/protect/orders.yaml", ORDERS.replace("protect: true\n", "").replace("{amount}", "int"))
    said = run(cli, "plan", "specs/protect", "--detailed-exitcode", code=2)
    assert '- property delta_sync.protected (was "true")' in said

    # A view's protect: true is written on the view (TBLPROPERTIES) and read back from the catalog, so its
    # tombstone is blocked too. The view reads no table, so the steps above do not touch it.
    write(cli, "specs/protect/open.yaml", f"view: {S}.open_orders\nprotect: true\nsql: SELECT 1 AS id\n")
    run(cli, "apply", "specs/protect", "--yes")
    write(cli, "specs/protect/open.yaml", f"view: {S}.open_orders\ndrop: true\n")
    said = run(cli, "plan", "specs/protect", "--allow", ALL, code=3)
    assert f"`{S}.open_orders` is protected: the view is marked protected" in said


ITEMS = f"""\
table: {S}.items
columns:
  - {{{{name: id, type: bigint}}}}
{{columns}}properties:
  delta.columnMapping.mode: name
{{allow}}"""


def test_an_allow_lets_one_column_drop_through_and_is_stale_once_applied(cli: Cli) -> None:
    both = "  - {name: legacy, type: string}\n  - {name: other, type: string}\n"
    write(cli, "specs/allow/items.yaml", ITEMS.format(columns=both, allow=""))
    run(cli, "apply", "specs/allow", "--yes")
    run(cli, "sql", f"INSERT INTO {S}.items VALUES (1, 'a', 'b')")

    allow = "allow:\n  - {drop_column: legacy}\n"
    write(cli, "specs/allow/items.yaml", ITEMS.format(columns="", allow=allow))
    document = plan_json(cli, "specs/allow", code=3)
    found = hazards(document, "items")
    assert {h["class"] for h in found} == {"destructive", "breaking"}
    assert all(h["blocked"] and "does not name `{drop_column: other}`" in h["why"] for h in found), found

    write(cli, "specs/allow/items.yaml", ITEMS.format(columns="  - {name: other, type: string}\n", allow=allow))
    document = plan_json(cli, "specs/allow", code=0)
    found = hazards(document, "items")
    assert found
    assert all(
        h["allowed_by"]["allows"] == [{"kind": "drop_column", "target": "legacy", "origin": at(8)}] for h in found
    )
    said = run(cli, "apply", "specs/allow", "--yes")
    assert "allowed by allow: {drop_column: legacy} at specs/allow/items.yaml:8" in said

    said = run(cli, "plan", "specs/allow")
    assert "allow {drop_column: legacy} (specs/allow/items.yaml:8) matches no change of this plan" in said


def at(line: int, file: str = "specs/allow/items.yaml") -> dict[str, Any]:
    return {"file": file, "line": line}


SIZED = f"""\
table: {S}.{{name}}
columns:
  - {{{{name: id, type: bigint}}}}
  - name: amount
    type: {{type}}
{{tight}}"""


def sized(name: str, type_: str = "int", tight: bool = False) -> str:
    rule = "    nullable: false\n    backfill: '0'\n" if tight else ""
    return SIZED.format(name=name, type=type_, tight=rule)


def test_sizes_decide_safe_below_and_limits(cli: Cli) -> None:
    write(cli, "delta-sync.yaml", "safe_below: {rewrite: 100KB}\nlimits:\n  rewrite: 100KB\n")
    write(cli, "specs/size/small.yaml", sized("small"))
    write(cli, "specs/size/big.yaml", sized("big"))
    run(cli, "apply", "specs/size", "--yes")
    run(cli, "sql", f"INSERT INTO {S}.small VALUES (1, NULL)")
    run(cli, "sql", f"INSERT INTO {S}.big SELECT id * 7919 % 1000003, NULL FROM range(300000)")

    write(cli, "specs/size/small.yaml", sized("small", tight=True))
    write(cli, "specs/size/big.yaml", sized("big", tight=True))
    document = plan_json(cli, "specs/size", code=3)
    small = [h for h in hazards(document, "small") if h["class"] == "rewrite"]
    big = [h for h in hazards(document, "big") if h["class"] == "rewrite"]
    assert [h["blocked"] for h in small + big] == [False, True], document
    assert small[0]["table_bytes"] < 100_000 < big[0]["table_bytes"]
    assert small[0]["allowed_by"]["by"].startswith("safe_below.rewrite 100KB: the table holds ")
    assert small[0]["allowed_by"]["origin"] == at(1, "delta-sync.yaml")
    said = run(cli, "apply", "specs/size/small.yaml", "--yes")
    assert "(allowed by safe_below.rewrite 100KB" in said

    write(cli, "specs/size/big.yaml", sized("big", "string"))
    document = plan_json(cli, "specs/size/big.yaml", "--allow", ALL, code=3)
    (limit,) = [h for h in hazards(document, "big") if h["class"] == "limit"]
    assert limit["why"].startswith("this change rewrites "), limit
    assert limit["why"].endswith(", above limits.rewrite 100KB (delta-sync.yaml:3)"), limit
    write(cli, "specs/size/big.yaml", sized("big"))


RULES = """\
from delta_sync.specs.custom_rules import RuleFinding


def freeze(plan):
    for action in plan.actions:
        if action.table == "t_policy.frozen":
            yield RuleFinding("error", "t_policy.frozen is frozen this week", table=action.table)


def note(plan):
    for action in plan.actions:
        if action.table == "t_policy.frozen":
            yield RuleFinding("warning", "tell the finance team before t_policy.frozen changes", table=action.table)


def broken(plan):
    return {}["no such key"]
"""


def test_a_python_rule_blocks_a_plan_and_a_raising_one_is_one_sentence(cli: Cli) -> None:
    write(cli, "ci/__init__.py", "")
    write(cli, "ci/rules.py", RULES)
    write(cli, "delta-sync.yaml", "rules: [ci.rules:freeze]\n")
    write(cli, "specs/rules/frozen.yaml", f"table: {S}.frozen\ncolumns:\n  - {{name: id, type: bigint}}\n")
    document = plan_json(cli, "specs/rules", code=3)
    (found,) = hazards(document, "frozen")
    assert (found["class"], found["rule"], found["why"]) == (
        "rule",
        "ci.rules:freeze",
        "t_policy.frozen is frozen this week (rule ci.rules:freeze)",
    )
    # The plan the rule judged, as the repository's JSON Schema documents it.
    jsonschema.validate(document, json.loads(SCHEMA_FILE.read_text()))
    said = run(cli, "plan", "specs/rules", code=3)
    assert "! blocked (rule): t_policy.frozen is frozen this week (rule ci.rules:freeze)" in said
    # As the Action prints it: an annotation on the spec's line of the pull request.
    done = cli.run(["plan", "specs/rules", "--format", "github"])
    assert done.returncode == 3, done.stderr
    assert done.stdout == (
        "::error file=specs/rules/frozen.yaml,line=1,title=delta-sync%3A rule (t_policy.frozen)::t_policy.frozen is "
        "frozen this week (rule ci.rules:freeze); change the plan so that rule ci.rules:freeze passes, or the rule "
        "(rules: in delta-sync.yaml)\n"
    )

    write(cli, "delta-sync.yaml", "rules: [ci.rules:broken]\n")
    done = cli.run(["plan", "specs/rules"])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "rule ci.rules:broken raised KeyError: 'no such key'" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr

    # A warning lets the plan through; applying the saved plan shows it again (the plan is not judged again).
    write(cli, "delta-sync.yaml", "rules: [ci.rules:note]\n")
    said = run(cli, "plan", "specs/rules", "--out", "noted.json")
    assert "⚠ rule ci.rules:note (warning): tell the finance team before t_policy.frozen changes" in said, said
    said = run(cli, "apply", "noted.json", "--yes")
    assert "⚠ rule ci.rules:note (warning): tell the finance team before t_policy.frozen changes" in said, said
    write(cli, "delta-sync.yaml", "default_env: local\n")


# Evaluated in the constraint's own scan (a Spark job, which the timeout cancels by its tags): a regular expression
# that fails at every one of 16,000 places after scanning to the end, several seconds of one core; deterministic.
HEAVY = "name IS NULL OR length(regexp_replace(repeat(name, 8000), '[ab]*c', '')) >= 0"


def test_a_statement_over_statement_timeout_is_cancelled_and_the_rerun_converges(cli: Cli) -> None:
    spec = f"table: {S}.slow\ncolumns:\n  - {{name: id, type: bigint}}\n  - {{name: name, type: string}}\n"
    write(cli, "specs/slow/slow.yaml", spec)
    run(cli, "apply", "specs/slow", "--yes")
    # Seconds of the check's work per row: with 40 rows its statement (and its data check) outlasts the timeout
    # by far, whatever the load, so the cancel always lands before a commit could.
    run(cli, "sql", f"INSERT INTO {S}.slow SELECT id, 'ab' FROM range(1, 41)")

    write(cli, "specs/slow/slow.yaml", spec + f'checks:\n  heavy: "{HEAVY}"\n')
    write(cli, "delta-sync.yaml", "envs:\n  local:\n    statement_timeout: 1s\n")
    said = run(cli, "apply", "specs/slow", "--yes", code=130)
    assert "ADD CONSTRAINT heavy" in said
    assert "ran longer than statement_timeout 1s, so it was cancelled" in said, said
    assert "Run apply again to continue" in said

    # In-process, as on CI, with room for it (one row left to check): the constraint did not land, so the re-run
    # adds it, and converges.
    run(cli, "sql", f"DELETE FROM {S}.slow WHERE id > 1")
    cli.use(IN_PROCESS)
    write(cli, "delta-sync.yaml", "envs:\n  local:\n    statement_timeout: 10m\n")
    said = run(cli, "apply", "specs/slow", "--yes")
    assert "ADD CONSTRAINT heavy" in said
    assert "all 1 table(s) match the specs" in said

    # Through spark-submit's driver, which reads no project file: the command hands it the environment's limit.
    # The environment's own catalog gets the table with its rows in one statement (in its `default` schema, which
    # a new catalog has); no data check at plan time (it would be the one over the limit): the ADD CONSTRAINT's
    # own scan, on the driver, is.
    batch = "envs:\n  local: {}\n  batch:\n    statement_timeout: 1s\n    submit: {master: 'local[1]'}\n"
    write(cli, "delta-sync.yaml", batch)
    run(
        cli,
        "sql",
        "--env",
        "batch",
        "CREATE TABLE slow USING delta AS SELECT nullif(id, 0) AS id, nullif('ab', '') AS name FROM range(1, 41)",
    )
    write(cli, "specs/batch/slow.yaml", spec.replace(f"{S}.slow", "default.slow") + f'checks:\n  heavy: "{HEAVY}"\n')
    said = run(cli, "apply", "specs/batch", "--env", "batch", "--yes", "--no-probes", code=130)
    assert "through spark-submit" in said
    assert "ran longer than statement_timeout 1s, so it was cancelled" in said, said
    assert "Run apply again to continue" in said
