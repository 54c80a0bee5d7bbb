"""delta-engine 0.14.0 on open-source Spark: the shim the side-by-side needs, and the two ways it is timed.

Runs with delta-engine's own interpreter (it needs Python >= 3.12; bench/run.py makes that venv under /tmp):

  PY312 bench/delta_engine_shim.py cli HOME CONF_JSON MODULE:ATTR   `delta-engine plan MODULE:ATTR`, its own CLI
  PY312 bench/delta_engine_shim.py serve HOME CONF_JSON MODULE:ATTR one live session; each line on stdin times
                                                                    one `engine.sync(*tables, dry_run=True)`
  python bench/delta_engine_shim.py declarations OUT.py SPECS       the estate's specs as DeltaTable declarations

delta-engine reads a table with `DESCRIBE TABLE EXTENDED ... AS JSON` (Databricks only: open-source Spark refuses
it for v2 tables such as Delta's) and five `information_schema` queries (tags, keys; no such schema here). The shim
answers them on the same session, with the Spark configuration delta-sync uses (CONF_JSON, written by bench/run.py
from `delta_sync.spark.session.spark_conf`: Delta, Hive support, the embedded Derby catalog):
- the JSON document from `DESCRIBE TABLE EXTENDED` (type, provider, comment, partitioning, clustering),
  `SHOW TBLPROPERTIES` (the properties) and the table's schema (nullability, comments, nested types);
- the `information_schema` queries with no rows and no Spark call (open-source Spark has no keys or tags to
  report), which is the cheapest answer delta-engine could get;
- the CLI's Databricks SQL connection with the local session (its host and warehouse are only printed).
Nothing else of delta-engine is changed: its planning, validation and rendering run as shipped.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

INFORMATION_SCHEMA = re.compile(r"\binformation_schema\.(\w+)", re.IGNORECASE)
DESCRIBE_JSON = re.compile(r"^DESCRIBE TABLE EXTENDED (?P<name>.+) AS JSON$", re.IGNORECASE | re.DOTALL)
SCHEMA_WHERE = re.compile(r"schema_name = '(?P<schema>(?:[^']|'')*)'")
SIMPLE = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def session(home: Path, conf_file: Path) -> Any:
    """A SparkSession with delta-sync's configuration for the local catalog in `home` (as bench/baseline_session)."""
    from pyspark.sql import SparkSession

    for folder in (home / "logs", home / "conf", home / "warehouse"):
        folder.mkdir(parents=True, exist_ok=True)
    os.environ["SPARK_CONF_DIR"] = str(home / "conf")
    builder = SparkSession.builder
    for key, value in json.loads(conf_file.read_text()).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def type_json(spark_type: Any) -> dict[str, Any]:
    """A Spark type (its `jsonValue()`) as Databricks' `AS JSON` document spells it."""
    if isinstance(spark_type, str):
        if found := DECIMAL.fullmatch(spark_type):
            return {"name": "decimal", "precision": int(found[1]), "scale": int(found[2])}
        return {"name": SIMPLE.get(spark_type, spark_type)}
    kind = spark_type["type"]
    if kind == "array":
        return {"name": "array", "element_type": type_json(spark_type["elementType"])}
    if kind == "map":
        return {
            "name": "map",
            "key_type": type_json(spark_type["keyType"]),
            "value_type": type_json(spark_type["valueType"]),
        }
    if kind == "struct":
        fields = [
            {"name": f["name"], "type": type_json(f["type"]), "nullable": f["nullable"]} for f in spark_type["fields"]
        ]
        return {"name": "struct", "fields": fields}
    raise ValueError(f"unknown Spark type {spark_type!r}")


def describe_json(spark: Any, name: str) -> str:
    """What `DESCRIBE TABLE EXTENDED name AS JSON` returns on Databricks, from open-source Spark's own commands."""
    rows = [(r[0] or "", r[1] or "", r[2]) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()]
    detail: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    section = ""
    for col_name, data_type, _comment in rows:
        if col_name == "# col_name":  # the header row of a section's column list
            continue
        if col_name.startswith("# "):
            section = col_name
            sections.setdefault(section, [])
        elif not col_name:
            section = ""
        elif section == "# Detailed Table Information":
            detail[col_name] = data_type
        elif section:
            sections[section].append(col_name)
    properties = {str(r[0]): str(r[1]) for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    schema = spark.table(name).schema.jsonValue()
    columns = [
        {
            "name": f["name"],
            "type": type_json(f["type"]),
            "nullable": f["nullable"],
            **({"comment": f["metadata"]["comment"]} if "comment" in f.get("metadata", {}) else {}),
        }
        for f in schema["fields"]
    ]
    document = {
        "table_name": name,
        "type": detail.get("Type", "").upper(),
        "provider": detail.get("Provider", "").lower(),
        "comment": detail.get("Comment"),
        "columns": columns,
        "partition_columns": sections.get("# Partition Information", []),
        "clustering_columns": sections.get("# Clustering Information", []),
        "table_properties": properties,
    }
    return json.dumps(document)


def install(spark: Any) -> None:
    """Route delta-engine's reads through `run_query` below."""
    from delta_engine.adapters.databricks.spark import reader

    def run_query(self: Any, sql: str) -> list[Any]:
        text = sql.strip()
        if found := DESCRIBE_JSON.match(text):
            return [(describe_json(spark, found["name"]),)]
        if found := INFORMATION_SCHEMA.search(text):
            if found[1].lower() == "schemata" and (schema := SCHEMA_WHERE.search(text)):
                wanted = schema["schema"].replace("''", "'")
                return [(wanted,)] if spark.catalog.databaseExists(wanted) else []
            return []
        return list(self._runner.run(sql).collect())

    reader.SparkReader._run_query = run_query


def cli(home: Path, conf_file: Path, reference: str) -> None:
    """`delta-engine plan REFERENCE`, its own command line, on the local session."""
    from contextlib import contextmanager

    from delta_engine.cli import app as cli_app
    from delta_engine.cli.connection import Target
    from delta_engine.databricks import build_spark_engine

    @contextmanager
    def open_connection() -> Any:
        spark = session(home, conf_file)
        install(spark)
        yield Target(host="local", warehouse_id="open-source-spark"), spark

    cli_app.open_connection = open_connection
    cli_app.build_sql_engine = build_spark_engine
    sys.argv = ["delta-engine", "plan", reference, "--fail-on-changes"]
    cli_app.app()


def serve(home: Path, conf_file: Path, reference: str) -> None:
    """The library on one live session: a line on stdin -> one dry-run sync of every declaration, timed."""
    from delta_engine.cli.declarations import DeclarationRef, load_declarations
    from delta_engine.databricks import build_spark_engine

    tables = load_declarations(DeclarationRef.parse(reference))
    spark = session(home, conf_file)
    install(spark)
    engine = build_spark_engine(spark)
    print("READY", flush=True)
    for _line in sys.stdin:
        started = time.perf_counter()
        report = engine.sync(*tables, dry_run=True)
        elapsed = time.perf_counter() - started
        print(f"TIME {elapsed:.6f} changes={report.has_changes} failures={report.has_failures}", flush=True)


SPEC_TYPES = {
    "bigint": "Long()",
    "int": "Integer()",
    "string": "String()",
    "double": "Double()",
    "boolean": "Boolean()",
    "timestamp": "Timestamp()",
    "date": "Date()",
}
MANAGED = (
    "delta.columnMapping.mode",
    "delta.enableChangeDataFeed",
    "delta.deletedFileRetentionDuration",
    "delta.logRetentionDuration",
    "delta.dataSkippingNumIndexedCols",
    "delta.enableTypeWidening",
)


def spec_type(text: str) -> str:
    if found := DECIMAL.fullmatch(text):
        return f"Decimal({found[1]}, {found[2]})"
    if text.startswith("array<") and text.endswith(">"):
        return f"Array({spec_type(text[6:-1])})"
    return SPEC_TYPES[text]


def declarations(out: Path, specs: Path) -> None:
    """delta-sync's spec files as delta-engine declarations of the same tables (`tables` in module `out`).
    delta-engine has no CHECK rules and manages six Delta properties only: the rest of each table is declared."""
    import yaml

    lines = [
        "from delta_engine.schema import Array, Boolean, Column, Date, Decimal, DeltaTable, Double, Integer, Long",
        "from delta_engine.schema import String, Timestamp",
        "",
        "tables = [",
    ]
    for path in sorted(specs.rglob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        schema, name = spec["table"].split(".")
        columns = ", ".join(
            f"Column({c['name']!r}, {spec_type(c['type'])}, nullable={c.get('nullable', True)!r}"
            f", comment={c.get('comment', '')!r})"
            for c in spec["columns"]
        )
        properties = {k: v for k, v in spec.get("properties", {}).items() if k in MANAGED}
        lines.append(
            f"    DeltaTable(catalog='spark_catalog', schema={schema!r}, name={name!r}, columns=[{columns}],"
            f" comment={spec.get('comment', '')!r}, properties={properties!r},"
            f" partitioned_by={tuple(spec.get('partitioned_by', ()))!r}),"
        )
    lines.append("]")
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> None:
    command = argv[0]
    if command == "cli":
        cli(Path(argv[1]), Path(argv[2]), argv[3])
    elif command == "serve":
        serve(Path(argv[1]), Path(argv[2]), argv[3])
    elif command == "declarations":
        declarations(Path(argv[1]), Path(argv[2]))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
