"""delta-sync: declarative schema migrations for Delta Lake tables on open-source Spark.

The public Python API is what ``__all__`` lists (README, "Use from Python"); every other module is internal.
Importing the package starts no JVM and does not import pyspark.
"""

__version__ = "0.1.0"

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
