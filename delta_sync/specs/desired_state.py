"""One read spec document -> the Table, View or tombstone it declares, and the checks across files
that the desired CatalogState must pass: foreign keys against the tables they reference, table renames
against the names other specs declare, views that read themselves through other views. `with_project`
adds what the project file says of every table: its `defaults:` properties and its `ignore:` patterns. Key names default
here (model.keys) and are checked against the CHECKs', which share their namespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pydantic import ValidationError

from delta_sync.model import keys
from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import (
    Allow,
    CatalogState,
    Check,
    Column,
    ForeignKey,
    Identity,
    Origin,
    PrimaryKey,
    Table,
    TableName,
    View,
    ViewColumn,
    ignored_by,
)
from delta_sync.planning.team_policy import PROTECTED_PROPERTY
from delta_sync.specs.entry_checks import _check_checks, _check_columns, _check_keys
from delta_sync.specs.spec_models import TableSpec, ViewSpec, pydantic_problem
from delta_sync.specs.spec_values import _canonical_type, parse_references, references_text
from delta_sync.specs.yamldoc import Doc, kind_of
from delta_sync.sql import queries as viewsql


def _tombstone(doc: Doc, problems: list[SpecProblem], kind: str = "table") -> TableName | None:
    """`table: x` (or `view: x`) + `drop: true` and nothing else: a tombstone names what it drops, no more."""
    found = len(problems)
    for key in doc.data:
        if key not in (kind, "drop"):
            hint = f"a tombstone (drop: true) holds only {kind}: and drop: true; remove the rest"
            problems.append(doc.problem((key,), f"unknown key `{key}` in a tombstone", hint))
    if doc.data.get("drop") is not True:
        hint = f"write drop: true to drop the {kind}, or remove drop: to declare it"
        problems.append(doc.problem(("drop",), f"`drop` must be true, got {kind_of(doc.data.get('drop'))}", hint))
    text = doc.data.get(kind)
    if not isinstance(text, str):
        hint = f"write `{kind}: schema.name`, the {kind} to drop"
        if kind in doc.data:
            problems.append(doc.problem((kind,), f"`{kind}` must be text, got {kind_of(text)}", hint))
        else:
            problems.append(doc.problem((), f"missing required key `{kind}`", hint))
        return None
    try:
        name = TableName.parse(text)
    except ValueError as exc:
        problems.append(doc.problem((kind,), str(exc), f"e.g. {kind}: sales.orders_tmp"))
        return None
    return name if len(problems) == found else None


def _view(doc: Doc, problems: list[SpecProblem]) -> View | None:
    try:
        spec = ViewSpec.model_validate(doc.data)
    except ValidationError as exc:
        problems.extend(pydantic_problem(doc, error, ViewSpec) for error in exc.errors())
        return None
    columns = None
    if spec.columns is not None:
        seen: dict[str, int] = {}
        for index, column in enumerate(spec.columns):
            first = seen.setdefault(column.name.lower(), index)
            if first != index:
                message = f"column `{column.name}` is listed twice"
                problems.append(doc.problem(("columns", index, "name"), message, "give each column its own name"))
                return None
        columns = tuple(ViewColumn(c.name, c.comment or None) for c in spec.columns)
    return View(
        TableName.parse(spec.view),
        spec.sql.strip(),
        spec.comment or None,
        columns,
        Origin(doc.file, doc.line("view")),
        protected=Origin(doc.file, doc.line("protect")) if spec.protect else None,
    )


def _check_view_cycles(views: Mapping[TableName, View]) -> list[SpecProblem]:
    """A view may read other views of the specs, never itself through them."""
    problems: list[SpecProblem] = []
    reads = {name: viewsql.read_tables(view.sql) & set(views) for name, view in views.items()}
    for name in sorted(views):
        seen: set[TableName] = set()
        stack = list(reads[name])
        while stack:
            other = stack.pop()
            if other == name:
                origin = views[name].origin
                where = (origin.file, origin.line) if origin else ("", 0)
                hint = "a view cannot read itself, directly or through other views"
                problems.append(SpecProblem(*where, f"view `{name}` reads itself through the views it reads", hint))
                break
            if other not in seen:
                seen.add(other)
                stack.extend(reads.get(other, ()))
    return problems


def _check_table_renames(tables: Mapping[TableName, Table], dropped: Mapping[TableName, Origin]) -> list[SpecProblem]:
    """A previous name is a table that no other spec declares, and that only one table was renamed from."""
    problems: list[SpecProblem] = []
    sources: dict[TableName, Table] = {}
    for table in sorted(tables.values(), key=lambda t: t.name):
        old = table.renamed_from
        if old is None or table.origin is None:
            continue
        where = (table.origin.file, table.origin.line)
        if old == table.name:
            problems.append(SpecProblem(*where, f"table `{table.name}` is renamed from itself", "remove renamed_from:"))
        elif old.schema_name != table.name.schema_name:
            # Spark's session catalog refuses it (RENAME TABLE source and destination databases do not match).
            hint = f"rename within `{old.schema_name}` here, and move the table to another schema by hand"
            problems.append(SpecProblem(*where, f"renamed_from `{old}` is in another schema", hint))
        elif old in tables or old in dropped:
            other = tables[old].origin if old in tables else dropped[old]
            hint = "a table renamed from it cannot also be declared: remove renamed_from: or that spec"
            problems.append(SpecProblem(*where, f"renamed_from `{old}` is declared at {other}", hint))
        elif old in sources:
            hint = "only one table can be renamed from it; keep renamed_from: in one spec"
            problems.append(SpecProblem(*where, f"`{old}` is also renamed to `{sources[old].name}`", hint))
        else:
            sources[old] = table
    return problems


def _table(doc: Doc, problems: list[SpecProblem]) -> Table | None:
    found = len(problems)
    spec: TableSpec | None = None
    try:
        spec = TableSpec.model_validate(doc.data)
    except ValidationError as exc:
        # Non-text keys are already reported, with their YAML spelling, by _construct.
        problems.extend(
            pydantic_problem(doc, error)
            for error in exc.errors()
            if error["type"] != "invalid_key" and not (error["type"] == "string_type" and error["loc"][-1] == "[key]")
        )
    # The checks across entries read the raw data, so they report even when the shape is wrong.
    column_lines = doc.child_lines("columns")
    columns = _check_columns(doc, column_lines, problems)
    _check_checks(doc, problems)
    _check_keys(doc, columns, problems)
    if spec is None or len(problems) > found:
        return None
    name = TableName.parse(spec.table)
    primary_key = _primary_key(doc, spec, name, columns)
    foreign_keys = _foreign_keys(doc, spec, name, columns)
    _check_key_names(doc, spec, primary_key, foreign_keys, problems)
    if len(problems) > found:
        return None
    check_lines = doc.child_lines("checks")
    protected = Origin(doc.file, doc.line("protect")) if spec.protect else None
    # The table itself carries its protection, so that a later plan without the spec still knows it.
    marked = [(PROTECTED_PROPERTY, "true")] if protected is not None else []
    return Table(
        name=name,
        columns=tuple(
            Column(
                name=c.name,
                type=_canonical_type(c.type),
                nullable=c.nullable,
                comment=c.comment or None,
                default=c.default,
                generated=c.generated,
                identity=(
                    Identity(start=c.identity.start, step=c.identity.step, always=c.identity.always)
                    if c.identity is not None
                    else None
                ),
                origin=Origin(doc.file, column_lines[i]),
                renamed_from=c.renamed_from,
                backfill=c.backfill,
                using=c.using,
            )
            for i, c in enumerate(spec.columns)
        ),
        comment=spec.comment or None,
        checks=tuple(
            sorted(
                (
                    Check(name=name.lower(), expression=text, origin=Origin(doc.file, check_lines[name]))
                    for name, text in spec.checks.items()
                ),
                key=lambda check: check.name,
            )
        ),
        partitioned_by=tuple(columns[p.lower()] for p in spec.partitioned_by),
        clustered_by=tuple(columns[c.lower()] for c in spec.clustered_by),
        properties=tuple(sorted([*((k, v) for k, v in spec.properties.items() if v is not None), *marked])),
        removed_properties=tuple(sorted(k for k, v in spec.properties.items() if v is None)),
        origin=Origin(doc.file, doc.line("table")),
        primary_key=primary_key,
        foreign_keys=foreign_keys,
        location=spec.location or None,
        renamed_from=TableName.parse(spec.renamed_from) if spec.renamed_from else None,
        protected=protected,
        allows=tuple(
            Allow(kind, target.strip(), Origin(doc.file, doc.line("allow", i)))
            for i, entry in enumerate(spec.allow)
            for kind, target in entry.items()
        ),
    )


def _primary_key(doc: Doc, spec: TableSpec, table: TableName, columns: dict[str, str]) -> PrimaryKey | None:
    if spec.primary_key is None:
        return None
    key_columns = tuple(columns[c.lower()] for c in spec.primary_key.columns)
    name = spec.primary_key.name or keys.primary_key_name(table, key_columns)
    return PrimaryKey(name.lower(), key_columns, Origin(doc.file, doc.line("primary_key")))


def _foreign_keys(doc: Doc, spec: TableSpec, table: TableName, columns: dict[str, str]) -> tuple[ForeignKey, ...]:
    found = []
    for i, fk in enumerate(spec.foreign_keys):
        parent, references = parse_references(fk.references)
        key_columns = tuple(columns[c.lower()] for c in fk.columns)
        name = fk.name or keys.foreign_key_name(table, key_columns, parent)
        found.append(
            ForeignKey(name.lower(), key_columns, parent, references, Origin(doc.file, doc.line("foreign_keys", i)))
        )
    # In name order, as they are read back from the catalog.
    return tuple(sorted(found, key=lambda fk: fk.name))


def _check_key_names(
    doc: Doc,
    spec: TableSpec,
    primary_key: PrimaryKey | None,
    foreign_keys: tuple[ForeignKey, ...],
    problems: list[SpecProblem],
) -> None:
    """Key names are one namespace with the CHECKs' (a catalog with key constraints keeps them together)."""
    taken = {name.lower(): f"check `{name}` (line {doc.line('checks', name)})" for name in spec.checks}
    declared: list[PrimaryKey | ForeignKey] = [primary_key] if primary_key is not None else []
    for key in (*declared, *sorted(foreign_keys, key=lambda fk: _line_of(fk.origin))):
        line = _line_of(key.origin)
        if key.name in taken:
            message = f"key name `{key.name}` is already used by {taken[key.name]}"
            hint = "give the key another name: name: ..."
            problems.append(SpecProblem(doc.file, line, message, hint))
        else:
            kind = "primary key" if isinstance(key, PrimaryKey) else "foreign key"
            taken[key.name] = f"the {kind} at line {line}"


def _line_of(origin: Origin | None) -> int:
    return origin.line if origin is not None else 0


def _check_references(tables: Mapping[TableName, Table]) -> list[SpecProblem]:
    """Foreign keys against the tables they reference, where those are declared in the specs too."""
    problems: list[SpecProblem] = []
    for table in tables.values():
        for fk in table.foreign_keys:
            parent = tables.get(fk.table)
            if parent is not None and fk.origin is not None:
                problems.extend(
                    SpecProblem(fk.origin.file, fk.origin.line, message, hint)
                    for message, hint in _reference_problems(table, fk, parent)
                )
    return sorted(problems, key=lambda p: (p.file, p.line))


def _reference_problems(table: Table, fk: ForeignKey, parent: Table) -> list[tuple[str, str]]:
    where = f" ({parent.origin})" if parent.origin is not None and parent.origin.file != _file_of(fk) else ""
    label = f"foreign key `{fk.name}`"
    if parent.primary_key is None:
        hint = f"declare primary_key: [{', '.join(fk.references)}] in the spec of `{parent.name}`{where}"
        return [(f"{label}: `{parent.name}` declares no primary key", hint)]
    pk = parent.primary_key
    if not keys.same_columns(fk.references, pk.columns):
        wanted, written = ", ".join(pk.columns), ", ".join(fk.references)
        message = f"{label} references ({written}) of `{parent.name}`, not its primary key ({wanted})"
        hint = f'reference the primary key in its order: references: "{references_text(parent.name, pk.columns)}"'
        return [(message, hint)]
    found = []
    for mine, theirs in zip(fk.columns, pk.columns, strict=True):
        have, want = table.column(mine), parent.column(theirs)
        if have is not None and want is not None and have.type != want.type:
            message = f"{label}: column `{mine}` is {have.type}, but `{parent.name}.{want.name}` is {want.type}"
            hint = f"declare `{mine}` as {want.type}: a key matches only values of the same type"
            found.append((message, hint))
    return found


def _file_of(fk: ForeignKey) -> str | None:
    return fk.origin.file if fk.origin is not None else None


def with_project(state: CatalogState, defaults: Mapping[str, str], ignore: Sequence[str] = ()) -> CatalogState:
    """The specs' desired state as the project makes it: each table gets the `defaults:` properties its
    spec does not set itself (a key the spec sets, or declares null, is the spec's), and the `ignore:`
    patterns travel with it for the planner. A spec that names an ignored table is a problem at its line:
    another tool manages that table. The one place defaults are merged (plan, apply, saved plans, the
    library and validate all read the specs through it)."""
    problems = _ignored_problems(state, ignore)
    if problems:
        raise SpecError(problems)
    if defaults:
        state = replace(state, tables={name: _with_defaults(t, defaults) for name, t in state.tables.items()})
    return replace(state, ignore=tuple(ignore)) if ignore else state


def _with_defaults(table: Table, defaults: Mapping[str, str]) -> Table:
    declared = {key.lower() for key, _v in table.properties} | {key.lower() for key in table.removed_properties}
    added = [(key, value) for key, value in defaults.items() if key.lower() not in declared]
    if not added:
        return table
    return replace(
        table,
        properties=tuple(sorted((*table.properties, *added))),
        defaulted=tuple(sorted(key for key, _v in added)),
    )


def _ignored_problems(state: CatalogState, ignore: Sequence[str]) -> list[SpecProblem]:
    if not ignore:
        return []
    named: list[tuple[str, TableName, Origin | None]] = [
        *(("table", t.name, t.origin) for t in state.tables.values()),
        *(("renamed_from", t.renamed_from, t.origin) for t in state.tables.values() if t.renamed_from is not None),
        *(("view", v.name, v.origin) for v in state.views.values()),
        *(("tombstone", name, origin) for name, origin in state.dropped.items()),
    ]
    problems = []
    for kind, name, origin in named:
        pattern = ignored_by(name, ignore)
        if pattern is None:
            continue
        said = "the table it is renamed from" if kind == "renamed_from" else f"{kind}"
        message = (
            f"{said} `{name}` matches `{pattern}` under ignore: in delta-sync.yaml: another tool manages it, "
            "so no spec may name it"
        )
        hint = "remove this spec, or the pattern from ignore: if delta-sync is to manage it"
        where = (origin.file, origin.line) if origin is not None else ("", 0)
        problems.append(SpecProblem(*where, message, hint))
    return sorted(problems, key=lambda p: (p.file, p.line))
