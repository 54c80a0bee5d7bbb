"""The team's policy (issue 48), offline: `protect:` in specs and the project file, a spec's named `allow:`,
sizes under `limits:` and `safe_below:`, rule references; each setting read with its problems at file:line,
and the decisions taken on plans of current states built by hand (no JVM)."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError
from delta_sync.model.policy import SizeError, parse_size, size_text
from delta_sync.model.state import CatalogState, Table
from delta_sync.planfile import codec
from delta_sync.planning import team_policy
from delta_sync.planning.actions import UnsetProperties
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Assessment, Hazard
from delta_sync.render import text as render
from delta_sync.render.document import plan_json
from delta_sync.render.markdown import render_markdown
from delta_sync.review import environments
from delta_sync.specs.project_file import load_project
from tests.unit.builders import col, name, state, table

TABLE = """\
table: shop.orders
{protect}columns:
  - name: id
    type: bigint
  - name: amount
    type: {amount}
{extra}"""


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Spec lines are shown relative to the working directory, as the commands show them.
    monkeypatch.chdir(tmp_path)


def project(tmp_path: Path, spec: str, settings: str = "", env: str | None = None) -> CatalogState:
    """The desired state of one spec file under a project file, as `plan` loads it."""
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "orders.yaml").write_text(textwrap.dedent(spec))
    if settings:
        (tmp_path / "delta-sync.yaml").write_text(textwrap.dedent(settings))
    loaded = load_project(tmp_path)
    return environments.load_desired(loaded, loaded.env(env), tmp_path / "specs")


def orders(*, protect: str = "", amount: str = "int", extra: str = "") -> str:
    return TABLE.format(protect=protect, amount=amount, extra=extra)


MAPPED = {"delta.columnMapping.mode": "name", "delta.feature.columnMapping": "supported"}


def live(*columns: str, size: int = 3000, properties: dict[str, str] | None = None) -> Table:
    """shop.orders as the catalog holds it, with rows (and column mapping, which a drop needs)."""
    kept = {**MAPPED, **(properties or {})}
    spec = table("shop.orders", *(col(c, t) for c, t in (c.split(":") for c in columns)), properties=kept)
    return dataclasses.replace(spec, num_files=3, size_bytes=size, protocol=(1, 2), version=4)


def review(desired: CatalogState, current: CatalogState, allowed: tuple[Hazard, ...] = ()) -> Assessment:
    found = plan(current, desired)
    return assess(found, current, (), allowed, desired=desired)


def problems(excinfo: pytest.ExceptionInfo[SpecError]) -> list[str]:
    return [str(p) for p in excinfo.value.problems]


# --- sizes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512MB", 512 * 10**6),
        ("2TB", 2 * 10**12),
        ("1.5GiB", int(1.5 * 2**30)),
        ("10 kib", 10 * 1024),
        ("0", 0),
        (4096, 4096),
        ("100B", 100),
        ("7 bytes", 7),
    ],
)
def test_sizes_as_users_write_them(text: str | int, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "5 XB", "-1", "1.5B", "GB", True, -3])
def test_what_is_not_a_size(text: str | int) -> None:
    with pytest.raises(SizeError):
        parse_size(text)


def test_a_size_is_shown_in_binary_units() -> None:
    assert size_text(3000) == "2.9 KiB"
    assert size_text(12) == "12 bytes"


# --- the settings, with their problems at file:line ------------------------------------------------


def test_the_policy_settings_read_with_their_lines(tmp_path: Path) -> None:
    desired = project(
        tmp_path,
        orders(),
        """\
        protect: [shop.orders]
        limits: {rewrite: 50GB}
        envs:
          local:
            protect: ["finance.*"]
            limits: {scan: 500GB}
            safe_below: {rewrite: 1MiB}
            rules: [ci.rules:no_drops]
        """,
    )
    policy = desired.policy
    assert policy is not None
    assert [(p.pattern, str(p.origin)) for p in policy.protect] == [
        ("shop.orders", "delta-sync.yaml:1"),
        ("finance.*", "delta-sync.yaml:5"),
    ]
    assert {(lim.kind, lim.size, str(lim.origin)) for lim in policy.limits} == {
        ("rewrite", 50 * 10**9, "delta-sync.yaml:2"),
        ("scan", 500 * 10**9, "delta-sync.yaml:6"),
    }
    assert [(lim.kind, lim.size, str(lim.origin)) for lim in policy.safe_below] == [
        ("rewrite", 2**20, "delta-sync.yaml:7")
    ]
    assert policy.rules == ("ci.rules:no_drops",)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("limits: {rewrite: 50 gigs}\n", "delta-sync.yaml:1: `50 gigs` is not a size"),
        ("envs:\n  local:\n    limits: {rewrite: 1GB, copy: 2GB}\n", "delta-sync.yaml:3:"),
        ("safe_below: {destructiv: 1GB}\n", "`destructiv` is not a hazard class"),
        ("safe_below: {unsupported: 1GB}\n", "`unsupported` changes cannot be allowed"),
        ("protect: [orders]\n", "delta-sync.yaml:1: `orders` is not a pattern of table names"),
        ("rules:\n  - ci/rules.py\n", "delta-sync.yaml:2: `ci/rules.py` is not a rule reference"),
        ("rules: [ci.rules]\n", "`ci.rules` is not a rule reference"),
    ],
)
def test_a_bad_policy_setting_is_one_problem_at_its_line(tmp_path: Path, settings: str, expected: str) -> None:
    with pytest.raises(SpecError) as excinfo:
        project(tmp_path, orders(), settings)
    assert any(expected in p for p in problems(excinfo)), problems(excinfo)


@pytest.mark.parametrize(
    ("allow", "expected"),
    [
        ("allow: [destructive]\n", "orders.yaml:7: an allow names one change as {kind: what}, got string"),
        ("allow: [drop_column]\n", "orders.yaml:7: `drop_column` names a kind of change, not the change"),
        ("allow:\n  - {dropcolumn: x}\n", "orders.yaml:8: `dropcolumn` is not a kind of change"),
        ("allow:\n  - {destructive: x}\n", "an allow names one change, not a class of them"),
        ("allow:\n  - {drop_column: ''}\n", "orders.yaml:8: `drop_column` must name what it allows"),
        ("allow:\n  - {drop_column: a, rewrite: b}\n", "orders.yaml:8: an allow names one change"),
    ],
)
def test_a_bad_allow_is_one_problem_at_its_line(tmp_path: Path, allow: str, expected: str) -> None:
    with pytest.raises(SpecError) as excinfo:
        project(tmp_path, orders(extra=allow))
    assert any(expected in p for p in problems(excinfo)), problems(excinfo)


def test_protect_and_allows_travel_on_the_table_with_their_lines(tmp_path: Path) -> None:
    desired = project(
        tmp_path, orders(protect="protect: true\n", extra="allow:\n  - {drop_column: legacy}\n  - {rewrite: orders}\n")
    )
    orders_ = desired.tables[name("shop.orders")]
    assert str(orders_.protected) == "specs/orders.yaml:2"
    assert [(a.kind, a.target, str(a.origin)) for a in orders_.allows] == [
        ("drop_column", "legacy", "specs/orders.yaml:9"),
        ("rewrite", "orders", "specs/orders.yaml:10"),
    ]
    # The table carries its protection, so a later plan without the spec still knows it.
    assert orders_.property_map[team_policy.PROTECTED_PROPERTY] == "true"


def test_a_project_without_a_policy_has_none_and_saves_plans_as_before(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(), "envs:\n  local:\n    deny: []\n")
    assert desired.policy is None
    assessment = review(desired, state(live("id:bigint", "amount:int")))
    assert "stale_allows" not in plan_json(plan(state(), desired), assessment)


# --- protection -----------------------------------------------------------------------------------


def test_a_protected_table_is_not_rewritten_whatever_is_allowed(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(protect="protect: true\n", amount="string"))
    current = state(live("id:bigint", "amount:int", properties={team_policy.PROTECTED_PROPERTY: "true"}))
    assessment = review(desired, current, tuple(Hazard))
    (block,) = [b for b in assessment.blocks if b.finding.hazard is Hazard.PROTECTED]
    assert block.why == (
        "`shop.orders` is protected: its spec says protect: true (specs/orders.yaml:2), so no plan may rewrite it"
    )
    assert block.unblock == team_policy.PROTECTED_UNBLOCK
    # At the line of the change it stops, where a pull request's annotation goes.
    assert str(block.finding.origin) == "specs/orders.yaml:6"


def test_a_glob_protects_a_table_from_a_tombstone_and_a_rename(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "gone.yaml").write_text("table: shop.old_orders\ndrop: true\n")
    spec = "table: shop.orders2\nrenamed_from: shop.orders\ncolumns:\n  - {name: id, type: bigint}\n"
    desired = project(tmp_path, spec, "protect: ['shop.*orders']\n")
    current = state(
        dataclasses.replace(live("id:bigint"), name=name("shop.orders")),
        dataclasses.replace(live("id:bigint"), name=name("shop.old_orders")),
    )
    current = dataclasses.replace(current, listed=frozenset({name("shop.orders"), name("shop.old_orders")}))
    assessment = review(desired, current, tuple(Hazard))
    whys = sorted(b.why for b in assessment.blocks if b.finding.hazard is Hazard.PROTECTED)
    assert whys == [
        "`shop.old_orders` is protected: it matches `shop.*orders` under protect: in delta-sync.yaml "
        "(delta-sync.yaml:1), so no plan may drop it",
        "`shop.orders` is protected: it matches `shop.*orders` under protect: in delta-sync.yaml "
        "(delta-sync.yaml:1), so no plan may rename it",
    ]


def test_the_table_itself_remembers_its_protection_and_lifting_it_is_a_change(tmp_path: Path) -> None:
    marked = live("id:bigint", "amount:int", properties={team_policy.PROTECTED_PROPERTY: "true"})
    desired = project(tmp_path, orders())
    lifted = plan(state(marked), desired)
    unset = [a for a in lifted.actions if isinstance(a, UnsetProperties)]
    assert [(a.name, a.removed) for a in unset] == [(name("shop.orders"), ((team_policy.PROTECTED_PROPERTY, "true"),))]
    (tmp_path / "specs" / "orders.yaml").write_text("table: shop.orders\ndrop: true\n")
    gone = project(tmp_path, "table: shop.orders\ndrop: true\n")
    assessment = review(gone, state(marked), tuple(Hazard))
    assert [b.why for b in assessment.blocks] == [
        f"`shop.orders` is protected: the table is marked protected ({team_policy.PROTECTED_PROPERTY}, set by a "
        "spec's protect: true), so no plan may drop it"
    ]


def test_an_unprotected_plan_is_decided_as_before(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(amount="string"))
    current = state(live("id:bigint", "amount:int"))
    assert review(desired, current, tuple(Hazard)).blocks == ()


# --- allows ---------------------------------------------------------------------------------------


def test_an_allow_lets_one_column_drop_through_and_not_a_second(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(extra="allow:\n  - {drop_column: legacy}\n"))
    one = state(live("id:bigint", "amount:int", "legacy:string"))
    assessment = review(desired, one)
    assert assessment.blocks == ()
    (let,) = {a.by for a in assessment.allowances}
    assert let == "allow: {drop_column: legacy}"
    # Every finding of that drop is let through by that one allow, and the JSON names it.
    data = plan_json(plan(one, desired), assessment)
    hazards = [h for a in data["actions"] for h in a["hazards"]]
    assert {h["class"] for h in hazards} == {"destructive", "breaking"}
    assert all(h["allowed_by"]["allows"][0]["origin"] == {"file": "specs/orders.yaml", "line": 8} for h in hazards)
    assert "allowed by allow: {drop_column: legacy} at specs/orders.yaml:8" in render.plain_text(
        render.render_text(plan(one, desired), assessment)
    )

    two = state(live("id:bigint", "amount:int", "legacy:string", "other:string"))
    blocked = review(desired, two)
    assert {b.finding.hazard for b in blocked.blocks} == {Hazard.DESTRUCTIVE, Hazard.BREAKING}
    assert all("does not name `{drop_column: other}`" in b.why for b in blocked.blocks)
    assert blocked.allowances == ()


def test_an_allow_does_not_pass_a_class_the_environment_denies(tmp_path: Path) -> None:
    desired = project(
        tmp_path, orders(extra="allow:\n  - {drop_column: legacy}\n"), "envs:\n  local:\n    deny: [destructive]\n"
    )
    assessment = review(desired, state(live("id:bigint", "amount:int", "legacy:string")))
    assert [b.finding.hazard for b in assessment.blocks] == [Hazard.DESTRUCTIVE]
    assert [a.finding.hazard for a in assessment.allowances] == [Hazard.BREAKING]


def test_an_allow_no_change_matches_is_stale_in_text_json_and_markdown(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(extra="allow:\n  - {drop_column: legacy}\n"))
    current = state(live("id:bigint", "amount:int"))
    the_plan = plan(current, desired)
    assessment = review(desired, current)
    ((table_, allow),) = assessment.stale_allows
    assert (str(table_), allow.kind, allow.target, str(allow.origin)) == (
        "shop.orders",
        "drop_column",
        "legacy",
        "specs/orders.yaml:8",
    )
    said = "allow {drop_column: legacy} (specs/orders.yaml:8) matches no change of this plan"
    assert said in render.plain_text(render.render_text(the_plan, assessment))
    assert plan_json(the_plan, assessment)["stale_allows"] == [
        {
            "table": "shop.orders",
            "kind": "drop_column",
            "target": "legacy",
            "origin": {"file": "specs/orders.yaml", "line": 8},
        }
    ]
    assert "matches no change of this plan" in render_markdown(the_plan, assessment)


def test_a_rewrite_allowed_by_name(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(amount="string", extra="allow:\n  - {rewrite: shop.orders}\n"))
    assessment = review(desired, state(live("id:bigint", "amount:int")))
    # The rewrite converts a type too, which is a change of its own: the allow must name it as well.
    assert {b.finding.hazard for b in assessment.blocks} == {Hazard.REWRITE, Hazard.BREAKING}
    assert all("does not name `{change_type: amount}`" in b.why for b in assessment.blocks)
    both = project(
        tmp_path,
        orders(amount="string", extra="allow:\n  - {rewrite: shop.orders}\n  - {change_type: amount}\n"),
    )
    assert review(both, state(live("id:bigint", "amount:int"))).blocks == ()


def test_the_policy_survives_a_saved_plan(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(), "protect: [shop.orders]\nlimits: {rewrite: 1KB}\n")
    assert desired.policy is not None
    data = json.loads(json.dumps(codec.encode(desired.policy)))
    assert codec.decode_policy(data) == desired.policy


def test_lint_warns_at_an_allow_the_spec_shows_to_be_stale(tmp_path: Path) -> None:
    from delta_sync.specs.lint import lint
    from delta_sync.specs.spec_files import spec_documents

    extra = "allow:\n  - {drop_column: amount}\n  - {drop_column: legacy}\n  - {backfill: amount}\n"
    project(tmp_path, orders(extra=extra))
    report = lint(spec_documents([Path("specs/orders.yaml")]), None)
    assert [str(f) for f in report.findings] == [
        "specs/orders.yaml:8: warning stale-allow: allow {drop_column: amount} lets nothing through: the spec "
        "still declares `amount`; remove it",
        "specs/orders.yaml:10: warning stale-allow: allow {backfill: amount} lets nothing through: `amount` has no "
        "backfill: (applied, or never written); remove it",
    ]
    assert report.exit_code == 0


# --- sizes and limits ------------------------------------------------------------------------------

TIGHTENED = orders().replace("    type: int\n", "    type: int\n    nullable: false\n    backfill: '0'\n")


@pytest.mark.parametrize(("size", "blocked"), [(3000, False), (100_000, True)])
def test_safe_below_lets_a_backfill_through_on_a_small_table_only(tmp_path: Path, size: int, blocked: bool) -> None:
    desired = project(tmp_path, TIGHTENED, "safe_below: {rewrite: 10KB}\n")
    assessment = review(desired, state(live("id:bigint", "amount:int", size=size)))
    rewrites = [f for f in assessment.findings if f.hazard is Hazard.REWRITE]
    assert [f.size_bytes for f in rewrites] == [size]
    if blocked:
        assert [b.finding.hazard for b in assessment.blocks] == [Hazard.REWRITE]
        assert assessment.allowances == ()
    else:
        assert assessment.blocks == ()
        (let,) = assessment.allowances
        assert let.by == "safe_below.rewrite 10KB: the table holds 2.9 KiB"
        assert str(let.origin) == "delta-sync.yaml:1"
        # Shown beside the change, with the size it read.
        shown = render.plain_text(
            render.render_text(plan(state(live("id:bigint", "amount:int", size=size)), desired), assessment)
        )
        assert "(allowed by safe_below.rewrite 10KB: the table holds 2.9 KiB at delta-sync.yaml:1)" in shown
        assert "[table: 2.9 KiB]" in shown


def test_a_rewrite_above_its_limit_is_blocked_with_both_figures(tmp_path: Path) -> None:
    desired = project(tmp_path, orders(amount="string"), "limits:\n  rewrite: 1KiB\n  scan: 1MB\n")
    current = state(live("id:bigint", "amount:int", size=5000))
    assessment = review(desired, current, tuple(Hazard))
    (block,) = assessment.blocks
    assert block.finding.hazard is Hazard.LIMIT
    assert block.why == "this change rewrites 4.9 KiB, above limits.rewrite 1KiB (delta-sync.yaml:2)"
    assert block.unblock == team_policy.LIMIT_UNBLOCK
    # Under the limit, the same plan is decided as before.
    small = review(desired, state(live("id:bigint", "amount:int", size=1000)), tuple(Hazard))
    assert small.blocks == ()


def test_a_scan_above_its_limit_is_not_run_and_blocks(tmp_path: Path) -> None:
    from delta_sync.review.policy import over_scan_limit, rules_to_scan

    desired = project(tmp_path, orders(extra="checks:\n  positive: amount > 0\n"), "limits: {scan: 2KB}\n")
    current = state(live("id:bigint", "amount:int", size=5000))
    the_plan = plan(current, desired)
    work, _answered = rules_to_scan(the_plan, current, applying=False)
    kept, skipped = over_scan_limit(work, current, desired)
    assert kept == []
    assert [(p.check, p.skipped) for p in skipped] == [
        ("positive", "4.9 KiB is above limits.scan 2KB (delta-sync.yaml:1)")
    ]
    assessment = assess(the_plan, current, skipped, (), desired=desired)
    assert [b.why for b in assessment.blocks] == [
        "this change scans a table of 4.9 KiB, above limits.scan 2KB (delta-sync.yaml:1)"
    ]


def test_a_rollback_never_restores_or_drops_a_protected_table() -> None:
    from delta_sync.model.state import Policy, Protection
    from delta_sync.planning.actions import DropTable, Plan, RestoreTable

    restore = RestoreTable(name("shop.orders"), 3, "p1", (4, 5))
    drop = DropTable(name("shop.items"), "p1")
    undo = Plan((restore, drop), (name("shop.items"), name("shop.orders")))
    policy = Policy(protect=(Protection("shop.orders"),))
    marked = dataclasses.replace(
        table("shop.items", col("id", "bigint"), properties={team_policy.PROTECTED_PROPERTY: "true"}), num_files=1
    )
    current = state(live("id:bigint"), marked)
    assessment = assess(undo, current, (), tuple(Hazard), desired=CatalogState({}, policy=policy))
    assert sorted(b.why.rsplit(", so ", 1)[1] for b in assessment.blocks) == [
        "no plan may drop it",
        "no plan may restore it",
    ]


def test_adopt_writes_the_tables_protection_as_protect_true() -> None:
    from delta_sync.specs.adopt import adopt_text

    spec = "table: shop.orders\ncolumns:\n  - {name: id, type: bigint}\n"
    marked = table("shop.orders", col("id", "bigint"), properties={team_policy.PROTECTED_PROPERTY: "true"})
    adopted = adopt_text(spec, "orders.yaml", marked, {})
    assert adopted.changed
    assert adopted.after == "table: shop.orders\nprotect: true\ncolumns:\n  - {name: id, type: bigint}\n"
    assert not adopt_text(adopted.after, "orders.yaml", marked, {}).changed
