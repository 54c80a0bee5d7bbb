"""Live tables -> spec files (`delta-sync import`). Pure: turns a read Table into YAML text.

What is written is exactly what the planner compares, so `plan` right after `import` is empty:
canonical types, NOT NULL (including NOT NULL kept by delta-sync's CHECK), comments, defaults,
generated and identity columns, CHECKs, partitioning or clustering, and the properties a user
sets. Properties Delta writes itself are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from delta_sync.model import keys
from delta_sync.model.state import ForeignKey, PrimaryKey, Table, TableName, View
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.diff.conventions import NOT_NULL_PREFIX, property_value_key
from delta_sync.planning.team_policy import PROTECTED_PROPERTY
from delta_sync.specs.spec_values import references_text
from delta_sync.specs.variables import escape_vars
from delta_sync.sql import expressions

# Keys Delta (or delta-sync's own features) write, which a user never declares.
_DELTA_WRITTEN = (
    "delta.feature.",
    "delta.constraints.",
    "delta.columnmapping.maxcolumnid",
    "delta.rowtracking.materialized",
    "delta.lastcommittimestamp",
    "delta.lastupdateversion",
    "delta.minreaderversion",
    "delta.minwriterversion",
    # Written by DROP FEATURE of a reader feature (the history before this version still uses it).
    "delta.requirecheckpointprotectionbeforeversion",
    "clusteringcolumns",
    # A key property that does not read as a key: the spec declares keys under primary_key: /
    # foreign_keys:, and an apply of a declared key writes it anew.
    keys.PRIMARY_KEY_PROPERTY,
    keys.FOREIGN_KEY_PREFIX,
    # Written as protect: true, from which the plan sets it.
    PROTECTED_PROPERTY,
)


def user_properties(table: Table) -> dict[str, str]:
    kept = {k: v for k, v in table.properties if not k.lower().startswith(_DELTA_WRITTEN)}
    # A removable feature whose switch is off stays named: the switch alone would plan DROP FEATURE.
    present = protocol.named_features(table)
    for key, value in list(kept.items()):
        feature = protocol.feature_of_property(key, value)
        if feature is not None and feature in present and feature in protocol.REMOVABLE_FEATURES:
            kept[f"{protocol.FEATURE_PREFIX}{feature}"] = "supported"
    return kept


def spec_data(table: Table, defaults: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The spec of `table` as plain data, keys in the order users read them; a property equal to the
    project's default (`defaults`) is left out, and a default the table does not have is opted out of (null)."""
    enforced = {c.name for c in table.checks if c.name.startswith(NOT_NULL_PREFIX)}
    columns = []
    for col in table.columns:
        entry: dict[str, Any] = {"name": col.name, "type": col.type}
        if not col.nullable or col.not_null_by_check:
            entry["nullable"] = False
        if col.comment is not None:
            entry["comment"] = col.comment
        if col.default is not None:
            entry["default"] = col.default
        if col.generated is not None:
            entry["generated"] = col.generated
        if col.identity is not None:
            entry["identity"] = {"start": col.identity.start, "step": col.identity.step, "always": col.identity.always}
        columns.append(entry)
    data: dict[str, Any] = {"table": str(table.name)}
    if table.property_map.get(PROTECTED_PROPERTY, "").lower() == "true":
        data["protect"] = True
    if table.comment is not None:
        data["comment"] = table.comment
    if table.location is not None:
        data["location"] = table.location
    data["columns"] = columns
    if table.primary_key is not None:
        data["primary_key"] = _primary_key(table.name, table.primary_key)
    if table.foreign_keys:
        data["foreign_keys"] = [_foreign_key(table.name, fk) for fk in table.foreign_keys]
    checks = {c.name: _readable(c.expression) for c in table.checks if c.name not in enforced}
    if checks:
        data["checks"] = checks
    if table.partitioned_by:
        data["partitioned_by"] = list(table.partitioned_by)
    if table.clustered_by:
        data["clustered_by"] = list(table.clustered_by)
    properties = without_defaults(user_properties(table), defaults or {})
    if properties:
        data["properties"] = properties
    return data


def _primary_key(table: TableName, key: PrimaryKey) -> list[str] | dict[str, Any]:
    # The short form reads back with the default name: write it whenever that is the key's name.
    if key.name == keys.primary_key_name(table, key.columns):
        return list(key.columns)
    return {"name": key.name, "columns": list(key.columns)}


def _foreign_key(table: TableName, key: ForeignKey) -> dict[str, Any]:
    entry: dict[str, Any] = {"columns": list(key.columns), "references": references_text(key.table, key.references)}
    if key.name != keys.foreign_key_name(table, key.columns, key.table):
        entry["name"] = key.name
    return entry


def _readable(expression: str) -> str:
    try:
        return expressions.readable(expression)
    except expressions.ExpressionError:
        return expression  # written by another engine in a form not ours to re-space: keep it


def view_spec_data(view: View) -> dict[str, Any]:
    """A view's spec: its query as Spark stored it, its comment, and its columns only when one has a comment
    (else the query names them); `protect: true` when the view carries the mark."""
    data: dict[str, Any] = {"view": str(view.name)}
    if view.marked:
        data["protect"] = True
    if view.comment is not None:
        data["comment"] = view.comment
    data["sql"] = view.sql
    if any(c.comment is not None for c in view.columns or ()):
        data["columns"] = [
            {"name": c.name, **({"comment": c.comment} if c.comment is not None else {})} for c in view.columns or ()
        ]
    return data


def without_defaults(properties: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str | None]:
    """`properties` as a spec writes them over the project's `defaults:`: what the default gives is left out
    (the plan compares values as it does), a default the table lacks is null (the table opts out)."""
    have = {key.lower(): value for key, value in properties.items()}
    wanted = {key.lower(): value for key, value in defaults.items()}
    kept: dict[str, str | None] = {
        key: value
        for key, value in properties.items()
        if key.lower() not in wanted or property_value_key(key, value) != property_value_key(key, wanted[key.lower()])
    }
    kept.update({key: None for key in defaults if key.lower() not in have})
    return kept


def spec_text(found: Table | View, defaults: Mapping[str, str] | None = None) -> str:
    kind = "view" if isinstance(found, View) else "table"
    header = f"# Imported from the live {kind} {found.name} by delta-sync import.\n"
    data = view_spec_data(found) if isinstance(found, View) else spec_data(found, defaults)
    # Live text holding `${name}` is written `$${name}`, which a spec reads back as the same text.
    body = yaml.safe_dump(escape_vars(data), sort_keys=False, allow_unicode=True, width=1000)
    # In fmt's layout, so that `fmt --check` of a file just imported is clean. Imported here: ruamel.yaml costs
    # every command that reads the catalog ~15 ms of start-up, and only import writes.
    from delta_sync.specs.fmt import format_text

    return format_text(header + body, f"{found.name}")


def spec_path(root: Path, name: TableName) -> Path:
    """One file per table, in a folder per schema (and per catalog when one is named)."""
    parts = [p for p in (name.catalog, name.schema) if p]
    return root.joinpath(*parts, f"{name.name}.yaml")
