"""delta-sync: declarative schema migrations for Delta Lake tables on open-source Spark.

The public Python API is what ``__all__`` lists (README, "Use from Python"); every other module is internal.
Importing the package starts no JVM and does not import pyspark.
"""

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta_sync.errors import (
        CatalogError,
        DeltaSyncError,
        ExecutionError,
        SetupError,
        SpecError,
        SpecProblem,
        UnsafePlanError,
    )
    from delta_sync.hazards import Hazard
    from delta_sync.library import (
        ApplyResult,
        BlockedPlanError,
        CancelledError,
        Imported,
        Progress,
        ReviewedPlan,
        apply,
        check_keys,
        drift,
        import_specs,
        load_specs,
        plan,
        plan_rollback,
        rollback,
        show,
        with_delta,
    )
    from delta_sync.outcomes import ApplyInterrupted, DataBlockedError
    from delta_sync.planfile import RefusedPlanError, StalePlanError
    from delta_sync.undo import UnknownPlanError

# Each name is imported on first use (PEP 562): `delta-sync validate` and the warm engine's thin command
# must not pay for the planner, the library and pydantic models they do not touch.
_WHERE = {
    "CatalogError": "delta_sync.errors",
    "DeltaSyncError": "delta_sync.errors",
    "ExecutionError": "delta_sync.errors",
    "SetupError": "delta_sync.errors",
    "SpecError": "delta_sync.errors",
    "SpecProblem": "delta_sync.errors",
    "UnsafePlanError": "delta_sync.errors",
    "Hazard": "delta_sync.hazards",
    "ApplyResult": "delta_sync.library",
    "BlockedPlanError": "delta_sync.library",
    "CancelledError": "delta_sync.library",
    "Imported": "delta_sync.library",
    "Progress": "delta_sync.library",
    "ReviewedPlan": "delta_sync.library",
    "apply": "delta_sync.library",
    "check_keys": "delta_sync.library",
    "drift": "delta_sync.library",
    "import_specs": "delta_sync.library",
    "load_specs": "delta_sync.library",
    "plan": "delta_sync.library",
    "plan_rollback": "delta_sync.library",
    "rollback": "delta_sync.library",
    "show": "delta_sync.library",
    "with_delta": "delta_sync.library",
    "ApplyInterrupted": "delta_sync.outcomes",
    "DataBlockedError": "delta_sync.outcomes",
    "RefusedPlanError": "delta_sync.planfile",
    "StalePlanError": "delta_sync.planfile",
    "UnknownPlanError": "delta_sync.undo",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'delta_sync' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ApplyInterrupted",
    "ApplyResult",
    "BlockedPlanError",
    "CancelledError",
    "CatalogError",
    "DataBlockedError",
    "DeltaSyncError",
    "ExecutionError",
    "Hazard",
    "Imported",
    "Progress",
    "RefusedPlanError",
    "ReviewedPlan",
    "SetupError",
    "SpecError",
    "SpecProblem",
    "StalePlanError",
    "UnknownPlanError",
    "UnsafePlanError",
    "__version__",
    "apply",
    "check_keys",
    "drift",
    "import_specs",
    "load_specs",
    "plan",
    "plan_rollback",
    "rollback",
    "show",
    "with_delta",
]
