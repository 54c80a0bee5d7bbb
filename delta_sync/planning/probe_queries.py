"""The probes' SQL: the relation of a table's existing rows as the plan leaves them (`probe_relation`), the
one scan counting each rule's violations (`probe_sql`), the sample rows that show them (`sample_sql`), and the
rules a rewrite's conversions and a backfill are probed by (`cast_rule`, `fill_rule`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from delta_sync.model.state import (
    Check,
    Table,
    quote_ident,
)
from delta_sync.planning.actions import Action, Backfill, RewriteTable
from delta_sync.planning.diff.conventions import (
    NOT_NULL_PREFIX,
    references,  # one definition of "a rule reads a column"
)
from delta_sync.sql import expressions

# Probe rules of the changes that move data, over the relation of probe_relation: a rewrite's
# conversion that turns a value into NULL (a failed cast), and the rows a backfill gives a value.
CAST_RULE_PREFIX = "ds_cast_"


FILL_RULE_PREFIX = "ds_fill_"


_BEFORE = "__ds_before_"


_UNFILLED = "__ds_unfilled_"


def before_column(column: str) -> str:
    """The relation's column holding a converted column's value as the table has it now (probe_relation)."""
    return _BEFORE + column.lower()


def unfilled_column(column: str) -> str:
    """The relation's column holding a backfilled column's value before the backfill (probe_relation)."""
    return _UNFILLED + column.lower()


def is_helper_column(name: str) -> bool:
    return name.lower().startswith((_BEFORE, _UNFILLED))


def _rule_suffix(column: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", column.lower())


def cast_rule(conversion_column: str) -> Check:
    before = quote_ident(before_column(conversion_column))
    return Check(
        CAST_RULE_PREFIX + _rule_suffix(conversion_column),
        f"{before} IS NULL OR {quote_ident(conversion_column)} IS NOT NULL",
    )


def fill_rule(column: str) -> Check:
    """Its "violations" are the rows the backfill updates (those where the column is NULL now)."""
    return Check(FILL_RULE_PREFIX + _rule_suffix(column), f"{quote_ident(unfilled_column(column))} IS NOT NULL")


def unfilled_of(check: Check) -> str | None:
    """The column a backfill's row-count rule (fill_rule) counts the NULLs of."""
    found = re.fullmatch(r"`((?:[^`]|``)+)` IS NOT NULL", check.expression.strip())
    if not check.name.startswith(FILL_RULE_PREFIX) or found is None:
        return None
    name = found.group(1).replace("``", "`")
    return name[len(_UNFILLED) :] if name.lower().startswith(_UNFILLED) else None


_NOT_NULL_RULE = re.compile(r"`((?:[^`]|``)+)`\s+IS\s+NOT\s+NULL\Z", re.IGNORECASE)


def not_null_column(check: Check) -> str | None:
    """The column a delta-sync NOT NULL check guards, if `check` is one."""
    found = _NOT_NULL_RULE.match(check.expression.strip())
    if not check.name.startswith(NOT_NULL_PREFIX) or found is None:
        return None
    return found.group(1).replace("``", "`")


def probe_relation(current: Table, desired: Table, actions: Iterable[Action] = ()) -> str:
    """The existing rows as they will look after the plan, for rules to be checked against.

    Columns the plan adds are NULL in existing rows (a default only fills future inserts) and
    renamed columns carry their new name, so a rule on either can be checked before it exists.
    With the table's `actions`: a rewrite's conversions give the converted values (a cast that fails
    gives NULL, as try_cast does, instead of failing the scan) and a backfill fills the NULLs; the value
    before either is kept in a column of its own (before_column) for the rules that count them.
    """
    conversions = {c.column.lower(): c for a in actions if isinstance(a, RewriteTable) for c in a.conversions}
    fills = {a.column.lower(): a for a in actions if isinstance(a, Backfill)}
    select, extra = [], []
    for col in desired.columns:
        existing = current.column(col.name)
        source = current.column(col.renamed_from) if existing is None and col.renamed_from else existing
        value = f"CAST(NULL AS {col.type})" if source is None else quote_ident(source.name)
        if source is not None and source.key in conversions:
            before = value
            value = f"({expressions.tolerant_casts(conversions[source.key].expression)})"
            extra.append(f"{before} AS {quote_ident(before_column(source.name))}")
        fill = fills.get(col.key)
        if fill is not None:
            extra.append(f"{value} AS {quote_ident(unfilled_column(col.name))}")
            value = f"coalesce({value}, CAST(({fill.expression}) AS {col.type}))"
        select.append(f"{value} AS {quote_ident(col.name)}")
    return f"(SELECT {', '.join(select + extra)} FROM {current.name.sql()})"


def probe_sql(relation: str, checks: Sequence[Check]) -> str:
    """One scan counting, per rule, the rows Delta would reject (false or NULL both violate)."""
    counts = ", ".join(
        f"count_if(NOT coalesce(({check.expression}), false)) AS {quote_ident(check.name)}" for check in checks
    )
    return f"SELECT {counts} FROM {relation}"


def sample_columns(check: Check, fields: Sequence[tuple[str, bool]], primary_key: Sequence[str] = ()) -> list[str]:
    """What a sample row of `check` shows, of the relation's (name, nullable) fields: the table's primary-key
    columns first, in key order, when it has one, then the columns the rule reads, in table order. Without a
    primary key, its key-like columns (NOT NULL ones, else the first) and the rule's, in table order."""
    by_name = {name.lower(): name for name, _ in fields}
    first = [by_name[c.lower()] for c in primary_key if c.lower() in by_name]
    if first:
        return first + [name for name, _ in fields if name not in first and references(check.expression, name)]
    keys = {name for name, nullable in fields if not nullable} or {name for name, _ in fields[:1]}
    return [name for name, _ in fields if name in keys or references(check.expression, name)]


def sample_sql(
    relation: str,
    check: Check,
    fields: Sequence[tuple[str, bool]] = (),
    limit: int = 5,
    primary_key: Sequence[str] = (),
) -> str:
    """Up to `limit` rows violating `check`; with the relation's fields, only the columns that tell them apart."""
    columns = ", ".join(quote_ident(c) for c in sample_columns(check, fields, primary_key)) or "*"
    return f"SELECT {columns} FROM {relation} WHERE NOT coalesce(({check.expression}), false) LIMIT {limit}"
