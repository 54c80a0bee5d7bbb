"""The warm engine's catalog entries reused between commands, and dropped exactly when the catalog says they may
have changed.

While the engine runs, it holds the embedded catalog's Derby alone (Derby admits one process): every change to
that catalog is made in the engine's JVM, through Spark's `ExternalCatalogWithListener`, which tells its
listeners of each one in the thread that makes it (create, drop, rename, alter of a table or a database; the
events before and after the change). A listener of ours, compiled in that JVM by Spark's own Java compiler
(Janino, which Spark uses for its generated code), keeps the entries plans read (`bulk_reads.catalog_entries`:
kind, provider, location; a name the schema does not have) and forgets an entry as soon as an event names its
table or its schema. An entry read before an event but stored after it is not kept: each read is stored with the
count of events seen before it started, and the listener refuses it when an event on that name came later.

The first command to ask registers the listener, so the first plan after the engine starts reads everything.
It is kept in the JVM's system properties (one JVM-wide object every command's py4j gateway can reach, as each
command has a gateway of its own). Only the engine, and only on its embedded catalog, reuses entries: a command
in-process reads each entry once anyway, and a Hive metastore server, Unity Catalog or Connect can be changed by
other processes, which send this JVM no event.

`DELTA_SYNC_CATALOG_REUSE`: `off` reads every entry (the benchmarks' side-by-side baseline); `verify` reads
every entry and refuses the command when a reused one differs from it (the differential test's switch).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from delta_sync.model.errors import DeltaSyncError
from delta_sync.spark.table_reads import CatalogEntry

VARIABLE = "DELTA_SYNC_CATALOG_REUSE"
_PROPERTY = "delta-sync.catalog-events"
_CLASS = "DeltaSyncCatalogEvents"
# Between keys and between values in one py4j call: no Hive name, provider or location holds a NUL.
_SEP = "\x00"
_FIELD = "\x1f"
_NO_VALUE = "\x1e"
_ABSENT = "ABSENT"

# Java as Janino compiles it (no generics, no lambdas). `onEvent` runs in the thread that changes the catalog,
# after (and before) each change: a table event forgets that table's entry (a rename both names), a database event
# every entry of that schema.
_SOURCE = """
import java.util.HashMap;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.catalog.*;

public class DeltaSyncCatalogEvents implements ExternalCatalogEventListener {
  private long events = 0;
  private final HashMap changed = new HashMap();
  private final HashMap entries = new HashMap();

  public synchronized long events() { return events; }

  public synchronized void onEvent(ExternalCatalogEvent event) {
    events++;
    if (event instanceof TableEvent) {
      TableEvent table = (TableEvent) event;
      String schema = table.database().toLowerCase() + ".";
      forget(schema + table.name().toLowerCase());
      if (event instanceof RenameTablePreEvent) forget(schema + ((RenameTablePreEvent) event).newName().toLowerCase());
      if (event instanceof RenameTableEvent) forget(schema + ((RenameTableEvent) event).newName().toLowerCase());
    } else if (event instanceof DatabaseEvent) {
      String schema = ((DatabaseEvent) event).database().toLowerCase() + ".";
      changed.put(schema, new Long(events));
      Iterator keys = entries.keySet().iterator();
      while (keys.hasNext()) {
        if (((String) keys.next()).startsWith(schema)) keys.remove();
      }
    }
  }

  private void forget(String key) {
    changed.put(key, new Long(events));
    entries.remove(key);
  }

  public synchronized String get(String keys) {
    String[] wanted = keys.split("\\u0000", -1);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < wanted.length; i++) {
      if (i > 0) out.append('\\u0000');
      String found = (String) entries.get(wanted[i]);
      out.append(found == null ? "\\u001e" : found);
    }
    return out.toString();
  }

  public synchronized void put(String keys, String values, long seenAt) {
    String[] names = keys.split("\\u0000", -1);
    String[] found = values.split("\\u0000", -1);
    for (int i = 0; i < names.length; i++) {
      Long table = (Long) changed.get(names[i]);
      Long schema = (Long) changed.get(names[i].substring(0, names[i].indexOf('.') + 1));
      if ((table == null || table.longValue() <= seenAt) && (schema == null || schema.longValue() <= seenAt)) {
        entries.put(names[i], found[i]);
      }
    }
  }

  public synchronized int size() { return entries.size(); }
}
"""


def mode() -> str:
    return os.environ.get(VARIABLE, "").strip().lower()


def listener(spark: Any) -> Any | None:
    """The engine JVM's listener, registered by the first command that asks; None where entries are not reused
    (see the module's docstring) or the JVM cannot compile it (a Spark without Janino)."""
    from delta_sync.spark import engine_borrow

    if not engine_borrow.on_engine() or mode() == "off":
        return None
    jvm = spark._jvm
    properties = jvm.java.lang.System.getProperties()
    found = properties.get(_PROPERTY)
    if found is not None:
        return found
    try:
        if not _this_jvm_alone(spark._jsparkSession.sharedState().externalCatalog().unwrapped()):
            return None
        compiler = jvm.org.codehaus.janino.SimpleCompiler()
        compiler.setParentClassLoader(jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
        compiler.cook(_SOURCE)
        constructor = compiler.getClassLoader().loadClass(_CLASS).getConstructors()[0]
        candidate = constructor.newInstance(spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 0))
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        # Listening before it is shared: no command may store an entry the listener did not watch over.
        catalog.addListener(candidate)
    except Exception:
        return None
    first = properties.putIfAbsent(_PROPERTY, candidate)
    if first is not None:  # another command's, registered at the same time: one listener is enough
        catalog.removeListener(candidate)
        return first
    return candidate


def _this_jvm_alone(catalog: Any) -> bool:
    """Whether no other process can change this catalog: Spark's in-memory one, or a Hive client on an embedded
    Derby (one JVM at a time), not a metastore server nor a Derby network server."""
    kind = str(catalog.getClass().getName())
    if kind.endswith(".InMemoryCatalog"):
        return True
    if not kind.endswith(".HiveExternalCatalog"):
        return False
    client = catalog.client()
    url = str(client.getConf("javax.jdo.option.ConnectionURL", ""))
    uris = str(client.getConf("hive.metastore.uris", "")).strip()
    return not uris and url.startswith("jdbc:derby:") and not url.startswith("jdbc:derby://")


def events_seen(events: Any) -> int:
    return int(events.events())


def reused(events: Any, schema: str, names: Sequence[str]) -> dict[str, CatalogEntry | None]:
    """The entries of `names` in `schema` the listener holds (None: the schema has no such table)."""
    keys = [_key(schema, n) for n in names]
    values = str(events.get(_SEP.join(keys))).split(_SEP)
    found: dict[str, CatalogEntry | None] = {}
    for name, value in zip(names, values, strict=True):
        if value != _NO_VALUE:
            found[name] = _decode(value)
    return found


def keep(events: Any, schema: str, read: Mapping[str, CatalogEntry | None], seen_at: int) -> None:
    """Entries read after the listener had seen `seen_at` events (None: not in the schema), for the next command."""
    if not read:
        return
    names = sorted(read)
    events.put(_SEP.join(_key(schema, n) for n in names), _SEP.join(_encode(read[n]) for n in names), seen_at)


def verify(schema: str, reused_entries: Mapping[str, CatalogEntry | None], read: Mapping[str, CatalogEntry]) -> None:
    """`verify` mode: every reused entry as a fresh read gives it; stderr says how many were checked, so that a
    test knows the reuse it checks took place."""
    for name, entry in sorted(reused_entries.items()):
        if entry != read.get(name):
            raise DeltaSyncError(
                f"{VARIABLE}=verify: the engine reused {schema}.{name} as {entry}, but the catalog now says "
                f"{read.get(name)}; this is a delta-sync bug: please report it"
            )
    names = ",".join(sorted(reused_entries))
    print(f"{VARIABLE}=verify: {schema}: {len(reused_entries)} reused entries as read [{names}]", file=sys.stderr)


def _key(schema: str, name: str) -> str:
    return f"{schema.lower()}.{name.lower()}"


def _encode(entry: CatalogEntry | None) -> str:
    if entry is None:
        return _ABSENT
    return _FIELD.join(_NO_VALUE if v is None else v for v in (entry.kind, entry.provider, entry.location))


def _decode(value: str) -> CatalogEntry | None:
    if value == _ABSENT:
        return None
    kind, provider, location = (None if v == _NO_VALUE else v for v in value.split(_FIELD))
    return CatalogEntry(str(kind), provider, location)
