"""The settings of the team's policy in delta-sync.yaml, as their values are checked when the file is read: the
hazard classes an environment allows or denies, `protect:` globs, sizes (`limits:`, `safe_below:`), Python rule
references (`rules:`) and `statement_timeout:`. Each raises Invalid with a hint, so a bad value is one problem at
its line. delta_sync.specs.settings builds the models from these, and `Project.policy` the values the review
reads (delta_sync.model.state.Policy).
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

from delta_sync.model.policy import SizeError, parse_duration, parse_size
from delta_sync.planning.hazards import ALLOWABLE, Hazard
from delta_sync.specs.spec_values import Invalid, rule_reference


def _allowable(value: Any) -> Hazard:
    allowed = ", ".join(sorted(ALLOWABLE))
    hazard = Hazard(value) if isinstance(value, str) and value in tuple(Hazard) else None
    if hazard is None:
        close = difflib.get_close_matches(str(value), [h.value for h in Hazard], n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + f"hazard classes that can be allowed: {allowed}"
        raise Invalid(f"`{value}` is not a hazard class", hint)
    if hazard not in ALLOWABLE:
        raise Invalid(f"`{hazard}` changes cannot be allowed", f"only these can: {allowed}")
    return hazard


def _deniable(value: Any) -> Hazard:
    try:
        return _allowable(value)
    except Invalid as exc:
        if isinstance(value, str) and value in tuple(Hazard):
            raise Invalid(f"`{value}` changes can never be allowed, so there is nothing to deny", exc.hint) from None
        raise


def _ignore_pattern(text: str) -> str:
    # Globs on `schema.table` (or `catalog.schema.table`); fnmatch's `*` crosses dots, so `dbt_*.*` works.
    dots = text.count(".")
    if not text.strip() or dots == 0 or dots > 2:
        raise Invalid(
            f"`{text}` is not a pattern of table names",
            "write a glob on schema.table (or catalog.schema.table), e.g. dbt_*.* or raw.events_*",
        )
    return text


def _protect_pattern(text: str) -> str:
    try:
        return _ignore_pattern(text)
    except Invalid:
        raise Invalid(
            f"`{text}` is not a pattern of table names",
            "write a glob on schema.table (or catalog.schema.table), e.g. finance.* or shop.orders",
        ) from None


_Protect = list[Annotated[str, AfterValidator(_protect_pattern)]]
_PROTECT_HELP = (
    "Tables (and views) no plan may drop, rename, rewrite or restore, whatever --allow says, as globs on "
    "schema.table, e.g. [finance.*, shop.orders]"
)


def _size(value: Any) -> str:
    """A size as users write it (`512MB`, `2TB`, a number of bytes), kept as written once it parses."""
    try:
        parse_size(value)
    except SizeError as exc:
        raise Invalid(
            str(exc), "write a size such as 512MB, 50GB or 2TB (KiB, MiB, GiB, TiB: powers of 1024)"
        ) from None
    return str(value)


_Rules = list[Annotated[str, AfterValidator(rule_reference)]]
_RULES_HELP = (
    "Python rules over the reviewed plan, as package.module:function, e.g. [ci.rules:no_big_drops]: each gets "
    "the plan as typed objects and returns findings; an error blocks"
)


def _duration(value: Any) -> str:
    try:
        parse_duration(value)
    except SizeError as exc:
        raise Invalid(str(exc), "write a duration such as 30s, 5m or 1h (a number alone is seconds)") from None
    return str(value)


_Duration = Annotated[str, BeforeValidator(_duration), WithJsonSchema({"type": ["string", "number"]})]


_Size = Annotated[str, BeforeValidator(_size), WithJsonSchema({"type": ["string", "integer"]})]
_LimitKind = Literal["rewrite", "backfill", "scan"]
_Limits = dict[_LimitKind, _Size]
_LIMITS_HELP = (
    "The most a change may rewrite, backfill or scan here, e.g. {rewrite: 50GB, scan: 500GB}: a change above "
    "is blocked with both figures"
)
_SafeBelow = dict[Annotated[Hazard, BeforeValidator(_allowable)], _Size]
_SAFE_BELOW_HELP = (
    "Hazard classes let through on tables smaller than the size given, e.g. {rewrite: 1GB, destructive: 10MB}"
)
