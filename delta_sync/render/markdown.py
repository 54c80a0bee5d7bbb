"""Plans -> Markdown for pull request comments: the summary, what is blocked and how to unblock it, a collapsed
diagram of the tables, keys and views the plan touches, then one collapsed section per table (the text diff's
lines, its SQL collapsed inside), cut by whole tables to fit GitHub's comment size limit; everything from the
specs is escaped or fenced so that it shows literally."""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from dataclasses import replace
from urllib.parse import quote

from rich.console import Group
from rich.text import Text

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import CatalogState, TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import (
    Action,
    CreateSchema,
    CreateTable,
    CreateView,
    DropTable,
    Notice,
    Plan,
    RemoveTable,
    RestoreTable,
    Unsupported,
)
from delta_sync.planning.hazards import Assessment, Block, Finding, Hazard
from delta_sync.planning.team_policy import stale_text
from delta_sync.render.actions import _is_replaced_drop
from delta_sync.render.counts import _blocked, unmanaged_text, unordered_text
from delta_sync.render.diagram import mermaid
from delta_sync.render.graph import plan_graph
from delta_sync.render.text import render_summary, render_text

# GitHub refuses a comment longer than 65,536 characters; the default leaves room for what a workflow adds.
MARKDOWN_LIMIT = 65_000

# Outside code spans, what Markdown (or the HTML it allows) would read as markup.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
# A code span the messages already hold (`name`): kept as code, its content shown as is.
_MD_CODE_SPAN = re.compile(r"`[^`\n]+`")
_BACKTICKS = re.compile(r"`+")


def _md_text(text: str) -> str:
    """A message as one line of Markdown: its `code` spans kept, everything else shown literally."""
    text = " ".join(text.splitlines())
    out, end = [], 0
    for span in _MD_CODE_SPAN.finditer(text):
        out += [_MD_SPECIAL.sub(r"\\\1", text[end : span.start()]), span.group()]
        end = span.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[end:]))
    return "".join(out)


def _md_code(text: str) -> str:
    """`text` as an inline code span, whatever backticks it holds (a longer run of them delimits it)."""
    text = " ".join(text.splitlines())
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _md_fence(lines: list[str], info: str) -> list[str]:
    """A fenced code block that no line of `lines` can close (its fence is longer than any backtick run)."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *lines, fence]


def _md_size(text: str) -> int:
    """A text's length as GitHub counts it against its limit: UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le")) // 2


def _md_plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _md_summary(plan: Plan, assessment: Assessment | None, views: Collection[TableName] = ()) -> str:
    """The text renderer's summary line, its counts in bold."""
    summary = render_summary(plan, assessment, views).plain
    if plan.is_empty:
        head, _, rest = summary.partition(". ")
        return f"**delta-sync plan: {_md_text(head)}.** {_md_text(rest)}".rstrip()
    counts = f"Plan: {plan.summary_with(_blocked(assessment))}."
    rest = summary.removeprefix(counts).strip()
    return f"**delta-sync plan: {_md_text(counts.removeprefix('Plan: '))}**" + (f" {_md_text(rest)}" if rest else "")


def _md_origin(origin: str, source: str | None) -> str:
    """A spec line (`specs/x.yaml:12`), linked to that line of the reviewed commit's file when `source` (the
    base URL of its files) is given."""
    if source is None:
        return _md_code(origin)
    file, _, line = origin.rpartition(":")
    if not file or not line.isdigit() or file.startswith("/"):
        return _md_code(origin)
    url = f"{source.rstrip('/')}/{quote(file)}#L{line}"
    return f"[{_md_code(origin)}]({url})"


def _md_blocks(plan: Plan, assessment: Assessment | None, source: str | None = None) -> list[str]:
    """What stops apply, each with why, where in the specs (linked to the line, given `source`) and the way
    out."""
    items: list[tuple[TableName, str, str, str, str | None]] = []
    if assessment is not None:
        for block in assessment.blocks:
            finding = block.finding
            origin = str(finding.origin) if finding.origin else None
            items.append((finding.table, finding.hazard.value, block.why, block.unblock, origin))
    else:
        for action in plan.blocked:
            origin = str(action.origin) if action.origin else None
            items.append((action.name, Hazard.UNSUPPORTED.value, action.reason, action.remedy, origin))
    if not items:
        return []
    lines = [f"#### Blocked ({len(items)})", ""]
    for table, hazard, why, unblock, origin in items:
        where = f" ({_md_origin(origin, source)})" if origin else ""
        lines.append(f"- {_md_code(str(table))} — {hazard}: {_md_text(why)}{where}")
        lines.append(f"  - **Fix:** {_md_text(unblock)}")
    return lines


def _md_schemas(plan: Plan) -> list[str]:
    """A paragraph per schema the plan creates (a list here would run on from the blocked items')."""
    return [
        f"Creates schema {_md_code(str(action.schema))}: {_md_code(sql + ';')}"
        for action in plan.actions
        if isinstance(action, CreateSchema)
        for sql in ddl.to_sql(action)
    ]


def _md_by_table(plan: Plan, assessment: Assessment | None) -> dict[TableName, tuple[Plan, Assessment | None]]:
    """Each table that has actions as a plan of its own, with the findings, blocks and data checks of
    that table renumbered to its actions: what the text renderer shows of one table, in time linear in
    the whole plan (a comment about thousands of tables renders as fast as about one)."""
    positions: dict[int, tuple[TableName, int]] = {}
    actions: dict[TableName, list[Action]] = {}
    for index, action in enumerate(plan.actions):
        if not isinstance(action, CreateSchema):
            mine = actions.setdefault(action.name, [])
            positions[index] = (action.name, len(mine))
            mine.append(action)
    findings: dict[TableName, list[Finding]] = {}
    blocks: dict[TableName, list[Block]] = {}
    probes: dict[TableName, list[ProbeResult]] = {}
    if assessment is not None:
        for finding in assessment.findings:
            if finding.index in positions:
                name, index = positions[finding.index]
                findings.setdefault(name, []).append(replace(finding, index=index))
        for block in assessment.blocks:
            if block.finding.index in positions:
                name, index = positions[block.finding.index]
                blocks.setdefault(name, []).append(replace(block, finding=replace(block.finding, index=index)))
        for probe in assessment.probes:
            probes.setdefault(probe.table, []).append(probe)
    return {
        name: (
            Plan(tuple(actions[name]), (name,)),
            None
            if assessment is None
            else Assessment(
                tuple(findings.get(name, ())),
                tuple(probes.get(name, ())),
                assessment.allowed,
                tuple(blocks.get(name, ())),
                tuple((table, change) for table, change in assessment.protocols if table == name),
                None if assessment.rehearsals is None else tuple(r for r in assessment.rehearsals if r.table == name),
            ),
        )
        for name in plan.tables
        if name in actions
    }


def _md_table_lines(table: Plan, assessment: Assessment | None) -> list[str]:
    """The lines the text renderer shows under a table's header (changes, hazards, data checks), without
    their indent. `table` is a plan of one table: render_text gives its header, its lines, then a summary."""
    group = render_text(table, assessment)
    assert isinstance(group, Group)
    return [part.plain.rstrip().removeprefix("    ") for part in group.renderables[1:-1] if isinstance(part, Text)]


def _md_status(actions: tuple[Action, ...], blocked: bool) -> str:
    if blocked or any(isinstance(a, Unsupported) for a in actions):
        return "blocked"
    if all(isinstance(a, Notice) for a in actions):
        return "no changes"
    if any(isinstance(a, CreateTable) or (isinstance(a, CreateView) and not a.replacing) for a in actions):
        return "create"
    if any(isinstance(a, DropTable | RemoveTable) for a in actions):
        return "drop"
    if any(isinstance(a, RestoreTable) for a in actions):
        return "restore"
    return "change"


def _md_table(name: TableName, table: Plan, assessment: Assessment | None, source: str | None = None) -> str:
    """One table (a plan of its own) as a collapsed section: its changes and hazards, then its SQL
    collapsed inside; given `source`, a line of links to the spec lines of its findings."""
    actions = table.actions
    changes = [a for a in actions if not isinstance(a, Notice | Unsupported) and not _is_replaced_drop(a, actions)]
    stops = len(assessment.blocks) if assessment is not None else len(table.blocked)
    status = _md_status(actions, bool(_blocked(assessment)))
    counts = [] if status == "no changes" else [_md_plural(len(changes), "change")]
    counts += [_md_plural(stops, "blocked item")] if stops else []
    origin = next((a.table.origin for a in actions if isinstance(a, CreateTable) and a.table.origin), None)
    origin = origin or next((a.view.origin for a in actions if isinstance(a, CreateView) and a.view.origin), None)
    spec = f" ({html.escape(origin.file)})" if origin is not None else ""
    heading = f"<code>{html.escape(str(name))}</code>: {', '.join([status, *counts])}{spec}"
    out = [f"<details><summary>{heading}</summary>", "", *_md_fence(_md_table_lines(table, assessment), "diff")]
    lines = sorted({str(f.origin) for f in assessment.findings if f.origin} if assessment and source else set())
    if lines:
        out += ["", "Findings at: " + ", ".join(_md_origin(line, source) for line in lines)]
    statements = [f"{sql};" for action in actions for sql in ddl.to_sql(action)]
    if statements:
        out += [
            "",
            f"<details><summary>SQL ({_md_plural(len(statements), 'statement')})</summary>",
            "",
            *_md_fence("\n".join(statements).splitlines(), "sql"),
            "",
            "</details>",
        ]
    return "\n".join([*out, "", "</details>"])


def _md_diagram(
    plan: Plan, assessment: Assessment | None, desired: CatalogState | None, views: Collection[TableName]
) -> str | None:
    """The tables, keys and views the plan touches and their direct neighbours as a Mermaid diagram (GitHub draws
    it), what changes marked in their names, collapsed; a line saying why there is none when it touches too many;
    None when it touches none. Drawn from the desired tables and the plan's actions only, what a saved plan holds,
    so that `show` draws what `plan` drew."""
    drawn = plan_graph(plan, desired.tables if desired else None, views, _blocked(assessment))
    if drawn.graph is None:
        return f"_No diagram: {_md_text(drawn.omitted)}._" if drawn.omitted else None
    graph = drawn.graph
    drawn_views = sum(1 for n in graph.nodes if n.view)
    counts = ((len(graph.nodes) - drawn_views, "table"), (drawn_views, "view"))
    shown = [_md_plural(count, word) for count, word in counts if count]
    summary = f"Diagram: {' and '.join(shown)} ({len(graph.touched)} touched by the plan)"
    lines = [f"<details><summary>{html.escape(summary)}</summary>", ""]
    lines += _md_fence(mermaid(graph).splitlines(), "mermaid")
    around = "what the plan touches" if drawn.alone else "what the plan touches and its direct neighbours"
    if graph.left_out:
        others = "1 other table" if graph.left_out == 1 else f"{graph.left_out} other tables"
        lines += ["", f"_Shows {around}; {others} of the specs left out._"]
    return "\n".join([*lines, "", "</details>"])


_MD_NO_ROOM = "_No diagram: it would not fit within GitHub's comment size limit._"


def _md_left_out(count: int, total: int, artifact: str | None) -> str:
    where = f"the plan artifact {_md_code(artifact)}" if artifact else "the saved plan file"
    return (
        f"**{count} of {_md_plural(total, 'table')} left out** to stay within GitHub's comment size limit; "
        f"the whole plan is in {where}."
    )


def render_markdown(
    plan: Plan,
    assessment: Assessment | None = None,
    *,
    limit: int = MARKDOWN_LIMIT,
    artifact: str | None = None,
    views: Collection[TableName] = (),
    source: str | None = None,
    desired: CatalogState | None = None,
) -> str:
    """For pull request comments: the summary, what is blocked and how to unblock it, a collapsed diagram of what
    the plan touches, then one collapsed section per table (changes, hazards and data checks as the text shows
    them, its SQL collapsed inside).

    At most `limit` characters as GitHub counts them: whole table sections are left out from the end, and
    a last line says how many and points at `artifact` (else the saved plan file). The summary and the
    blocked items always stay, so a plan blocked in thousands of places may still be longer. `views`: which of
    the plan's names are views (views_of), for the summary's counts. `source`: the base URL of the reviewed
    commit's files, to link each blocked item, stale allow and table's findings to its spec line. `desired`: the
    desired state, whose tables give the diagram its keys and neighbours (without it, the diagram shows what the
    plan's own actions say). The diagram is left out, and a line says so, when the whole comment would not fit with
    it: it never costs a table's section.
    """
    unmanaged = [f"_{html.escape(unmanaged_text(plan.unmanaged))}_"] if plan.unmanaged else []
    unmanaged += [f"_{html.escape(unordered_text(plan.unordered))}_"] if plan.unordered else []
    unmanaged += [
        f"_{_md_text(f'{table}: {stale_text(allow)}')}_"
        for table, allow in (assessment.stale_allows if assessment else ())
    ]
    if plan.is_empty:
        return "\n\n".join([_md_summary(plan, assessment, views), *unmanaged]) + "\n"
    blocks = _md_blocks(plan, assessment, source)
    head = ["\n".join(part) for part in ([_md_summary(plan, assessment, views)], blocks) if part]
    head += unmanaged
    head += _md_schemas(plan)
    sections = [_md_table(name, *table, source=source) for name, table in _md_by_table(plan, assessment).items()]
    # Parts are joined by a blank line, and the comment ends with a newline.
    size = sum(_md_size(part) + 2 for part in head) - 1
    # The diagram only when everything fits with it; else a line (which stays, as the summary does) says why not.
    diagram = _md_diagram(plan, assessment, desired, views)
    rest = sum(_md_size(s) + 2 for s in sections)
    if diagram is not None and diagram.startswith("<details>") and size + _md_size(diagram) + 2 + rest > limit:
        diagram = _MD_NO_ROOM
    if diagram is not None:
        head.append(diagram)
        size += _md_size(diagram) + 2
    kept = 0
    for section in sections:
        rest = len(sections) - kept - 1
        pointer = _md_size(_md_left_out(rest, len(sections), artifact)) + 2 if rest else 0
        if size + _md_size(section) + 2 + pointer > limit:
            break
        size += _md_size(section) + 2
        kept += 1
    tail = [_md_left_out(len(sections) - kept, len(sections), artifact)] if kept < len(sections) else []
    return "\n\n".join([*head, *sections[:kept], *tail]) + "\n"
