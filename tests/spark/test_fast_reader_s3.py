"""The fast reader on S3 (issue 46): tables on the tests' S3 server (tests/servers/s3.py), behind a proxy that counts
the requests (tests/servers/s3_proxy.py), read to the same `Table`, field by field, as Delta's own read.

Two ways, as the S3 connector (S3A) may or may not be in this process's session:
- The tables of tests/spark/test_fast_reader.py, copied to S3 as they are on disk, the catalog's entries pointing
  there (one spelled `s3://`): every table reads as the JVM reader reads the original, and the requests are
  counted: a listing and a checksum file per table cold, one listing per unchanged table after, from the cache in
  memory and from its file. The tables the Python side cannot read (no checksum file: delta-rs's, one whose file
  is gone) go to Delta, which reads their originals here.
- The same tables made on S3 through Spark and Delta (S3A), the fast reader against `DELTA_SYNC_READER=jvm` on
  the same session. This needs S3A's jars in the session: in a child process with an environment on S3 (the
  session then fetches them, `delta_sync.spark.object_storage`), unless this process's session has them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import boto3
import pytest

from delta_sync.model.state import CatalogState, Table, TableName
from delta_sync.spark import bulk_reads, delta_log, remote_log, table_cache, table_reads
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.session import LocalCatalog
from delta_sync.spark.table_reads import CatalogEntry
from tests.servers.s3 import S3
from tests.servers.s3_proxy import CountingProxy, counting_proxy
from tests.spark.test_fast_reader import SCHEMA, Files, cold_read, jvm_read, make_tables, name

BUCKET = "lake"  # the S3 server's own
# The child's warehouse: apart from the one other modules' environments use on the same server.
WAREHOUSE = f"s3a://{BUCKET}/fast_reader_warehouse"
ACCESS, SECRET = "fast-reader-access", "fast-reader-secret"
ROOT = Path(__file__).resolve().parents[2]


def s3a_settings(url: str) -> dict[str, str]:
    """What an environment on this S3 server sets (without the `spark.hadoop.` prefix)."""
    return {
        "fs.s3a.endpoint": url,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.access.key": ACCESS,
        "fs.s3a.secret.key": SECRET,
        "fs.s3.impl": remote_log.S3A_FILESYSTEM,
    }


def client(url: str) -> Any:
    return boto3.client(
        "s3", endpoint_url=url, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    )


def delta_rs_options(url: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": ACCESS,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }


def assert_same(fast: CatalogState, jvm: CatalogState, locations: dict[TableName, str] | None = None) -> None:
    """Every field equal; `locations` gives an external table's location where the two reads differ in it (a
    copy on S3 read against its original on disk)."""
    assert sorted(fast.tables) == sorted(jvm.tables)
    assert fast.views == jvm.views
    for table in jvm.tables:
        expected = jvm.tables[table]
        if locations and table in locations and expected.location is not None:
            expected = replace(expected, location=locations[table])
        for field in fields(Table):
            ours, theirs = getattr(fast.tables[table], field.name), getattr(expected, field.name)
            assert ours == theirs, f"{table}: {field.name} is {ours!r} read fast, {theirs!r} through the JVM"


@pytest.fixture
def proxy(s3: S3) -> Iterator[CountingProxy]:
    remote_log.forget_clients()
    with counting_proxy(s3.endpoint) as found:
        yield found
    remote_log.forget_clients()


# 1. The module's tables copied to S3.


@pytest.fixture(scope="module")
def copied(
    catalog: SparkCatalog, s3: S3, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[list[TableName], dict[TableName, str], dict[str, Path]]]:
    """The tables made on disk, each copied to `s3a://lake/fast_reader_copies/<table>`: their names, the S3
    location of each and the original folder of each S3 location."""
    names = make_tables(catalog, tmp_path_factory.mktemp("fast_reader_s3"))
    entries = bulk_reads.catalog_entries(catalog, SCHEMA, [n.name for n in names])
    assert entries is not None
    s3_client = client(s3.endpoint)
    on_s3: dict[TableName, str] = {}
    originals: dict[str, Path] = {}
    for table in names:
        entry = entries.get(table.name)
        if entry is None or entry.location is None:
            continue  # the view, the missing name
        folder = delta_log.local_path(entry.location)
        assert folder is not None
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                key = f"fast_reader_copies/{table.name}/{path.relative_to(folder).as_posix()}"
                s3_client.upload_file(str(path), BUCKET, key)
        # One table spelled as most users write it: `s3://` is the same place.
        scheme = "s3" if table.name == "plain" else "s3a"
        on_s3[table] = f"{scheme}://{BUCKET}/fast_reader_copies/{table.name}"
        originals[f"s3://{BUCKET}/fast_reader_copies/{table.name}"] = folder
    yield names, on_s3, originals
    catalog.spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


@pytest.fixture
def on_s3(
    catalog: SparkCatalog,
    copied: tuple[list[TableName], dict[TableName, str], dict[str, Path]],
    proxy: CountingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[list[TableName], list[str]]]:
    """The catalog's entries of the copied tables pointing at their copies on S3 (through the proxy), and the
    tables the fast reader left to Delta: Delta reads those from their originals (the session may lack S3A)."""
    names, locations, originals = copied
    entries = bulk_reads.catalog_entries

    def moved(spark_catalog: Any, schema: str, wanted: Any) -> dict[str, CatalogEntry] | None:
        found = entries(spark_catalog, schema, wanted)
        if found is None or schema != SCHEMA:
            return found
        return {
            table: replace(entry, location=locations.get(name(table), entry.location)) for table, entry in found.items()
        }

    to_delta: list[str] = []
    facts = table_reads.location_facts

    def original(spark_catalog: Any, table: TableName, where: str) -> delta_log.TableFacts:
        found = remote_log.remote_location(where)
        if found is not None:
            to_delta.append(table.name)
            where = str(originals[found.key])
        return facts(spark_catalog, table, where)

    monkeypatch.setattr(bulk_reads, "catalog_entries", moved)
    monkeypatch.setattr(table_reads, "location_facts", original)
    for key, value in s3a_settings(proxy.url).items():
        catalog.spark.conf.set(key, value)
    try:
        yield names, to_delta
    finally:
        for key in s3a_settings(proxy.url):
            catalog.spark.conf.unset(key)


def test_tables_copied_to_s3_read_as_delta_reads_them(
    catalog: SparkCatalog,
    copied: tuple[list[TableName], dict[TableName, str], dict[str, Path]],
    on_s3: tuple[list[TableName], list[str]],
    proxy: CountingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names, to_delta = on_s3
    locations = copied[1]
    # The originals on disk, through Delta, one table at a time (that reader asks the catalog itself).
    jvm = jvm_read(catalog, names, monkeypatch)
    to_delta.clear()
    proxy.reset()
    fast = cold_read(catalog, names)
    assert_same(fast, jvm, locations)
    assert sorted(to_delta) == ["delta_rs", "no_crc"]
    assert fast.tables[name("external")].location == "s3a://lake/fast_reader_copies/external"
    tables = len(jvm.tables)
    # Cold: a listing per table and a checksum file per table that has one (delta-rs's and no_crc's have none).
    assert proxy.snapshot() == {"list": tables, "get": tables - 2}

    to_delta.clear()
    proxy.reset()
    assert_same(catalog.read(names), jvm, locations)
    assert proxy.snapshot() == {"list": tables}
    # From the cache file, in a new process (the memory cache gone): still one listing each, and nothing for Delta.
    table_cache.forget()
    proxy.reset()
    assert_same(catalog.read(names), jvm, locations)
    assert proxy.snapshot() == {"list": tables}
    assert to_delta == []
    assert catalog.local is not None
    cached = json.loads((catalog.local.home / table_cache.CACHE_FILE).read_text())["tables"]
    assert sorted(k for k in cached if k.startswith("s3://")) == sorted(
        f"s3://{BUCKET}/fast_reader_copies/{t.name}" for t in jvm.tables
    )
    assert SECRET not in json.dumps(cached)


def test_what_moved_on_s3_is_read_again(
    catalog: SparkCatalog,
    copied: tuple[list[TableName], dict[TableName, str], dict[str, Path]],
    on_s3: tuple[list[TableName], list[str]],
    proxy: CountingProxy,
    s3: S3,
) -> None:
    names = on_s3[0]
    cold_read(catalog, names)
    # A new version of `plain` on disk, its new log files copied to S3.
    catalog.spark.sql(f"ALTER TABLE {SCHEMA}.plain ADD COLUMN note STRING")
    folder = copied[2][f"s3://{BUCKET}/fast_reader_copies/plain"]
    for version in ("json", "crc"):
        client(s3.endpoint).upload_file(
            str(folder / "_delta_log" / f"{1:020d}.{version}"),
            BUCKET,
            f"fast_reader_copies/plain/_delta_log/{1:020d}.{version}",
        )
    proxy.reset()
    after = catalog.read(names)
    assert [c.name for c in after.tables[name("plain")].columns] == ["id", "note"]
    assert after.tables[name("plain")].version == 1
    assert proxy.snapshot() == {"list": len(after.tables), "get": 1}


def test_a_bucket_read_in_a_way_this_reader_does_not_goes_to_delta(
    catalog: SparkCatalog, on_s3: tuple[list[TableName], list[str]], proxy: CountingProxy
) -> None:
    catalog.spark.conf.set(f"fs.s3a.bucket.{BUCKET}.encryption.algorithm", "SSE-C")
    try:
        table_cache.forget()
        found = catalog.read([name("mapped"), name("plain")])
    finally:
        catalog.spark.conf.unset(f"fs.s3a.bucket.{BUCKET}.encryption.algorithm")
    assert proxy.total() == 0
    assert sorted(found.tables) == [name("mapped"), name("plain")]
    assert sorted(on_s3[1]) == ["mapped", "plain"]


# 2. Tables made on S3 through Spark and Delta.


def s3a_available(catalog: SparkCatalog) -> bool:
    try:
        catalog.spark._jvm.java.lang.Class.forName(remote_log.S3A_FILESYSTEM)
    except Exception:
        return False
    return True


def read_both_ways(catalog: SparkCatalog, url: str, root: str) -> dict[str, Any]:
    """The module's tables made under `root` on the S3 server at `url` (through S3A, whose settings the session
    has), then read fast, cold and warm, through a counting proxy, and through the JVM: the fields that differ,
    the requests of each fast read, and the tables' locations."""
    s3_client = client(url)

    def remove(where: str, file: str) -> None:
        found = remote_log.remote_location(where)
        assert found is not None
        s3_client.delete_object(Bucket=found.bucket, Key=f"{found.log}{file}")

    names = make_tables(catalog, Path("/nonexistent"), Files(root, remove, delta_rs_options(url)))
    os.environ.pop(bulk_reads.READER_VARIABLE, None)
    table_cache.forget()
    remote_log.forget_clients()
    requests = []
    # The fast reader takes its endpoint from the session's settings as they are now; S3A keeps its client.
    with counting_proxy(url) as proxy:
        catalog.spark.conf.set("fs.s3a.endpoint", proxy.url)
        try:
            reads = []
            for _ in range(2):
                proxy.reset()
                reads.append(catalog.read(names))
                requests.append(proxy.snapshot())
        finally:
            catalog.spark.conf.set("fs.s3a.endpoint", url)
    os.environ[bulk_reads.READER_VARIABLE] = "jvm"
    try:
        jvm = catalog.read(names)
    finally:
        os.environ.pop(bulk_reads.READER_VARIABLE, None)
    differences = [
        f"{table}: {field.name} is {getattr(read.tables[table], field.name)!r} read fast ({how}), "
        f"{getattr(jvm.tables[table], field.name)!r} through the JVM"
        for how, read in zip(("cold", "warm"), reads, strict=True)
        for table in jvm.tables
        for field in fields(Table)
        if table not in read.tables or getattr(read.tables[table], field.name) != getattr(jvm.tables[table], field.name)
    ]
    differences += [
        f"views differ ({how})" for how, read in zip(("cold", "warm"), reads, strict=True) if read.views != jvm.views
    ]
    locations = {str(t): str(jvm.tables[t].location) for t in jvm.tables if jvm.tables[t].location}
    catalog.spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    return {
        "tables": len(jvm.tables),
        "views": len(jvm.views),
        "differences": differences,
        "requests": requests,
        "locations": locations,
    }


def child(url: str, home: str) -> None:
    """The second way in a process of its own: an environment on S3, whose session fetches S3A's jars."""
    conf = {f"spark.hadoop.{k}": v for k, v in s3a_settings(url).items()}
    conf["spark.sql.warehouse.dir"] = WAREHOUSE
    catalog = SparkCatalog(LocalCatalog(Path(home), master="local[1]", conf=conf))
    print(json.dumps(read_both_ways(catalog, url, f"s3a://{BUCKET}/fast_reader_made")))


def test_tables_made_on_s3_read_as_delta_reads_them(catalog: SparkCatalog, s3: S3, tmp_path: Path) -> None:
    if s3a_available(catalog):
        for key, value in s3a_settings(s3.endpoint).items():
            catalog.spark.conf.set(key, value)
        try:
            found = read_both_ways(catalog, s3.endpoint, f"s3a://{BUCKET}/fast_reader_made")
        finally:
            for key in s3a_settings(s3.endpoint):
                catalog.spark.conf.unset(key)
    else:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                f"from {__name__} import child; import sys; child(*sys.argv[1:])",
                s3.endpoint,
                str(tmp_path / "home"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            log = tmp_path / "home" / "logs" / "spark.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            pytest.fail(f"the child exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}\n{tail}")
        found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["differences"] == []
    tables = found["tables"]
    assert tables >= 14
    # Cold: a listing per table, and a checksum file per table that has one (not delta-rs's, nor no_crc's);
    # warm: one listing per table.
    assert found["requests"] == [{"list": tables, "get": tables - 2}, {"list": tables}]
    assert found["views"] == 1
    assert all(location.startswith("s3a://") for location in found["locations"].values())
    assert SECRET not in json.dumps(found)
