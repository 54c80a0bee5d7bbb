"""An example of a team's rule over the reviewed plan (`rules:` in delta-sync.yaml; README, "Policy").

    rules: [rules.no_big_drops:no_big_drops]    # this file at rules/no_big_drops.py in the project

It gets the plan as typed objects (delta_sync.planfile.schema.PlanDocument, the content of
`delta-sync plan --format json`) and returns findings: an error blocks the plan (exit 3), a warning is shown.
"""

from __future__ import annotations

from collections.abc import Iterator

from delta_sync.planfile.schema import PlanDocument
from delta_sync.specs.custom_rules import RuleFinding

BIG = 10 * 2**30  # 10 GiB


def no_big_drops(plan: PlanDocument) -> Iterator[RuleFinding]:
    """No table over 10 GiB dropped by a plan, whatever --allow says; a warning for each column dropped."""
    for action in plan.actions:
        if action.kind == "RemoveTable" and (getattr(action, "size_bytes", None) or 0) > BIG:
            yield RuleFinding("error", f"{action.table} holds over 10 GiB: archive it first", table=action.table)
        if action.kind == "DropColumns":
            names = ", ".join(column["name"] for column in getattr(action, "columns", []))
            yield RuleFinding("warning", f"{action.table} loses {names}: tell its readers", table=action.table)
