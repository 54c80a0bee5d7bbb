"""Engine errors -> sentences a user can act on. Pure: the Spark side extracts the error class,
its parameters and the first line of the message; this module words them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class EngineFailure:
    error_class: str | None
    message: str
    parameters: Mapping[str, str] = field(default_factory=dict)


# Optimistic-concurrency conflicts: another writer committed first. Retrying after a re-read is safe.
_CONFLICTS = ("DELTA_CONCURRENT_", "DELTA_METADATA_CHANGED", "DELTA_PROTOCOL_CHANGED")
_CONFLICT_NAMES = (
    "ConcurrentAppendException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
)

# The statement's effect is already there (or its target already gone): another apply of the same
# specs got there first. Re-reading and re-planning tells whether that is so.
_RACES = (
    "DELTA_CONSTRAINT_ALREADY_EXISTS",
    "DELTA_CONSTRAINT_DOES_NOT_EXIST",
    "TABLE_OR_VIEW_ALREADY_EXISTS",
    "DELTA_TABLE_ALREADY_EXISTS",
    "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
    "SCHEMA_ALREADY_EXISTS",
    "FIELD_ALREADY_EXISTS",
    "FIELDS_ALREADY_EXISTS",
    "DELTA_DUPLICATE_COLUMNS_FOUND",
    "DELTA_COLUMN_NOT_FOUND",
    "UNRESOLVED_COLUMN",
)


def is_race(failure: EngineFailure) -> bool:
    return failure.error_class is not None and failure.error_class.split(".")[0] in _RACES


def is_conflict(failure: EngineFailure) -> bool:
    if failure.error_class is not None and failure.error_class.startswith(_CONFLICTS):
        return True
    return any(name in failure.message for name in _CONFLICT_NAMES)


def describe(failure: EngineFailure, *, table: str = "", constraint: str = "") -> str:
    params = failure.parameters
    match failure.error_class:
        case "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION":
            rows = params.get("numRows", "some")
            plural = rows != "1"
            named = f"{constraint} " if constraint else ""
            return (
                f"{rows} existing row{'s' if plural else ''} in {table or params.get('tableName', '')} "
                f"violate{'' if plural else 's'} the new CHECK constraint {named}"
                f"({params.get('checkConstraint', '?')})"
            )
        case "DELTA_CONSTRAINT_ALREADY_EXISTS":
            return f"a constraint with this name already exists on {table}"
        case "TABLE_OR_VIEW_ALREADY_EXISTS" | "DELTA_TABLE_ALREADY_EXISTS":
            return f"table {table} was created by someone else in the meantime; re-run plan"
        case "TABLE_OR_VIEW_NOT_FOUND":
            return f"table {table} does not exist (any more); re-run plan"
        case "UNRESOLVED_COLUMN.WITH_SUGGESTION" | "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION":
            return f"the expression references a column that {table} does not have: {_first_line(failure)}"
        case _:
            return _first_line(failure)


def _first_line(failure: EngineFailure) -> str:
    line = failure.message.strip().splitlines()[0] if failure.message.strip() else "unknown error"
    return line if len(line) <= 400 else line[:400] + "..."
