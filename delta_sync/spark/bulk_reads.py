"""The fast reader: the tables of a plan read in bulk, each from its `_delta_log` where it can be, and only the ones
whose Delta version moved since the last read.

What it holds:
- `read`: `SparkCatalog.read` on the fast reader, or on today's one-table-at-a-time JVM reader when
  `DELTA_SYNC_READER=jvm` (the switch benchmarks and comparisons use).
- `read_many`: the tables of the session catalog, in four steps:
  1. the catalog's entries, one bulk call per schema (`catalog_entries`: `SessionCatalog.getTablesByName` of
     the schema's wanted names, printed by the JVM in one string and parsed here);
  2. for a Delta table on local disk, its latest commit from one listing of `_delta_log`, and its facts from
     the cache (`table_cache`) when that commit is the one cached; for one on S3 (`s3a://`, `s3://`), the same
     listing and cache through `remote_log`, all the tables' requests overlapping;
  3. else its checksum file (`delta_log.read_checksum`; on S3 fetched in step 2), with the schema turned into
     Spark's JSON of it by one JVM call for all the tables read so;
  4. everything else through Delta on the JVM as before (`table_reads.read_entry`), on a few threads:
     views, tables on other file systems, tables without a checksum of their latest version, tables on S3 whose
     log could not be read from Python.
  Names of other catalogs and sessions without a JVM (Spark Connect) are read as before, one by one.
- `parse_entries`: the catalog's printed entries, read back strictly.

The result is the same `Table`, field for field, as the JVM reader gives (tests/spark/test_fast_reader.py holds
the two equal), and errors are raised as that reader raised them: the first table in name order that fails.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from delta_sync.model.state import CatalogState, Table, TableName, View
from delta_sync.spark import catalog_events, delta_log, remote_log, table_cache, table_reads
from delta_sync.spark.delta_log import LogCommit
from delta_sync.spark.table_reads import CatalogEntry, SessionCatalog

READER_VARIABLE = "DELTA_SYNC_READER"
# Threads for the reads left to the JVM: py4j serves each Python thread on a connection and JVM thread of its own,
# and Delta's snapshot loads of different tables do not block each other. More than 4 gained nothing on 2 cores.
READ_THREADS = 4
# Up to this many wanted names of a schema are asked for by name (`a|b|c`, Hive's pattern); more lists the schema.
PATTERN_NAMES = 64
# Between two printed catalog entries. A NUL cannot be in a Hive name, comment or property, so a split on it finds
# the entries; `parse_entries` checks that it did anyway.
SEPARATOR = "\x00\x1edelta-sync\x1e\x00"
_SIMPLE_NAME = re.compile(r"[a-z0-9_]+")
# Spark's QuotingUtils.needQuote (v4.2): a name part it prints as is; any other goes through Spark itself.
_PLAIN_PART = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# The keys of CatalogTable.toLinkedHashMap read back, each printed once per entry as `Key: value`.
_ENTRY_KEYS = ("Database", "Table", "Type", "Provider", "Location")
_KINDS = ("MANAGED", "EXTERNAL", "VIEW")

Found = Table | View | None
Outcome = Table | View | None | Exception


def fast_reader() -> bool:
    """Whether plans read through this module (the default) or one table at a time as before (`jvm`)."""
    return os.environ.get(READER_VARIABLE, "").strip().lower() != "jvm"


def read(spark_catalog: SessionCatalog, names: Iterable[TableName]) -> CatalogState:
    return table_reads.read(spark_catalog, names, read_many if fast_reader() else None)


def read_many(spark_catalog: SessionCatalog, names: Sequence[TableName]) -> dict[TableName, Found]:
    """The tables and views named (None: none there), read as `table_reads.read_table` reads each."""
    outcomes: dict[TableName, Outcome] = {}
    jvm_tasks: dict[TableName, Callable[[], Found]] = {}
    classic = getattr(spark_catalog.spark, "_jvm", None) is not None
    session = sorted(n for n in names if n.catalog is None and classic)
    for name in sorted(n for n in names if n.catalog is not None or not classic):
        outcomes[name] = _outcome(partial(table_reads.read_table, spark_catalog, name))
    if not session:
        return _raise_first(outcomes)
    cache = table_cache.for_home(spark_catalog.local.home if spark_catalog.local is not None else None)
    try:
        checksums = _plan_session_reads(spark_catalog, session, cache, outcomes, jvm_tasks)
        _read_checksums(spark_catalog, checksums, cache, outcomes, jvm_tasks)
        outcomes.update(_run(jvm_tasks, spark_catalog.spark))
    finally:
        cache.save()
    return _raise_first(outcomes)


def _raise_first(outcomes: Mapping[TableName, Outcome]) -> dict[TableName, Found]:
    for name in sorted(outcomes):
        if isinstance(found := outcomes[name], Exception):
            raise found
    return {name: found for name, found in outcomes.items() if not isinstance(found, Exception)}


def _activate(spark: Any) -> None:
    """This thread's active SparkSession: the command's (as pyspark's own threads set it)."""
    spark._get_j_spark_session_class(spark._jvm).setActiveSession(spark._jsparkSession)


def _outcome(read: Callable[[], Found]) -> Outcome:
    try:
        return read()
    except Exception as exc:  # raised in name order by read_many, as the reader one table at a time did
        return exc


# A table whose checksum is to be read: its catalog entry, folder (a path, or the key of a folder on S3), latest
# commit and checksum file.
_Checksum = tuple[CatalogEntry, Path | str, LogCommit, dict[str, Any]]
# A table on S3 whose log is read in step 2's one batch: its catalog entry and folder.
_Remote = tuple[CatalogEntry, remote_log.RemoteLocation]


def _plan_session_reads(
    spark_catalog: SessionCatalog,
    names: Sequence[TableName],
    cache: table_cache.TableCache,
    outcomes: dict[TableName, Outcome],
    jvm_tasks: dict[TableName, Callable[[], Found]],
) -> dict[TableName, _Checksum]:
    """Steps 1 and 2 for the session catalog's `names`: what is known already goes in `outcomes`, what the JVM
    reads in `jvm_tasks`; the tables to read from their checksum file are returned."""
    checksums: dict[TableName, _Checksum] = {}
    remote: dict[TableName, _Remote] = {}
    by_schema: dict[str, list[TableName]] = {}
    for name in names:
        by_schema.setdefault(name.schema, []).append(name)
    for schema, wanted in sorted(by_schema.items()):
        entries = catalog_entries(spark_catalog, schema, [n.name for n in wanted])
        for name in wanted:
            entry = entries.get(name.name) if entries is not None else None
            # The bulk call failed, its answer was ambiguous, or a Delta table has no location: one by one, as before.
            if entries is None or (entry is not None and entry.is_delta and entry.location is None):
                jvm_tasks[name] = partial(table_reads.read_from_delta_log, spark_catalog, name)
                continue
            if entry is None:
                outcomes[name] = None
                continue
            if entry.kind == "VIEW":
                jvm_tasks[name] = partial(table_reads.read_view, spark_catalog, name)
                continue
            if not entry.is_delta:  # refused, as before
                outcomes[name] = _outcome(partial(table_reads.read_entry, spark_catalog, name, entry))
                continue
            folder = delta_log.local_path(str(entry.location))
            if folder is None and (on_s3 := remote_log.remote_location(str(entry.location))) is not None:
                remote[name] = (entry, on_s3)
                continue
            commit = delta_log.latest_commit(folder) if folder is not None else None
            if folder is None or commit is None:
                jvm_tasks[name] = partial(table_reads.read_entry, spark_catalog, name, entry)
                continue
            facts = cache.get(folder, commit)
            if facts is not None:
                outcomes[name] = _outcome(partial(table_reads.read_entry, spark_catalog, name, entry, facts))
                continue
            checksum = delta_log.read_checksum(folder, commit.version) if commit.has_checksum else None
            if checksum is not None and delta_log.schema_string(checksum) is not None:
                checksums[name] = (entry, folder, commit, checksum)
            else:
                jvm_tasks[name] = partial(_read_through_delta, spark_catalog, name, entry, folder, commit, cache)
    _plan_remote_reads(spark_catalog, remote, cache, checksums, outcomes, jvm_tasks)
    return checksums


def _plan_remote_reads(
    spark_catalog: SessionCatalog,
    tables: Mapping[TableName, _Remote],
    cache: table_cache.TableCache,
    checksums: dict[TableName, _Checksum],
    outcomes: dict[TableName, Outcome],
    jvm_tasks: dict[TableName, Callable[[], Found]],
) -> None:
    """Step 2 for the tables on S3: every listing (and checksum file, where the cache misses) in one batch of
    overlapping requests; a table whose log could not be read goes to Delta as before."""
    if not tables:
        return
    setting = _hadoop_setting(spark_catalog)
    settings: dict[str, remote_log.S3Settings | None] = {}
    through_s3a: dict[str, bool] = {}
    requests: dict[TableName, remote_log.LogRequest] = {}
    for name, (entry, where) in sorted(tables.items()):
        if setting is not None and where.bucket not in settings:
            settings[where.bucket] = remote_log.s3_settings(where.bucket, setting)
        if setting is not None and where.scheme not in through_s3a:
            through_s3a[where.scheme] = setting(where.fs_setting) == remote_log.S3A_FILESYSTEM
        found = settings.get(where.bucket)
        if found is None or not through_s3a.get(where.scheme):
            jvm_tasks[name] = partial(table_reads.read_entry, spark_catalog, name, entry)
            continue
        requests[name] = remote_log.LogRequest(where, found, cache.cached_commit(where.key))
    reads = remote_log.read_logs(list(requests.values()))
    for (name, request), read in zip(requests.items(), reads, strict=True):
        entry, key = tables[name][0], request.location.key
        commit = read.commit
        if commit is None:
            if read.gone:
                cache.drop(key)
            jvm_tasks[name] = partial(table_reads.read_entry, spark_catalog, name, entry)
            continue
        facts = cache.get(key, commit)
        if facts is not None:
            outcomes[name] = _outcome(partial(table_reads.read_entry, spark_catalog, name, entry, facts))
        elif read.checksum is not None and delta_log.schema_string(read.checksum) is not None:
            checksums[name] = (entry, key, commit, read.checksum)
        else:
            jvm_tasks[name] = partial(_read_through_delta, spark_catalog, name, entry, key, commit, cache)


def _hadoop_setting(spark_catalog: SessionCatalog) -> Callable[[str], str | None] | None:
    """The session's Hadoop configuration as Delta's reads see it (the `spark.hadoop.*` settings included), one
    key at a time; None when it cannot be had (the tables on S3 then go to Delta)."""
    try:
        conf = spark_catalog.spark._jsparkSession.sessionState().newHadoopConf()
    except Exception:
        return None

    def setting(key: str) -> str | None:
        try:
            if key.endswith(tuple(remote_log.SECRET_KEYS)):
                # As S3A reads them: from a Hadoop credential provider when one is set, else the configuration.
                chars = conf.getPassword(key)
                return None if chars is None else str(spark_catalog.spark._jvm.java.lang.String(chars))
            found = conf.get(key)
        except Exception:
            return None
        return None if found is None else str(found)

    return setting


def _read_checksums(
    spark_catalog: SessionCatalog,
    checksums: Mapping[TableName, _Checksum],
    cache: table_cache.TableCache,
    outcomes: dict[TableName, Outcome],
    jvm_tasks: dict[TableName, Callable[[], Found]],
) -> None:
    """Step 3: the tables' facts from their checksum files; one that lacks something is left to the JVM."""
    names = sorted(checksums)
    texts = [str(delta_log.schema_string(checksums[name][3])) for name in names]
    schemas = spark_schemas(spark_catalog, texts)
    quoted = partial(spark_quoted, spark_catalog)
    for name, schema in zip(names, schemas, strict=True):
        entry, folder, commit, checksum = checksums[name]
        facts = delta_log.checksum_facts(checksum, commit.version, schema, quoted) if schema is not None else None
        if facts is None:
            jvm_tasks[name] = partial(_read_through_delta, spark_catalog, name, entry, folder, commit, cache)
            continue
        cache.put(folder, commit, facts)
        outcomes[name] = _outcome(partial(table_reads.read_entry, spark_catalog, name, entry, facts))


def _read_through_delta(
    spark_catalog: SessionCatalog,
    name: TableName,
    entry: CatalogEntry,
    folder: Path | str,
    commit: LogCommit,
    cache: table_cache.TableCache,
) -> Found:
    """Step 4 for a table on local disk: Delta's snapshot, kept in the cache under the commit listed (a table
    without checksums, delta-rs's, then costs one listing from the second plan on)."""
    facts = table_reads.location_facts(spark_catalog, name, entry.delta_location(name))
    cache.put(folder, commit, facts)
    return table_reads.read_entry(spark_catalog, name, entry, facts)


def _run(tasks: Mapping[TableName, Callable[[], Found]], spark: Any) -> dict[TableName, Outcome]:
    if len(tasks) <= 1:
        return {name: _outcome(task) for name, task in tasks.items()}
    pool = ThreadPoolExecutor(
        max_workers=min(READ_THREADS, len(tasks)),
        thread_name_prefix="delta-sync-read",
        # A pool thread is a JVM thread of its own, with no active SparkSession: Delta's snapshot of a shallow
        # clone asks for one (DELTA_SPARK_SESSION_NOT_SET), so each thread takes the command's session.
        initializer=_activate,
        initargs=(spark,),
    )
    try:
        futures = {name: pool.submit(_outcome, task) for name, task in sorted(tasks.items())}
        return {name: future.result() for name, future in futures.items()}
    finally:
        # After Ctrl-C the reads not started are dropped and the command goes on to stop; those in flight end.
        pool.shutdown(wait=False, cancel_futures=True)


def catalog_entries(spark_catalog: SessionCatalog, schema: str, names: Sequence[str]) -> dict[str, CatalogEntry] | None:
    """The session catalog's entries of `names` in `schema` (a name missing there has none): on the warm engine, the
    ones no catalog event touched since a command read them (`catalog_events`), and the others in one bulk call to
    the metastore and three py4j calls; None when that fails or its answer cannot be read unambiguously."""
    events = catalog_events.listener(spark_catalog.spark) if spark_catalog.local is not None else None
    if events is None:
        return _read_entries(spark_catalog, schema, names)
    seen_at = catalog_events.events_seen(events)  # before reading: a change made meanwhile is read again next time
    known = catalog_events.reused(events, schema, names)
    verifying = catalog_events.mode() == "verify"
    missing = list(names) if verifying else [n for n in names if n not in known]
    read = _read_entries(spark_catalog, schema, missing) if missing else {}
    if read is None:
        return None
    if verifying:
        catalog_events.verify(schema, known, read)
    catalog_events.keep(events, schema, {n: read.get(n) for n in missing}, seen_at)
    return {**{n: e for n, e in known.items() if e is not None}, **read}


def _read_entries(spark_catalog: SessionCatalog, schema: str, names: Sequence[str]) -> dict[str, CatalogEntry] | None:
    plain = len(names) <= PATTERN_NAMES and all(_SIMPLE_NAME.fullmatch(n) for n in names)
    pattern = "|".join(sorted(set(names))) if plain else "*"
    try:
        catalog = spark_catalog.spark._jsparkSession.sessionState().catalog()
        # Not the session's temporary views: the reader one table at a time looks in the metastore only.
        tables = catalog.getTablesByName(catalog.listTables(schema, pattern, False))
        count = int(tables.size())
        text = str(tables.mkString(SEPARATOR)) if count else ""
    except Exception:
        return None
    entries = parse_entries(text, count, schema)
    return None if entries is None else {n: entries[n] for n in names if n in entries}


def parse_entries(text: str, count: int, schema: str) -> dict[str, CatalogEntry] | None:
    """`count` CatalogTables of `schema` as Spark 4 prints them (`CatalogTable(` then one `Key: value` line per
    fact, then `)`), joined by SEPARATOR: each one's MANAGED/EXTERNAL/VIEW, provider and location by name.

    A comment, a view's text or a property can hold a line break, so its text could pass for a line of its own;
    an entry where any key read here appears twice, or that is not a table of `schema`, makes the whole answer
    None (the caller then asks one table at a time), and so does a count that does not match."""
    if count == 0:
        return {}
    blocks = text.split(SEPARATOR)
    if len(blocks) != count:
        return None
    entries: dict[str, CatalogEntry] = {}
    for block in blocks:
        if not (block.startswith("CatalogTable(\n") and block.endswith(")")):
            return None
        facts: dict[str, list[str]] = {}
        for line in block[len("CatalogTable(\n") : -1].split("\n"):
            key, colon, value = line.partition(": ")
            if colon and key in _ENTRY_KEYS:
                facts.setdefault(key, []).append(value)
        if any(len(values) != 1 for values in facts.values()):
            return None
        (database,), (table,), (kind,) = facts.get("Database", []), facts.get("Table", []), facts.get("Type", [])
        name = table.lower()
        if database.lower() != schema.lower() or kind not in _KINDS or name in entries:
            return None
        provider, location = facts.get("Provider"), facts.get("Location")
        entries[name] = CatalogEntry(kind, provider[0] if provider else None, location[0] if location else None)
    return entries


def spark_schemas(spark_catalog: SessionCatalog, texts: Sequence[str]) -> list[Mapping[str, Any] | None]:
    """Each schema string as Spark's JSON of it (`DataType.fromJson(text).json()`, what the JVM reader parses), in
    one JVM call for all: Spark normalises what it reads (types' spelling, metadata), and the result must be the
    JVM reader's. A text Spark refuses gives None (the table is then read through Delta, which says why)."""
    if len(texts) == 1:
        try:
            return [_spark_json(spark_catalog, texts[0])]
        except Exception:
            return [None]
    # Each schema the type of one field of a struct, so that Spark reads and prints them all in one call. The texts
    # go in verbatim (re-encoding could change a number's spelling), once each is known to be one JSON object.
    field = '{{"name":"s{}","type":{},"nullable":true,"metadata":{{}}}}'
    fields = ",".join(field.format(i, text) for i, text in enumerate(texts))
    try:
        if not all(isinstance(json.loads(text), dict) for text in texts):
            raise ValueError("a schema that is not a JSON object")
        # Collations are kept in each field's metadata by its path within that field, so a schema reads the same
        # one level deeper; still, those schemas go alone, as the JVM reader reads them.
        if any("__COLLATIONS" in text for text in texts):
            raise ValueError("collations")
        together = _spark_json(spark_catalog, f'{{"type":"struct","fields":[{fields}]}}')
        return [dict(field["type"]) for field in together["fields"]]
    except Exception:
        return [found for text in texts for found in spark_schemas(spark_catalog, [text])]


def _spark_json(spark_catalog: SessionCatalog, text: str) -> dict[str, Any]:
    data_type = spark_catalog.spark._jvm.org.apache.spark.sql.types.DataType
    found: dict[str, Any] = json.loads(str(data_type.fromJson(text).json()))
    return found


def spark_quoted(spark_catalog: SessionCatalog, parts: Sequence[str]) -> str:
    """A column's name parts joined as Spark prints a FieldReference (`MultipartIdentifierHelper.quoted`): plain
    parts as they are, any other as Spark's `quoteIfNeeded` gives it."""
    if all(_PLAIN_PART.fullmatch(part) for part in parts):
        return ".".join(parts)
    util = spark_catalog.spark._jvm.org.apache.spark.sql.catalyst.util.package
    return ".".join(str(util.quoteIfNeeded(part)) for part in parts)
