"""Temporary (issue 36): the names the command line still imports from here, until it imports them from
their modules (delta_sync.review.environments, delta_sync.review.policy, delta_sync.review.readonly,
delta_sync.model.catalog). Delete this module then. Its functions are looked up when called, so that a
test replacing `environments.open_catalog` replaces it here too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_sync.model.catalog import APPLY_PARALLEL as APPLY_PARALLEL
from delta_sync.model.catalog import Catalog as Catalog
from delta_sync.model.catalog import QueryResult as QueryResult
from delta_sync.review import environments
from delta_sync.review.policy import without_blocked as without_blocked
from delta_sync.review.readonly import KeyCheck as KeyCheck

if TYPE_CHECKING:
    from delta_sync.review.environments import env_home as env_home
    from delta_sync.review.environments import environment as environment
    from delta_sync.review.environments import open_catalog as open_catalog
else:

    def __getattr__(name: str) -> Any:
        if name in {"env_home", "environment", "open_catalog"}:
            return getattr(environments, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
