"""The live state written back into a spec file (`delta-sync adopt`). Pure: a spec file's text and the live
table or view in, the new text out.

Only what `plan` would change is edited, each part as the planner compares it: the table comment, each
column's type, nullability, comment, default, generation and identity, columns added or dropped by hand,
the CHECKs, the keys, the partitioning and clustering, the properties the spec or the project's `defaults:`
name (a property neither names is never planned, so never adopted; one equal to its default is left to the
default, and a default the table lacks is opted out of with `null`), and a view's query, comment and
columns. A key whose value is the same in meaning is left as written (`BIGINT` stays `BIGINT`), and the new
values are written where the file has them, with their quoting style, through ruamel.yaml's round-trip mode
(as `fmt` does): comments, key order and layout stay. A value written with a `${var}` is never replaced:
when the live value differs from what the var gives, it is reported at its line instead.

A file not in fmt's layout keeps its own: only the lines the edit changes are taken into it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString, ScalarString

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import CatalogState, Column, Table, View
from delta_sync.planning.actions import (
    TABLE_COMMENT_KEY,
    CreateSchema,
    EnableFeature,
    SetProperties,
    UnsetProperties,
)
from delta_sync.planning.diff import planner
from delta_sync.planning.diff.conventions import NOT_NULL_PREFIX, current_property, property_value_key, same_sql
from delta_sync.specs import importer, yamldoc
from delta_sync.specs.adopt_layout import keep_layout, read_doc
from delta_sync.specs.desired_state import _table, _view, _with_defaults
from delta_sync.specs.fmt_layout import COLUMN_KEYS, TABLE_KEYS, VIEW_KEYS
from delta_sync.specs.fmt_yaml import _round_trip_load, _Verbatim
from delta_sync.specs.variables import _for_environment, escape_vars
from delta_sync.sql import queries as viewsql


@dataclass(frozen=True, slots=True)
class Adoption:
    """One spec file before and after adopt, and what could not be adopted (`file:line: why`)."""

    source: str
    before: str
    after: str
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.after != self.before

    def diff(self) -> str:
        """The unified diff of the file, as `git diff` shows it."""
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            f"a/{self.source}",
            f"b/{self.source}",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def adopt_text(
    text: str,
    source: str,
    live: Table | View,
    vars: Mapping[str, str] | None = None,
    catalog: str | None = None,
    defaults: Mapping[str, str] | None = None,
    column_order: bool = True,
) -> Adoption:
    """The spec file `text` (at `source`) edited to describe `live`, under the environment's `vars`, catalog and
    table `defaults` (the project's `defaults:` as the environment merges them); the columns put in the live
    table's order unless the project does not manage it (`column_order`)."""
    raw = read_doc(text, source)
    problems: list[SpecProblem] = []
    filled = _for_environment(raw, vars or {}, catalog, None, problems)
    want = _view(filled, problems) if isinstance(live, View) else _table(filled, problems)
    if problems or want is None:
        raise SpecError(problems or [SpecProblem(source, 1, "this spec cannot be read", "run delta-sync validate")])
    data = _round_trip_load(text, source)
    editor = _Editor(raw, filled.data, source)
    if isinstance(live, View):
        assert isinstance(want, View)
        _adopt_view(editor, data, want, live)
    else:
        assert isinstance(want, Table)
        _adopt_table(editor, data, _with_defaults(want, defaults or {}), live, defaults or {}, column_order)
    if not editor.edited:
        return Adoption(source, text, text, tuple(editor.warnings))
    return Adoption(source, text, keep_layout(text, data, source), tuple(editor.warnings))


def remaining_changes(
    adoption: Adoption,
    live: Table | View,
    vars: Mapping[str, str],
    catalog: str | None,
    defaults: Mapping[str, str] | None = None,
    column_order: bool = True,
) -> int:
    """How many changes `plan` would still make to `live` after the adoption (0 when fully adopted), the
    project's table `defaults` merged in as plan merges them."""
    raw = read_doc(adoption.after, adoption.source)
    problems: list[SpecProblem] = []
    filled = _for_environment(raw, vars, catalog, None, problems)
    if isinstance(live, View):
        view = _view(filled, problems)
        if view is None:
            return 1
        current, desired = CatalogState({}, views={live.name: live}), CatalogState({}, views={view.name: view})
    else:
        table = _table(filled, problems)
        if table is None:
            return 1
        table = _with_defaults(table, defaults or {})
        current = CatalogState({live.name: live})
        desired = CatalogState({table.name: table}, column_order=column_order)
    current = replace(current, schemas=frozenset({live.name.schema_name}))
    return len([a for a in planner.plan(current, desired).changes if not isinstance(a, CreateSchema)])


# --- the editor -----------------------------------------------------------------------------------


@dataclass
class _Editor:
    """Edits of a round-trip document, each refused (and reported) where the value holds a `${var}`."""

    raw: yamldoc.Doc  # as written: where the vars are
    filled: dict[Any, Any]  # with the vars filled in
    source: str
    edited: bool = False
    warnings: list[str] = field(default_factory=list)

    def _written(self, loc: Sequence[Any]) -> Any:
        value: Any = self.raw.data
        for step in loc:
            found = isinstance(value, dict) and step in value
            if found or (isinstance(value, list) and isinstance(step, int) and step < len(value)):
                value = value[step]
            else:
                return None
        return value

    def _held_by_var(self, loc: Sequence[Any], live: Any) -> bool:
        written = self._written(loc)
        if not _has_var(written):
            return False
        shown = ".".join(str(step) for step in loc)
        self.warnings.append(
            f"{self.source}:{self.raw.line(*loc)}: {shown} is written `{_short(written)}` with a variable; the live "
            f"value is `{_short(live)}`: left as written (change the variable, or the line, by hand)"
        )
        return True

    def set(self, mapping: CommentedMap, key: Any, value: Any, loc: Sequence[Any], order: Sequence[str]) -> None:
        if self._held_by_var(loc, value):
            return
        value = _Verbatim("null") if value is None else escape_vars(value)  # `null`, where None writes nothing
        if key in mapping:
            mapping[key] = value if isinstance(value, _Verbatim) else _styled(mapping[key], value)
        else:
            _insert(mapping, key, _block(value), order)
        self.edited = True

    def delete(self, mapping: CommentedMap, key: Any, loc: Sequence[Any]) -> None:
        if key not in mapping or self._held_by_var(loc, None):
            return
        del mapping[key]
        self.edited = True


def _has_var(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value.replace("$${", "")
    if isinstance(value, dict):
        return any(_has_var(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_var(v) for v in value)
    return False


def _short(value: Any) -> str:
    text = "(none)" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _styled(old: Any, new: Any) -> Any:
    """`new` written as `old` was: in its quoting style, a boolean or number as one."""
    if isinstance(new, str):
        if isinstance(old, ScalarString):
            return type(old)(new)
        if isinstance(old, bool) and new.lower() in ("true", "false"):
            return new.lower() == "true"
        if isinstance(old, int) and not isinstance(old, bool) and new.lstrip("-").isdigit():
            return int(new)
        if "\n" in new:
            return LiteralScalarString(new)
        return new
    if isinstance(new, list) and isinstance(old, CommentedSeq):
        seq = _block(new)
        if old.fa.flow_style():
            seq.fa.set_flow_style()
        return seq
    return _block(new)


def _block(value: Any) -> Any:
    """Plain data as round-trip collections, in block style (fmt's layout for what is written new)."""
    if isinstance(value, dict):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[key] = _block(item)
        return mapping
    if isinstance(value, list):
        seq = CommentedSeq(_block(item) for item in value)
        if all(not isinstance(item, dict | list) for item in value):
            seq.fa.set_flow_style()  # `[a, b]`, as the README writes key lists
        return seq
    if isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    return value


def _insert(mapping: CommentedMap, key: Any, value: Any, order: Sequence[str]) -> None:
    """`key` put where fmt's order places it among the keys the mapping has."""
    rank = {k: i for i, k in enumerate(order)}
    mine = rank.get(key, len(order))
    position = len(mapping)
    for i, existing in enumerate(mapping):
        if rank.get(existing, len(order)) > mine:
            position = i
            break
    mapping.insert(position, key, value)


# --- a table --------------------------------------------------------------------------------------


def _adopt_table(
    editor: _Editor, data: CommentedMap, want: Table, live: Table, defaults: Mapping[str, str], column_order: bool
) -> None:
    new = importer.spec_data(live)
    if want.comment != live.comment:
        _set_or_delete(editor, data, "comment", new.get("comment"), ("comment",), TABLE_KEYS)
    _adopt_columns(editor, data, want, live, new["columns"], column_order)
    _adopt_checks(editor, data, want, live)
    if want.primary_key != live.primary_key:
        _set_or_delete(editor, data, "primary_key", new.get("primary_key"), ("primary_key",), TABLE_KEYS)
    if want.foreign_keys != live.foreign_keys:
        _set_or_delete(editor, data, "foreign_keys", new.get("foreign_keys"), ("foreign_keys",), TABLE_KEYS)
    for key, have, wanted in (
        ("partitioned_by", live.partitioned_by, want.partitioned_by),
        ("clustered_by", live.clustered_by, want.clustered_by),
    ):
        if [c.lower() for c in have] != [c.lower() for c in wanted]:
            _set_or_delete(editor, data, key, list(have) or None, (key,), TABLE_KEYS)
    if (want.protected is not None) != ("protect" in new):
        # The table's own mark of protection (planning.team_policy.PROTECTED_PROPERTY) is written as protect: true.
        _set_or_delete(editor, data, "protect", new.get("protect"), ("protect",), TABLE_KEYS)
    _adopt_properties(editor, data, want, live, defaults)


def _set_or_delete(
    editor: _Editor, mapping: CommentedMap, key: str, value: Any, loc: Sequence[Any], order: Sequence[str]
) -> None:
    if value is None:
        editor.delete(mapping, key, loc)
    else:
        editor.set(mapping, key, value, loc, order)


def _column_differs(want: Column, have: Column) -> dict[str, Callable[[], bool]]:
    return {
        "type": lambda: want.type != have.type,
        "nullable": lambda: want.nullable != (have.nullable and not have.not_null_by_check),
        "comment": lambda: want.comment != have.comment,
        "default": lambda: not same_sql(have.default, want.default),
        "generated": lambda: not same_sql(have.generated, want.generated),
        "identity": lambda: want.identity != have.identity,
    }


def _adopt_columns(
    editor: _Editor, data: CommentedMap, want: Table, live: Table, entries: list[dict[str, Any]], column_order: bool
) -> None:
    seq = data.get("columns")
    if not isinstance(seq, CommentedSeq):
        return
    names = [str(c.get("name", "")).lower() if isinstance(c, dict) else "" for c in editor.filled.get("columns", [])]
    wanted = {c.name.lower(): c for c in want.columns}
    live_names = {c.name.lower() for c in live.columns}
    # Columns dropped by hand go first (from the end, so that the indexes before them hold).
    for index in reversed(range(len(names))):
        if names[index] not in live_names and not editor._held_by_var(("columns", index, "name"), None):
            del seq[index]
            del names[index]
            editor.edited = True
    written = [str(c.get("name", "")).lower() if isinstance(c, dict) else "" for c in editor.filled["columns"]]
    for column, entry in zip(live.columns, entries, strict=True):
        key = column.name.lower()
        if key not in names:
            after = max(
                (names.index(c.name.lower()) for c in _before(live, key) if c.name.lower() in names), default=-1
            )
            seq.insert(after + 1, _block(escape_vars(entry)))
            names.insert(after + 1, key)
            editor.edited = True
            continue
        item = seq[names.index(key)]
        if not isinstance(item, CommentedMap):
            continue
        at = written.index(key)  # the index as written, where its lines are
        for name, differs in _column_differs(wanted[key], column).items():
            if differs():
                value = entry.get(name, True if name == "nullable" else None)
                _set_or_delete(editor, item, name, value, ("columns", at, name), COLUMN_KEYS)
    if column_order:
        _reorder(editor, seq, names, [c.name.lower() for c in live.columns])


def _reorder(editor: _Editor, seq: CommentedSeq, names: list[str], live: list[str]) -> None:
    """The column entries in the live table's order, each with the comment that follows it (ruamel keeps an
    entry's trailing comment by its index); entries the live table does not have keep their index."""
    placed = [name for name in live if name in names]
    slots = [i for i, name in enumerate(names) if name in placed]
    if [names[i] for i in slots] == placed:
        return
    items = {name: (seq[i], seq.ca.items.pop(i, None)) for i, name in enumerate(names) if name in placed}
    for slot, name in zip(slots, placed, strict=True):
        item, comment = items[name]
        seq[slot] = item
        if comment is not None:
            seq.ca.items[slot] = comment
        names[slot] = name
    editor.edited = True


def _before(table: Table, key: str) -> list[Column]:
    index = next(i for i, c in enumerate(table.columns) if c.name.lower() == key)
    return list(table.columns[:index])


def _adopt_checks(editor: _Editor, data: CommentedMap, want: Table, live: Table) -> None:
    have = {c.name: c for c in live.checks if not c.name.startswith(NOT_NULL_PREFIX)}
    wanted = {c.name: c for c in want.checks}
    if have.keys() == wanted.keys() and all(same_sql(have[n].expression, wanted[n].expression) for n in have):
        return
    readable = importer.spec_data(live).get("checks", {})
    checks = data.get("checks")
    if not isinstance(checks, CommentedMap):
        if readable:
            editor.set(data, "checks", readable, ("checks",), TABLE_KEYS)
        return
    spelled = {str(k).lower(): k for k in checks}
    for name in wanted:
        if name not in have:
            editor.delete(checks, spelled[name], ("checks", spelled[name]))
    for name, check in have.items():
        if name in wanted and same_sql(check.expression, wanted[name].expression):
            continue
        key = spelled.get(name, name)
        editor.set(checks, key, readable.get(name, check.expression), ("checks", key), ())
    if not checks:
        editor.delete(data, "checks", ("checks",))


def _adopt_properties(
    editor: _Editor, data: CommentedMap, want: Table, live: Table, defaults: Mapping[str, str]
) -> None:
    """The properties `plan` would change, written as the live table has them over the project's `defaults:`:
    a value equal to the default is left to it (never written), a default the table lacks is opted out of
    (`key: null`), any other live value is written, and a key the table lacks (with no default) is removed."""
    planned = _planned_properties(want, live)
    if not planned:
        return
    current = live.property_map
    default_of = {key.lower(): value for key, value in defaults.items()}
    declared = {key.lower(): key for key, _v in want.properties} | {key.lower(): key for key in want.removed_properties}
    properties = data.get("properties")
    spelled = {str(k).lower(): k for k in properties} if isinstance(properties, CommentedMap) else {}
    for lowered in sorted(planned):
        key = declared.get(lowered)
        if key is None:
            continue  # a feature another change needs, not a property the spec or the defaults name
        before = current_property(current, key)
        default = default_of.get(lowered)
        written = spelled.get(lowered)
        loc = ("properties", written if written is not None else key)
        if before is None:
            left_out = default is None  # with no default, the key goes; with one, the table opts out
        else:
            left_out = default is not None and property_value_key(key, before) == property_value_key(key, default)
        if left_out:
            if isinstance(properties, CommentedMap) and written is not None:
                editor.delete(properties, written, loc)
            continue
        if not isinstance(properties, CommentedMap):
            editor.set(data, "properties", {}, ("properties",), TABLE_KEYS)
            properties = data["properties"]
            assert isinstance(properties, CommentedMap)
            properties.fa.set_block_style()
        editor.set(properties, written if written is not None else key, before, loc, ())
    if isinstance(properties, CommentedMap) and not properties:
        editor.delete(data, "properties", ("properties",))


def _planned_properties(want: Table, live: Table) -> set[str]:
    """The property keys (lower case) `plan` would change on `live` to make it `want`."""
    current = CatalogState({live.name: live}, schemas=frozenset({live.name.schema_name}))
    keys: set[str] = set()
    for action in planner.plan(current, CatalogState({want.name: want})).changes:
        if isinstance(action, SetProperties):
            keys.update(c.key.lower() for c in action.changes if c.key != TABLE_COMMENT_KEY)
        elif isinstance(action, UnsetProperties):
            keys.update(key.lower() for key, _v in action.removed)
        elif isinstance(action, EnableFeature):
            keys.add(action.key.lower())
    return keys


# --- a view ---------------------------------------------------------------------------------------


def _adopt_view(editor: _Editor, data: CommentedMap, want: View, live: View) -> None:
    new = importer.view_spec_data(live)
    if viewsql.normalize(live.sql) != viewsql.normalize(want.sql):
        old = data.get("sql")
        # A `|` block ends its text with a line break: the new query too, so that it stays `|`, not `|-`.
        sql = live.sql.rstrip("\n") + "\n" if isinstance(old, str) and old.endswith("\n") else live.sql
        editor.set(data, "sql", sql, ("sql",), VIEW_KEYS)
    if want.comment != live.comment:
        _set_or_delete(editor, data, "comment", new.get("comment"), ("comment",), VIEW_KEYS)
    if want.columns is not None and want.columns != live.columns:
        _set_or_delete(editor, data, "columns", new.get("columns"), ("columns",), VIEW_KEYS)
    if (want.protected is not None) != live.marked:
        # The view's own mark of protection is written as protect: true, as a table's is.
        _set_or_delete(editor, data, "protect", new.get("protect"), ("protect",), VIEW_KEYS)


# --- the file's own layout ------------------------------------------------------------------------
