"""The warm engine's reused catalog entries (delta_sync.spark.catalog_events), without a JVM: how an entry goes
through the listener's strings and back, what `verify` refuses, and where entries are not reused at all. The
listener itself, on real Spark and Delta: tests/spark/test_catalog_reuse.py."""

from __future__ import annotations

from typing import Any

import pytest

from delta_sync.model.errors import DeltaSyncError
from delta_sync.spark import catalog_events
from delta_sync.spark.table_reads import CatalogEntry


class Listener:
    """The Java listener's two calls, as a dict: what it holds and what `put` gives it."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def get(self, keys: str) -> str:
        return "\x00".join(self.entries.get(k, "\x1e") for k in keys.split("\x00"))

    def put(self, keys: str, values: str, seen_at: int) -> None:
        self.entries.update(zip(keys.split("\x00"), values.split("\x00"), strict=True))


ENTRIES: dict[str, CatalogEntry | None] = {
    "orders": CatalogEntry("MANAGED", "delta", "file:/w/shop.db/orders"),
    "events": CatalogEntry("EXTERNAL", "delta", "s3a://bucket/with space/événements"),
    "names": CatalogEntry("VIEW", None, None),
    "gone": None,
}


def test_entries_and_absent_names_come_back_as_they_were_kept() -> None:
    listener = Listener()
    catalog_events.keep(listener, "Shop", ENTRIES, 7)
    assert set(listener.entries) == {"shop.orders", "shop.events", "shop.names", "shop.gone"}
    assert catalog_events.reused(listener, "shop", [*ENTRIES, "unknown"]) == ENTRIES
    assert catalog_events.reused(listener, "other", list(ENTRIES)) == {}


def test_verify_refuses_a_reused_entry_the_catalog_no_longer_has(capsys: pytest.CaptureFixture[str]) -> None:
    read = {n: e for n, e in ENTRIES.items() if e is not None}
    catalog_events.verify("shop", ENTRIES, read)
    assert "shop: 4 reused entries as read [events,gone,names,orders]" in capsys.readouterr().err
    moved = {**read, "events": CatalogEntry("EXTERNAL", "delta", "s3a://bucket/elsewhere")}
    with pytest.raises(DeltaSyncError, match=r"reused shop\.events as .* but the catalog now says"):
        catalog_events.verify("shop", ENTRIES, moved)
    with pytest.raises(DeltaSyncError, match=r"reused shop\.gone as None"):
        catalog_events.verify("shop", ENTRIES, {**read, "gone": CatalogEntry("MANAGED", "delta", "file:/g")})


def test_no_listener_in_process_or_when_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_jvm(*_args: Any) -> Any:
        raise AssertionError("no JVM call when entries are not reused")

    spark = type("Spark", (), {"_jvm": property(no_jvm)})()
    assert catalog_events.listener(spark) is None  # not on the engine
    from delta_sync.spark import engine_borrow

    monkeypatch.setattr(engine_borrow, "on_engine", lambda: True)
    monkeypatch.setenv(catalog_events.VARIABLE, "off")
    assert catalog_events.listener(spark) is None
