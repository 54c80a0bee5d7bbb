"""SparkCatalog: reads table state and runs statements through a SparkSession."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from delta_sync.model.catalog import Commit, QueryResult, StatementFailed
from delta_sync.model.errors import CatalogError, DeltaSyncError, SpecProblem
from delta_sync.model.state import (
    DEFAULT_CATALOG,
    UNITY_CATALOG,
    Capabilities,
    CatalogState,
    Check,
    ForeignKey,
    PrimaryKey,
    SchemaName,
    Table,
    TableName,
    View,
    ViewColumn,
    quote_ident,
)
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning.hazards import (
    CAST_RULE_PREFIX,
    FILL_RULE_PREFIX,
    ProbeResult,
    before_column,
    is_helper_column,
    not_null_column,
    probe_sql,
    sample_sql,
    unfilled_of,
)
from delta_sync.planning.introspect import table_from_catalog
from delta_sync.planning.key_checks import KeyCheck
from delta_sync.spark import warm
from delta_sync.spark.exceptions import engine_failure as engine_failure
from delta_sync.spark.exceptions import unparsable as unparsable
from delta_sync.spark.jars import with_packages
from delta_sync.spark.session import LocalCatalog, derby_locked, get_session, locked_error, refused_by_derby
from delta_sync.sql import queries as viewsql
from delta_sync.sql.literals import sql_literal

# Delta records this session setting in each commit's `userMetadata` (DESCRIBE HISTORY shows it).
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


# Spark catalog plugins (`spark.sql.catalog.<name>` = class) whose catalogs refuse part of what
# delta-sync plans; any other catalog is taken to accept everything Delta does.
CATALOG_PLUGINS: dict[str, Capabilities] = {
    "io.unitycatalog.spark.UCSingleCatalog": UNITY_CATALOG,
}


def catalog_capabilities(catalog: str | None, setting: Callable[[str], str | None]) -> Capabilities:
    """What `catalog` (None: the session's default catalog) supports, from the session's settings."""
    name = catalog or setting("spark.sql.defaultCatalog") or DEFAULT_CATALOG
    plugin = (setting(f"spark.sql.catalog.{name}") or "").strip()
    return CATALOG_PLUGINS.get(plugin, Capabilities())


def _not_delta(name: TableName, kind: object) -> CatalogError:
    return CatalogError(
        f"{name} exists but is a {kind} table, not Delta; delta-sync manages "
        "Delta tables only (convert it with CONVERT TO DELTA, or remove its spec)"
    )


def _shown_name(column: str) -> str:
    prefix = before_column("")
    return f"{column[len(prefix) :]} (before)" if column.lower().startswith(prefix) else column


def _key_samples(key: PrimaryKey | ForeignKey, found: Any) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The key values that break `key`, each with its number of rows, as SQL literals."""
    names = (*key.columns, keyprobe.ROWS)
    return tuple(tuple((n, sql_literal(v)) for n, v in zip(names, sample, strict=True)) for sample in found or ())


class SparkCatalog:
    # Statements may run on several threads at once (api.run_statements): each thread gets a
    # session of its own (sharing the driver, its metastore client and Delta's log cache), because
    # the commit's userMetadata is a session setting.
    max_parallel = 8

    def __init__(
        self, local: LocalCatalog | None, on_status: Callable[[str], None] = lambda _m: None, session: Any = None
    ) -> None:
        """On the embedded catalog `local` (the session starts on first use), or on a running `session`
        (the driver spark-submit started, configured by its command line)."""
        self.local = local
        self._on_status = on_status
        self._spark: Any = session
        self._locations: dict[TableName, str] = {}
        self._threads = threading.local()
        self._starting = threading.Lock()

    @property
    def spark(self) -> Any:
        with self._starting:  # statements may run on several threads: one session start only
            return self._start()

    def _start(self) -> Any:
        if self._spark is None:
            assert self.local is not None  # else a session was given
            # An environment's extra packages (a catalog's connector) join Delta's jars first.
            conf = with_packages(self.local.conf, self._on_status)
            if conf != dict(self.local.conf):
                self.local = dataclasses.replace(self.local, conf=conf)
            self._spark = get_session(self.local, self._on_status)
        return self._spark

    def _setting(self, key: str) -> str | None:
        value = self.spark.conf.get(key, None)
        return None if value is None else str(value)

    def _engine_error(self, exc: Exception, doing: str) -> CatalogError:
        if self.local is not None and derby_locked(self.local, exc):
            return locked_error(self.local)
        refused = refused_by_derby(exc, self._setting) if self.local is None else None
        if refused is not None:
            return refused
        failure = engine_failure(exc)
        first = failure.message.strip().splitlines()[0] if failure.message.strip() else repr(exc)
        return CatalogError(f"{doing}: {first}")

    def read(self, names: Iterable[TableName]) -> CatalogState:
        wanted = sorted(set(names))
        try:
            schemas = self._schemas({n.catalog for n in wanted})
            tables: dict[TableName, Table] = {}
            views: dict[TableName, View] = {}
            for name in wanted:
                if name.schema_name in schemas:
                    found = self._read_table(name)
                    if isinstance(found, View):
                        views[name] = found
                    elif found is not None:
                        tables[name] = found
            capabilities = {c: catalog_capabilities(c, self._setting) for c in {n.catalog for n in wanted}}
        except DeltaSyncError:
            raise
        except Exception as exc:
            raise self._engine_error(exc, "Could not read the catalog") from None
        return CatalogState(tables=tables, schemas=frozenset(schemas), capabilities=capabilities, views=views)

    def _schemas(self, catalogs: set[str | None]) -> set[SchemaName]:
        found: set[SchemaName] = set()
        for catalog in sorted(catalogs, key=lambda c: c or ""):
            target = f" IN {quote_ident(catalog)}" if catalog else ""
            rows = self.spark.sql(f"SHOW SCHEMAS{target}").collect()
            found |= {SchemaName(catalog, str(row[0]).lower()) for row in rows}
        return found

    def _read_table(self, name: TableName) -> Table | View | None:
        if name.catalog is None and getattr(self.spark, "_jvm", None) is not None:
            return self._read_from_delta_log(name)
        return self._read_described(name)

    def _read_from_delta_log(self, name: TableName) -> Table | View | None:
        """The session catalog's entry plus Delta's snapshot, read through the JVM: the same facts
        DESCRIBE DETAIL gives, without the three Spark jobs it runs per table (25x faster on 200 tables)."""
        jvm, session = self.spark._jvm, self.spark._jsparkSession
        catalog = session.sessionState().catalog()
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name.name, jvm.scala.Some(name.schema))
        if not catalog.tableExists(ident):
            return None
        entry = catalog.getTableMetadata(ident)
        if str(entry.tableType().name()).upper() == "VIEW":
            return self._read_view(name)
        provider = entry.provider().get() if entry.provider().isDefined() else entry.tableType().name()
        if str(provider).lower() != "delta":
            raise _not_delta(name, provider)
        location = str(entry.location().toString())
        snapshot = self._snapshot(location)
        if snapshot.version() < 0:
            raise CatalogError(f"{name} is registered as Delta at {location}, but there is no Delta log there")
        self._locations[name] = location
        external = str(entry.tableType().name()).upper() == "EXTERNAL"
        return self._table_of_snapshot(name, snapshot, location if external else None)

    def _table_of_snapshot(self, name: TableName, snapshot: Any, external: str | None = None) -> Table:
        jvm = self.spark._jvm
        metadata, protocol = snapshot.metadata(), snapshot.protocol()
        scala = jvm.scala.jdk.javaapi.CollectionConverters

        def items(seq: Any) -> list[Any]:
            # By index: iterating a Java collection through py4j ends in a Java exception, which pyspark's
            # error handler examines at ~30 ms each (measured: 0.5 s of a warm plan of 4 tables).
            found = scala.asJava(seq)
            return [found.get(i) for i in range(found.size())]

        features = [str(f.name()) for f in items(protocol.implicitlySupportedFeatures().toSeq())]
        features += [str(f) for f in items(protocol.readerAndWriterFeatureNames().toSeq())]
        delta = jvm.org.apache.spark.sql.delta
        clustering: list[str] = []
        if delta.skipping.clustering.ClusteredTableUtils.isSupported(protocol):
            clustering = [
                str(c) for c in items(delta.skipping.clustering.ClusteringColumnInfo.extractLogicalNames(snapshot))
            ]
        checksum = snapshot.checksumOpt()
        num_files = checksum.get().numFiles() if checksum.isDefined() else snapshot.numOfFiles()
        size = checksum.get().tableSizeBytes() if checksum.isDefined() else snapshot.sizeInBytes()
        return table_from_catalog(
            name,
            json.loads(snapshot.schema().json()),
            metadata.description(),
            [str(c) for c in items(metadata.partitionColumns())],
            {str(pair._1()): str(pair._2()) for pair in items(metadata.configuration().toSeq())},
            sorted(set(features)),
            clustering,
            int(num_files),
            int(snapshot.version()),
            int(size),
            (int(protocol.minReaderVersion()), int(protocol.minWriterVersion())),
            external,
        )

    def _read_described(self, name: TableName) -> Table | View | None:
        """Through SQL only: catalogs other than the session's, and Spark Connect (no JVM access)."""
        if not self.spark.catalog.tableExists(str(name)):
            return None
        kind = self._table_type(name)
        if kind == "VIEW":
            return self._read_view(name)
        detail = self.spark.sql(f"DESCRIBE DETAIL {name.sql()}").collect()[0].asDict()
        if str(detail.get("format")).lower() != "delta":
            raise _not_delta(name, detail.get("format"))
        self._locations[name] = str(detail["location"])
        schema, version = self._delta_schema(name, str(detail["location"]))
        return table_from_catalog(
            name,
            schema,
            detail.get("description"),
            list(detail.get("partitionColumns") or []),
            dict(detail.get("properties") or {}),
            list(detail.get("tableFeatures") or []),
            list(detail.get("clusteringColumns") or []),
            int(detail.get("numFiles") or 0),
            version,
            int(detail.get("sizeInBytes") or 0),
            (int(detail.get("minReaderVersion") or 1), int(detail.get("minWriterVersion") or 2)),
            str(detail["location"]) if kind == "EXTERNAL" else None,
        )

    def _table_type(self, name: TableName) -> str:
        """MANAGED, EXTERNAL or VIEW (empty when the catalog does not say)."""
        try:
            return str(self.spark.catalog.getTable(str(name)).tableType or "").upper()
        except Exception:  # a catalog without table types: a Delta table, managed
            return ""

    def _read_view(self, name: TableName) -> View:
        """The view's query as Spark stores it (verbatim), its comment and its columns' comments."""
        rows = [tuple(r) for r in self.spark.sql(f"DESCRIBE TABLE EXTENDED {name.sql()}").collect()]
        columns: list[ViewColumn] = []
        details: dict[str, str] = {}
        in_columns = True
        for field, value, comment in rows:
            field = str(field or "")
            if in_columns and (not field.strip() or field.startswith("#")):
                in_columns = False
            if in_columns:
                columns.append(ViewColumn(field, str(comment) if comment else None))
            elif field.strip():
                details.setdefault(field.strip(), str(value if value is not None else ""))
        text = details.get("View Original Text") or details.get("View Text") or ""
        query_columns = viewsql.column_list(details.get("View Query Output Columns", ""))
        return View(name, text.strip(), details.get("Comment") or None, tuple(columns), None, query_columns)

    def _delta_schema(self, name: TableName, location: str) -> tuple[dict[str, Any], int | None]:
        """Delta's own schema and version: Spark's view strips generation and identity metadata."""
        snapshot = self._table_snapshot(name, location)
        if snapshot is None:  # Spark Connect, or no Delta table behind the catalog's entry
            version = self.spark.sql(f"DESCRIBE HISTORY {name.sql()} LIMIT 1").collect()[0]["version"]
            return dict(self.spark.table(name.sql()).schema.jsonValue()), int(version)
        return dict(json.loads(snapshot.schema().json())), int(snapshot.version())

    def _table_snapshot(self, name: TableName, location: str) -> Any:
        """Delta's latest snapshot of `name` through the JVM, or None without JVM access.

        A table of another catalog is loaded through that catalog, not from its path: a catalog-managed
        table (Unity Catalog's managed tables) has commits the catalog holds that its `_delta_log` may
        not show yet, and Delta may refuse path-based access to it."""
        jvm = getattr(self.spark, "_jvm", None)
        if jvm is None:
            return None
        if name.catalog is None:
            return self._snapshot(location)
        session = self.spark._jsparkSession
        plugin = session.sessionState().catalogManager().catalog(name.catalog)
        namespace = self.spark.sparkContext._gateway.new_array(jvm.java.lang.String, 1)
        namespace[0] = name.schema
        table = plugin.loadTable(jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, name.name))
        if "DeltaTableV2" not in str(table.getClass().getName()):
            return None
        return table.initialSnapshot()

    def _snapshot(self, location: str) -> Any:
        """Delta's latest snapshot of the table at `location` (through the JVM; classic sessions only)."""
        delta_log = self.spark._jvm.org.apache.spark.sql.delta.DeltaLog
        return delta_log.forTableWithSnapshot(self.spark._jsparkSession, location)._2()

    def read_at(self, name: TableName, version: int) -> Table:
        """The table as it was at `version`, from Delta's log (its schema, properties, rules, features)."""
        try:
            location = self._location(name)
            if getattr(self.spark, "_jvm", None) is None:
                return self._read_logged_at(name, location, version)
            jvm = self.spark._jvm
            log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, location)
            none = jvm.scala.Option.apply(None)
            return self._table_of_snapshot(name, log.getSnapshotAt(int(version), none, none, False))
        except DeltaSyncError:
            raise
        except Exception as exc:
            raise self._engine_error(exc, f"Could not read {name} as it was at version {version}") from None

    def _location(self, name: TableName) -> str:
        if name not in self._locations:
            self._locations[name] = str(self.spark.sql(f"DESCRIBE DETAIL {name.sql()}").collect()[0]["location"])
        return self._locations[name]

    def _read_logged_at(self, name: TableName, location: str, version: int) -> Table:
        raise CatalogError(f"Could not read {name} as it was at version {version}: no access to Delta's log")

    def check_problems(self, work: Sequence[tuple[Table, Sequence[Check]]]) -> list[SpecProblem]:
        from delta_sync.spark.check_analysis import check_problems

        try:
            return check_problems(self.spark, work)
        except DeltaSyncError:
            raise
        except Exception as exc:
            raise self._engine_error(exc, "Could not analyse the CHECK expressions") from None

    def statement_problems(self, statements: Sequence[str]) -> list[str]:
        """One sentence per statement that Spark's parser (Delta's, with its extension on) refuses.
        Parsing only: nothing is analysed or run. Delta parses an ADD CONSTRAINT's expression again
        when it runs, from its own tokens joined by spaces (`::` becomes `: :`), so that is parsed too."""
        parser = self.spark._jsparkSession.sessionState().sqlParser()
        problems = []
        for statement in statements:
            try:
                parsed = parser.parsePlan(statement)
                if parsed.getClass().getSimpleName() == "AlterTableAddConstraint":
                    parser.parseExpression(parsed.expr())
            except Exception as exc:
                problems.append(unparsable(statement, exc))
        return problems

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        """At most one scan for all rules of `table`.

        When every rule is a NOT NULL rule, Delta's per-file null counts answer them (if every file
        has them and no deletion vector makes them stale) and no scan runs. Otherwise all rules
        share one aggregate query: the statistics would be a Spark job of their own on top of a scan
        that runs anyway (BENCHMARKS.md, the probe's mixed case). Sample rows are fetched only for
        rules that some rows violate.
        """
        try:
            # NOT NULL rules and a backfill's count of NULLs are both per-file null counts of a column, except
            # a NOT NULL rule on a column a backfill fills (it holds for the filled rows, not the table's).
            filled = {column.lower() for c in checks if (column := unfilled_of(c)) is not None}
            only_nulls = all(
                ((column := not_null_column(c)) is not None and column.lower() not in filled)
                or unfilled_of(c) is not None
                for c in checks
            )
            known = self._null_counts(table, checks) if only_nulls else {}
            rest = [c for c in checks if c.name not in known]
            counts = dict(known)
            if rest:
                row = self.spark.sql(probe_sql(relation, rest)).collect()[0]
                counts.update({check.name: int(row[i]) for i, check in enumerate(rest)})
            results = []
            for check in checks:
                samples: tuple[tuple[tuple[str, str], ...], ...] = ()
                if counts[check.name] and not check.name.startswith(FILL_RULE_PREFIX):
                    samples = self._samples(relation, check, primary_key)
                source = "statistics" if check.name in known else "scan"
                results.append(ProbeResult(table, check.name, counts[check.name], samples, source=source))
            return results
        except DeltaSyncError:
            raise
        except Exception as exc:
            failure = engine_failure(exc)
            first = failure.message.strip().splitlines()[0] if failure.message.strip() else repr(exc)
            where = ", ".join(f"`{c.name}` ({c.origin})" if c.origin else f"`{c.name}`" for c in checks)
            raise CatalogError(f"Could not check the data of {table} against {where}: {first}") from None

    def _samples(
        self, relation: str, check: Check, primary_key: PrimaryKey | None = None
    ) -> tuple[tuple[tuple[str, str], ...], ...]:
        """Rows violating `check`, their values as SQL literals (the schema alone is read for the columns)."""
        schema = self.spark.sql(f"SELECT * FROM {relation}").schema
        # A converted column's value before the conversion is shown as `column (before)`.
        fields = [(f.name, bool(f.nullable)) for f in schema.fields if not is_helper_column(f.name)]
        if check.name.startswith(CAST_RULE_PREFIX):
            fields += [(f.name, True) for f in schema.fields if is_helper_column(f.name)]
        key = primary_key.columns if primary_key is not None else ()
        rows = self.spark.sql(sample_sql(relation, check, fields, primary_key=key)).collect()
        return tuple(
            tuple((_shown_name(k), sql_literal(v)) for k, v in r.asDict(recursive=False).items()) for r in rows
        )

    def probe_keys(self, table: TableName, relation: str, keys: Sequence[KeyCheck]) -> list[ProbeResult]:
        """One Spark job for all keys of `table`, their samples included (keyprobe.scan_sql)."""
        if not keys:
            return []
        try:
            row = self.spark.sql(keyprobe.scan_sql(relation, keys)).collect()[0]
            return [
                ProbeResult(table, key.name, int(row[f"k{i}"]), _key_samples(key, row[f"s{i}"]))
                for i, (key, _parent) in enumerate(keys)
            ]
        except DeltaSyncError:
            raise
        except Exception as exc:
            failure = engine_failure(exc)
            first = failure.message.strip().splitlines()[0] if failure.message.strip() else repr(exc)
            where = ", ".join(f"`{k.name}` ({k.origin})" if k.origin else f"`{k.name}`" for k, _p in keys)
            raise CatalogError(f"Could not check the data of {table} against the key(s) {where}: {first}") from None

    def _null_counts(self, table: TableName, checks: Sequence[Check]) -> dict[str, int]:
        columns = {c.name: col for c in checks if (col := not_null_column(c) or unfilled_of(c)) is not None}
        jvm = getattr(self.spark, "_jvm", None)
        location = self._locations.get(table)
        if not columns or jvm is None or location is None:
            return {}
        from pyspark.sql import DataFrame

        try:
            snapshot = self._table_snapshot(table, location)
        except Exception:
            return {}  # no snapshot to read statistics from: scan instead
        if snapshot is None:
            return {}
        # Statistics are keyed by physical name, which column mapping makes differ from the logical one.
        physical = {
            f["name"].lower(): (f.get("metadata") or {}).get("delta.columnMapping.physicalName", f["name"])
            for f in json.loads(snapshot.schema().json())["fields"]
        }
        wanted = {check: physical[col.lower()] for check, col in columns.items() if col.lower() in physical}
        if not wanted:
            return {}
        files = DataFrame(snapshot.withStats(), self.spark)
        aggregates = ["count_if(deletionVector IS NOT NULL) AS dvs"]
        for index, name in enumerate(wanted.values()):
            field = f"stats.nullCount.{quote_ident(name)}"
            aggregates += [f"sum({field}) AS n{index}", f"count_if({field} IS NULL) AS missing{index}"]
        try:
            row = files.selectExpr(*aggregates).collect()[0]
        except Exception:
            return {}  # no statistics for these columns: scan instead
        if row["dvs"]:
            return {}
        return {check: int(row[f"n{i}"] or 0) for i, check in enumerate(wanted) if row[f"missing{i}"] == 0}

    def _thread_session(self) -> Any:
        # A Spark Connect client session has no newSession(); its catalog runs one statement at a time.
        if threading.current_thread() is threading.main_thread() or not hasattr(self.spark, "newSession"):
            return self.spark
        session = getattr(self._threads, "session", None)
        if session is None:
            session = self._threads.session = self.spark.newSession()
            if self.local is None:
                _copy_settings(self.spark, session)
        return session

    def execute(self, statement: str, metadata: str | None = None) -> None:
        spark = self._thread_session()
        # A session the caller owns may carry its own userMetadata: it gets it back afterwards.
        previous = spark.conf.get(_USER_METADATA, None) if metadata is not None and self.local is None else None
        try:
            if metadata is not None:
                spark.conf.set(_USER_METADATA, metadata)
            warm.statement("running", statement)
            spark.sql(statement)
        except Exception as exc:
            if self.local is not None and derby_locked(self.local, exc):
                raise locked_error(self.local) from None
            raise StatementFailed(engine_failure(exc)) from None
        finally:
            warm.statement("ended", statement)
            if previous is not None:
                spark.conf.set(_USER_METADATA, previous)
            elif metadata is not None:
                spark.conf.unset(_USER_METADATA)

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        try:
            rows = self.spark.sql(f"DESCRIBE HISTORY {name.sql()} LIMIT {int(limit)}").collect()
        except Exception as exc:
            raise self._engine_error(exc, f"Could not read the history of {name}") from None
        return [
            Commit(
                version=int(r["version"]),
                timestamp=str(r["timestamp"]),
                operation=str(r["operation"]),
                user=r["userName"],
                metadata=r["userMetadata"],
                engine=r.asDict().get("engineInfo"),
                parameters=tuple(sorted((str(k), str(v)) for k, v in (r["operationParameters"] or {}).items())),
            )
            for r in rows
        ]

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        try:
            rows = self.spark.sql(f"SHOW TABLES IN {schema.sql()}").collect()
        except Exception as exc:
            raise self._engine_error(exc, f"Could not list the tables of {schema}") from None
        return sorted(
            TableName(schema.catalog, schema.name, str(r["tableName"]).lower()) for r in rows if not r["isTemporary"]
        )

    def analyse_queries(
        self,
        stand_ins: Sequence[tuple[str, Sequence[tuple[str, str]]]],
        queries: Sequence[tuple[str, str]],
    ) -> list[str | None]:
        spark = self.spark
        registered: list[str] = []
        results: list[str | None] = []
        try:
            for name, columns in stand_ins:
                schema = ", ".join(f"{quote_ident(column)} {kind}" for column, kind in columns)
                spark.createDataFrame([], schema).createOrReplaceTempView(name)
                registered.append(name)
            for name, query in queries:
                try:
                    frame = spark.sql(query)
                    _ = frame.schema  # analysed here (over Spark Connect, by the server)
                except Exception as exc:
                    failure = engine_failure(exc)
                    lines = failure.message.strip().splitlines()
                    results.append((lines[0] if lines else repr(exc))[:500])
                    continue
                if name:
                    frame.createOrReplaceTempView(name)
                    registered.append(name)
                results.append(None)
        except DeltaSyncError:
            raise
        except Exception as exc:
            raise self._engine_error(exc, "Could not analyse the views' queries") from None
        finally:
            for name in registered:
                spark.catalog.dropTempView(name)
        return results

    def list_views(self, schema: SchemaName) -> list[TableName]:
        try:
            rows = self.spark.sql(f"SHOW VIEWS IN {schema.sql()}").collect()
        except Exception as exc:
            raise self._engine_error(exc, f"Could not list the views of {schema}") from None
        return sorted(
            TableName(schema.catalog, schema.name, str(r["viewName"]).lower()) for r in rows if not r["isTemporary"]
        )

    def statement_danger(self, statement: str) -> str | None:
        from delta_sync.spark import statement_kind

        return statement_kind.danger(self.spark, statement)

    def query(self, statement: str, limit: int) -> QueryResult:
        spark = self.spark
        try:
            frame = spark.sql(statement)
            rows = frame.limit(limit + 1).collect() if frame.columns else []
        except Exception as exc:
            raise self._engine_error(exc, "The statement failed") from None
        return QueryResult(
            columns=tuple(frame.columns),
            rows=tuple(tuple(row) for row in rows[:limit]),
            truncated=len(rows) > limit,
        )


def _copy_settings(source: Any, target: Any) -> None:
    """A new session (one per apply thread) starts from the application's settings only: what the caller
    set on its session at runtime (settings, the current catalog and schema) is carried over, so a
    statement means the same on every thread."""
    for key, value in source.conf.getAll.items():
        if target.conf.get(key, None) != value and source.conf.isModifiable(key):
            target.conf.set(key, value)
    # `USE CATALOG` / `USE` are session state, not settings: two-part names must resolve alike.
    target.catalog.setCurrentCatalog(source.catalog.currentCatalog())
    target.catalog.setCurrentDatabase(source.catalog.currentDatabase())
