"""Which statements given to `delta-sync sql` delete or overwrite rows or objects, so that they are confirmed
first. Pure.

The judgement reads Spark's parse of the statement, made without running it (delta_sync/spark/statement_kind.py):
the nodes of its parsed logical plan, each named by its class and carrying the few facts that tell a harmless
form from a destructive one (a DELETE with or without WHERE, a MERGE with or without a DELETE clause). Words are
read only where no parser can: on Spark Connect, for the statements that EXPLAIN does not take (`unparsed_nodes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise


class Flag(StrEnum):
    """A fact about one parsed node that decides whether it destroys anything."""

    WHERE = "where"  # DELETE or UPDATE limited by a condition (not the `true` the parser puts for no WHERE)
    OVERWRITE = "overwrite"  # INSERT OVERWRITE or INSERT ... REPLACE USING/ON, LOAD DATA ... OVERWRITE
    REPLACE = "replace"  # CREATE OR REPLACE of a view, a function, a clone
    DELETES = "deletes"  # a MERGE with a WHEN ... THEN DELETE clause
    BY_SOURCE = "by-source"  # a MERGE with a WHEN NOT MATCHED BY SOURCE clause
    BY_SOURCE_UNKNOWN = "by-source-unknown"  # a MERGE whose plan text cannot show where its UPDATE clauses stand
    DRY_RUN = "dry-run"  # VACUUM ... DRY RUN, which only lists
    DYNAMIC = "dynamic"  # EXECUTE IMMEDIATE of a statement known only when it runs
    UNPARSED = "unparsed"  # a SQL script that could not be parsed ahead


@dataclass(frozen=True, slots=True)
class Node:
    """One node of a statement's parsed plan: its class name (`DeleteFromTable`) and the facts that matter."""

    kind: str
    flags: frozenset[Flag] = frozenset()


_DROP_CONSTRAINT = "ALTER TABLE ... DROP CONSTRAINT removes the constraint"
_REPLACE_TABLE = "REPLACE TABLE replaces the table and discards its rows"

# Destructive whatever their arguments.
_ALWAYS = {
    "TruncateTable": "TRUNCATE TABLE removes every row",
    "TruncatePartition": "TRUNCATE TABLE ... PARTITION removes the partition's rows",
    "DropTable": "DROP TABLE removes the table (and a managed table's data)",
    "DropView": "DROP VIEW removes the view",
    "DropNamespace": "DROP SCHEMA removes the schema (with CASCADE, its tables and their data)",
    "DropFunction": "DROP FUNCTION removes the function",
    "DropIndex": "DROP INDEX removes the index",
    "DropColumns": "ALTER TABLE ... DROP COLUMN removes the column and its values",
    "DropPartitions": "ALTER TABLE ... DROP PARTITION removes the partition",
    "AlterTableDropConstraint": _DROP_CONSTRAINT,
    # Spark's own name for it: EXPLAIN (on Spark Connect) parses with Spark's grammar, not Delta's.
    "DropConstraint": _DROP_CONSTRAINT,
    "AlterTableDropFeature": "ALTER TABLE ... DROP FEATURE removes a table feature (TRUNCATE HISTORY, older history)",
    "ReplaceColumns": "ALTER TABLE ... REPLACE COLUMNS drops every column it does not list",
    "ReplaceTable": _REPLACE_TABLE,
    "ReplaceTableAsSelect": _REPLACE_TABLE,
    "OverwriteByExpression": "INSERT ... REPLACE WHERE replaces the rows the condition matches",
    "RestoreTableStatement": "RESTORE rolls the table back, undoing every commit since that version",
}

_OVERWRITES = {
    "InsertIntoStatement": "INSERT OVERWRITE (or INSERT ... REPLACE) replaces rows of the table",
    "InsertIntoDir": "INSERT OVERWRITE DIRECTORY replaces the files in the directory",
    "LoadData": "LOAD DATA ... OVERWRITE replaces the table's rows",
}

_REPLACES = {
    "CreateView": "CREATE OR REPLACE VIEW replaces the view",
    "CreateFunction": "CREATE OR REPLACE FUNCTION replaces the function",
    "CreateUserDefinedFunction": "CREATE OR REPLACE FUNCTION replaces the function",
    "CloneTableStatement": "CREATE OR REPLACE TABLE ... CLONE replaces the table and discards its rows",
}


def _reason(node: Node) -> str | None:
    if node.kind in _ALWAYS:
        return _ALWAYS[node.kind]
    flags = node.flags
    match node.kind:
        case "DeleteFromTable" if Flag.WHERE not in flags:
            return "DELETE without WHERE removes every row"
        case "UpdateTable" if Flag.WHERE not in flags:
            return "UPDATE without WHERE changes every row"
        case "MergeIntoTable" if Flag.BY_SOURCE in flags:
            return (
                "MERGE ... WHEN NOT MATCHED BY SOURCE changes or removes every row the source does not name "
                "(all of them if the source is empty)"
            )
        case "MergeIntoTable" if Flag.DELETES in flags:
            return "MERGE ... THEN DELETE removes rows"
        case "MergeIntoTable" if Flag.BY_SOURCE_UNKNOWN in flags:
            return (
                "MERGE that updates rows: through Spark Connect its plan does not show whether an UPDATE is "
                "WHEN NOT MATCHED BY SOURCE, which changes every row the source does not name"
            )
        case "InsertIntoStatement" | "InsertIntoDir" | "LoadData" if Flag.OVERWRITE in flags:
            return _OVERWRITES[node.kind]
        case "CreateView" | "CreateFunction" | "CreateUserDefinedFunction" | "CloneTableStatement" if (
            Flag.REPLACE in flags
        ):
            return _REPLACES[node.kind]
        case "VacuumTableCommand" if Flag.DRY_RUN not in flags:
            return "VACUUM deletes the files that older versions need, so time travel to them is lost"
        case "UnresolvedExecuteImmediate" if Flag.DYNAMIC in flags:
            return "EXECUTE IMMEDIATE runs a statement known only when it runs"
        case "CompoundBody" if Flag.UNPARSED in flags:
            return (
                "a SQL script (BEGIN ... END) cannot be parsed ahead through Spark Connect: what it changes is unknown"
            )
    return None


def danger(nodes: Iterable[Node]) -> str | None:
    """Why the statement whose parsed plan holds `nodes` deletes or overwrites rows or objects, or None."""
    for node in nodes:
        reason = _reason(node)
        if reason is not None:
            return reason
    return None


# Strings, quoted names and comments carry no keywords: they are blanked before the words are read.
_INERT = re.compile(
    r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/""",
    re.DOTALL,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[()]")


def _top_level_words(statement: str) -> list[str]:
    """Upper-cased keywords outside parentheses."""
    words: list[str] = []
    depth = 0
    for token in _WORD.findall(_INERT.sub(" ", statement)):
        if token == "(":
            depth += 1
        elif token == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            words.append(token.upper())
    return words


def _adjacent(words: list[str], first: str, second: str) -> bool:
    return any(a == first and b == second for a, b in pairwise(words))


def unparsed_nodes(statement: str) -> list[Node]:
    """The nodes a statement that EXPLAIN refused would parse to, read from its words (Spark Connect's one way to
    parse, EXPLAIN, parses with Spark's grammar, which has neither Delta's own commands nor SQL scripts): RESTORE,
    VACUUM, ALTER TABLE ... DROP FEATURE, CREATE OR REPLACE / REPLACE TABLE ... CLONE, BEGIN ... END. Empty for
    anything else, which Spark cannot parse either, or which destroys nothing (OPTIMIZE, DESCRIBE HISTORY)."""
    words = _top_level_words(statement)
    head = words[:1]
    if head == ["RESTORE"]:
        return [Node("RestoreTableStatement")]
    if head == ["VACUUM"]:
        return [
            Node("VacuumTableCommand", frozenset({Flag.DRY_RUN}) if _adjacent(words, "DRY", "RUN") else frozenset())
        ]
    if words[:2] == ["ALTER", "TABLE"] and _adjacent(words, "DROP", "FEATURE"):
        return [Node("AlterTableDropFeature")]
    if (words[:3] == ["CREATE", "OR", "REPLACE"] or head == ["REPLACE"]) and "CLONE" in words:
        return [Node("CloneTableStatement", frozenset({Flag.REPLACE}))]
    if head == ["BEGIN"]:
        return [Node("CompoundBody", frozenset({Flag.UNPARSED}))]
    return []
