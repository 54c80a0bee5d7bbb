"""delta-sync: declarative schema migrations for Delta Lake tables on open-source Spark.

The public Python API is what ``__all__`` lists (README, "Use from Python"); every other module is internal.
Importing the package starts no JVM and does not import pyspark.
"""

import importlib
from typing import TYPE_CHECKING, Any

from delta_sync.version import __version__

if TYPE_CHECKING:
    from delta_sync.model.errors import (
        CatalogError,
        DeltaSyncError,
        ExecutionError,
        SetupError,
        SpecError,
        SpecProblem,
        UnsafePlanError,
    )
    from delta_sync.planfile.document import RefusedPlanError, StalePlanError
    from delta_sync.planning.hazards import Hazard
    from delta_sync.review.library import (
        apply,
        check_keys,
        drift,
        import_specs,
        load_specs,
        plan,
        plan_rollback,
        rollback,
        show,
        spark_schema,
        with_delta,
    )
    from delta_sync.review.outcomes import ApplyInterrupted, DataBlockedError
    from delta_sync.review.results import (
        ApplyResult,
        BlockedPlanError,
        CancelledError,
        Imported,
        Progress,
        ReviewedPlan,
    )
    from delta_sync.review.rollback import UnknownPlanError

# Each name is imported on first use (PEP 562): `delta-sync validate` and the warm engine's thin command
# must not pay for the planner, the library and pydantic models they do not touch.
_WHERE = {
    "CatalogError": "delta_sync.model.errors",
    "DeltaSyncError": "delta_sync.model.errors",
    "ExecutionError": "delta_sync.model.errors",
    "SetupError": "delta_sync.model.errors",
    "SpecError": "delta_sync.model.errors",
    "SpecProblem": "delta_sync.model.errors",
    "UnsafePlanError": "delta_sync.model.errors",
    "Hazard": "delta_sync.planning.hazards",
    "ApplyResult": "delta_sync.review.results",
    "BlockedPlanError": "delta_sync.review.results",
    "CancelledError": "delta_sync.review.results",
    "Imported": "delta_sync.review.results",
    "Progress": "delta_sync.review.results",
    "ReviewedPlan": "delta_sync.review.results",
    "apply": "delta_sync.review.library",
    "check_keys": "delta_sync.review.library",
    "drift": "delta_sync.review.library",
    "import_specs": "delta_sync.review.library",
    "load_specs": "delta_sync.review.library",
    "plan": "delta_sync.review.library",
    "plan_rollback": "delta_sync.review.library",
    "rollback": "delta_sync.review.library",
    "show": "delta_sync.review.library",
    "spark_schema": "delta_sync.review.library",
    "with_delta": "delta_sync.review.library",
    "ApplyInterrupted": "delta_sync.review.outcomes",
    "DataBlockedError": "delta_sync.review.outcomes",
    "RefusedPlanError": "delta_sync.planfile.document",
    "StalePlanError": "delta_sync.planfile.document",
    "UnknownPlanError": "delta_sync.review.rollback",
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
    "spark_schema",
    "with_delta",
]
