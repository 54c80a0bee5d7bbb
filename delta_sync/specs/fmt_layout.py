"""The canonical layout of a spec file (see delta_sync.specs.fmt): the order of the keys at each level, from
the README and the spec models, and column types in the loader's spelling; and the check that a rewritten
text still means what the old one did (the same data, key order and type spelling aside, and the same
comments) before anything is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import yaml
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import ScalarString

from delta_sync.specs.fmt_yaml import _BUG, _STR, _problem, _Read, _Verbatim
from delta_sync.specs.spec_models import ColumnSpec, ForeignKeySpec, IdentitySpec, PrimaryKeySpec
from delta_sync.sql import types as sqltypes

# The README's order ("The spec format"): what the table is, its columns and rules, then its layout and
# properties. TableSpec declares the same keys (tests hold the two together) in another order.
TABLE_KEYS = (
    "table",
    "renamed_from",
    "protect",
    "comment",
    "location",
    "columns",
    "checks",
    "primary_key",
    "foreign_keys",
    "partitioned_by",
    "clustered_by",
    "properties",
    "allow",
    "lint",
)
VIEW_KEYS = ("view", "protect", "comment", "sql", "columns", "drop")
COLUMN_KEYS = tuple(ColumnSpec.model_fields)
IDENTITY_KEYS = tuple(IdentitySpec.model_fields)
PRIMARY_KEY_KEYS = tuple(PrimaryKeySpec.model_fields)
FOREIGN_KEY_KEYS = tuple(ForeignKeySpec.model_fields)


def _reorder(mapping: CommentedMap, order: Sequence[str]) -> None:
    rank = {key: i for i, key in enumerate(order)}
    keys = list(mapping)
    wanted = sorted(keys, key=lambda key: rank.get(key, len(order)) if isinstance(key, str) else len(order))
    if wanted != keys:
        for key in wanted:
            mapping.move_to_end(key)


def _canonical_type(value: Any) -> Any:
    """A column's type in the loader's spelling, as the same kind of scalar (quoted stays quoted)."""
    if not isinstance(value, str) or isinstance(value, _Verbatim) or "$" in value:
        return value
    try:
        canonical = sqltypes.parse_type(value)
    except sqltypes.TypeSyntaxError:
        return value
    if canonical == value:
        return value
    if isinstance(value, ScalarString):
        return type(value)(canonical)
    return canonical


def _canonicalise(data: CommentedMap) -> None:
    _reorder(data, VIEW_KEYS if "view" in data and "table" not in data else TABLE_KEYS)
    columns = data.get("columns")
    for column in columns if isinstance(columns, CommentedSeq) else ():
        if isinstance(column, CommentedMap):
            _reorder(column, COLUMN_KEYS)
            if "type" in column:
                column["type"] = _canonical_type(column["type"])
            identity = column.get("identity")
            if isinstance(identity, CommentedMap):
                _reorder(identity, IDENTITY_KEYS)
    primary_key = data.get("primary_key")
    if isinstance(primary_key, CommentedMap):
        _reorder(primary_key, PRIMARY_KEY_KEYS)
    foreign_keys = data.get("foreign_keys")
    for foreign_key in foreign_keys if isinstance(foreign_keys, CommentedSeq) else ():
        if isinstance(foreign_key, CommentedMap):
            _reorder(foreign_key, FOREIGN_KEY_KEYS)


def _check_unchanged(before: _Read, after: _Read, source: str) -> None:
    """The rewritten text holds the same data (key order and type spelling aside) and the same comments."""
    meaning = _Meaning()
    old, new = meaning.of(before.root, ()), meaning.of(after.root, ())
    if old != new:
        line = next(
            (k.start_mark.line + 1 for k, v in before.root.value if new.get(meaning.scalar(k)) != meaning.of(v, (k,))),
            1,
        )
        raise _problem(source, line, "fmt would change what this entry means", _BUG)
    written = Counter(r.text for r in after.remarks if r.text)
    for remark in before.remarks:
        if remark.text and written[remark.text] <= 0:
            raise _problem(source, remark.line + 1, "fmt would lose this comment", _BUG)
        written[remark.text] -= 1


class _Meaning:
    """What the loader reads from a node: scalars by their tag and value, mappings whatever their order,
    column types in their canonical spelling."""

    def __init__(self) -> None:
        self.constructor = yaml.constructor.SafeConstructor()

    def of(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        if isinstance(node, yaml.MappingNode):
            return {self.scalar(k): self.of(v, (*path, k)) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [self.of(item, (*path, i)) for i, item in enumerate(node.value)]
        if _is_column_type(path) and node.tag == _STR:
            return _STR, _canonical_type(node.value)
        return self.scalar(node)

    def scalar(self, node: yaml.Node) -> tuple[str, str]:
        if node.tag == _STR or not isinstance(node, yaml.ScalarNode):
            return node.tag, str(node.value)
        try:
            return node.tag, repr(self.constructor.construct_object(node))
        except Exception:  # (_check_nodes let only readable values through)
            return node.tag, node.value


def _is_column_type(path: tuple[Any, ...]) -> bool:
    if len(path) != 3 or not isinstance(path[1], int):
        return False
    table_key, type_key = path[0], path[2]
    return (
        isinstance(table_key, yaml.ScalarNode)
        and isinstance(type_key, yaml.ScalarNode)
        and (table_key.tag, table_key.value, type_key.tag, type_key.value) == (_STR, "columns", _STR, "type")
    )
