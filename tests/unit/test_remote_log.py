"""The fast reader on S3 without a JVM (`remote_log`): locations and S3A's settings read as S3A reads them, the
latest commit from a listing by the local reader's rules, and, against the tests' S3 server (tests/servers/s3.py)
behind a counting proxy (tests/servers/s3_proxy.py), what is read and how many requests it costs: a log copied
from disk reads as the local reader reads it, a table delta-rs wrote to S3 lists at the version delta-rs reports,
an unchanged table costs one listing, and a server that fails sends every table to Delta without retrying each.
The same tables read through Spark are held equal field by field in tests/spark/test_fast_reader_s3.py."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from delta_sync.spark import delta_log, remote_log, table_cache
from delta_sync.spark.delta_log import LogCommit, TableFacts
from delta_sync.spark.remote_log import LogRead, LogRequest, RemoteLocation, S3Settings
from tests.servers import free_ports, silent_server
from tests.servers.s3 import S3
from tests.servers.s3_proxy import CountingProxy, counting_proxy

BUCKET = "lake"  # the S3 server's own (tests/servers/s3.py)
ACCESS, SECRET = "test-access-key", "test-secret-never-printed"


def settings_of(conf: dict[str, str], bucket: str = BUCKET) -> S3Settings | None:
    return remote_log.s3_settings(bucket, conf.get)


def test_s3_and_s3a_are_one_place() -> None:
    a = remote_log.remote_location("s3a://lake/warehouse/shop.db/orders")
    b = remote_log.remote_location("s3://lake/warehouse/shop.db/orders/")
    assert a is not None
    assert b is not None
    assert a.key == b.key == "s3://lake/warehouse/shop.db/orders"
    assert (a.scheme, b.scheme) == ("s3a", "s3")
    assert a.log == "warehouse/shop.db/orders/_delta_log/"
    spaced = remote_log.remote_location("s3a://lake/odd%20name")
    assert spaced is not None
    assert spaced.prefix == "odd name"
    root = remote_log.remote_location("s3a://lake")
    assert root is not None
    assert root.log == "_delta_log/"
    assert remote_log.remote_location("S3N://lake/warehouse/shop.db/orders") == RemoteLocation(
        "lake", "warehouse/shop.db/orders", "s3n"
    )
    for other in ("/tmp/t", "file:/tmp/t", "hdfs://nn/t", "abfss://c@a.dfs.core.windows.net/t", "gs://b/t", "s3a:///t"):
        assert remote_log.remote_location(other) is None, other
    assert remote_log.remote_location("s3a://lake/a/../b") is None


def test_settings_are_s3as_with_the_buckets_own_first() -> None:
    conf = {
        "fs.s3a.endpoint": "minio.example:9000",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.access.key": ACCESS,
        "fs.s3a.secret.key": SECRET,
        "fs.s3a.bucket.other.endpoint": "https://other.example",
        "fs.s3a.bucket.other.path.style.access": "false",
        "fs.s3a.bucket.other.endpoint.region": "eu-west-1",
    }
    lake = settings_of(conf)
    assert lake is not None
    assert lake.store_config(BUCKET) == {
        "bucket": BUCKET,
        "access_key_id": ACCESS,
        "secret_access_key": SECRET,
        "endpoint": "http://minio.example:9000",
        "virtual_hosted_style_request": False,
    }
    assert SECRET not in repr(lake)
    other = settings_of(conf, "other")
    assert other is not None
    # Virtual-hosted, as S3A asks it: the bucket in the host.
    assert other.store_config("other")["endpoint"] == "https://other.other.example"
    assert other.store_config("other")["region"] == "eu-west-1"
    # Half a key pair is no key pair: the environment and the default chain answer, as in S3A.
    assert settings_of({"fs.s3a.access.key": ACCESS}) == S3Settings(None, None, False, False, False, {})
    anonymous = settings_of(
        {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    )
    assert anonymous is not None
    assert anonymous.store_config(BUCKET)["skip_signature"] is True
    # What S3A reads in a way this reader does not: Delta reads those buckets.
    assert settings_of({"fs.s3a.encryption.algorithm": "SSE-C"}) is None
    assert settings_of({"fs.s3a.bucket.lake.accesspoint.arn": "arn:aws:s3:eu-west-1:1:accesspoint/x"}) is None
    assert settings_of({"fs.s3a.encryption.algorithm": "SSE-KMS"}) is not None


def meta(path: str, size: int = 10, etag: str = '"a"', second: int = 0) -> dict[str, Any]:
    return {"path": path, "size": size, "e_tag": etag, "last_modified": datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC)}


def test_the_latest_commit_by_the_local_readers_rules() -> None:
    log = "t/_delta_log/"
    v = [f"{log}{i:020d}" for i in range(4)]
    listing = [
        meta(f"{v[0]}.json"),
        meta(f"{v[0]}.crc"),
        meta(f"{v[1]}.json", 20, '"b"', 5),
        meta(f"{log}_staged_commits/"),
    ]
    found = remote_log.latest_in_listing(log, listing)
    assert found is not None
    assert (found.version, found.size, found.has_checksum) == (1, 20, False)
    assert found.mtime_ns == int(datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC).timestamp()) * 10**9
    assert found.inode == remote_log.etag_number('"b"') != remote_log.etag_number('"a"')
    with_crc = remote_log.latest_in_listing(log, [*listing, meta(f"{v[1]}.crc")])
    assert with_crc is not None
    assert with_crc.has_checksum
    # Other tables' keys, files in sub-folders and hidden files are not the log's commits.
    others = [
        meta(f"t/_delta_log2/{3:020d}.json"),
        meta(f"{log}_sidecars/{3:020d}.json"),
        meta(f"{log}.{v[3][-20:]}.json"),
    ]
    assert remote_log.latest_in_listing(log, [*listing, *others]) == found
    # A checkpoint newer than every commit, or commits waiting outside the log: Delta reads the table.
    assert remote_log.latest_in_listing(log, [*listing, meta(f"{v[2]}.checkpoint.parquet")]) is None
    assert remote_log.latest_in_listing(log, [*listing, meta(f"{log}_staged_commits/{v[2][-20:]}.uuid.json")]) is None
    assert remote_log.latest_in_listing(log, [*listing, meta(f"{log}_commits/x.json")]) is None
    assert remote_log.latest_in_listing(log, [meta(f"{v[0]}.crc")]) is None
    assert remote_log.latest_in_listing(log, []) is None


# Against the S3 server.


@pytest.fixture
def proxy(s3: S3) -> Iterator[CountingProxy]:
    remote_log.forget_clients()
    with counting_proxy(s3.endpoint) as found:
        yield found
    remote_log.forget_clients()


def client(url: str) -> Any:
    return boto3.client(
        "s3", endpoint_url=url, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    )


def through(proxy: CountingProxy) -> S3Settings:
    found = settings_of(
        {
            "fs.s3a.endpoint": proxy.url,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.access.key": ACCESS,
            "fs.s3a.secret.key": SECRET,
            "fs.s3a.endpoint.region": "us-east-1",
        }
    )
    assert found is not None
    return found


def upload(url: str, folder: Path, prefix: str) -> None:
    s3 = client(url)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(folder).as_posix()}")


def local_log(folder: Path, versions: int, checksums: bool = True) -> Path:
    log = folder / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for version in range(versions):
        (log / f"{version:020d}.json").write_text(json.dumps({"commitInfo": {"version": version}}) + "\n")
        if checksums:
            (log / f"{version:020d}.crc").write_text(json.dumps({"numFiles": version, "tableSizeBytes": 0}))
    return folder


def read(proxy: CountingProxy, location: str, cached: LogCommit | None = None) -> LogRead:
    where = remote_log.remote_location(location)
    assert where is not None
    (found,) = remote_log.read_logs([LogRequest(where, through(proxy), cached)])
    return found


def test_a_log_copied_from_disk_reads_as_on_disk(proxy: CountingProxy, s3: S3, tmp_path: Path) -> None:
    folder = local_log(tmp_path / "t", 3)
    upload(s3.endpoint, folder, "copied/t")
    on_disk = delta_log.latest_commit(folder)
    assert on_disk is not None
    found = read(proxy, "s3a://lake/copied/t")
    assert found.commit is not None
    assert (found.commit.version, found.commit.size, found.commit.has_checksum) == (2, on_disk.size, True)
    assert found.checksum == delta_log.read_checksum(folder, 2)
    assert proxy.snapshot() == {"list": 1, "get": 1}


def test_an_unchanged_table_costs_one_listing(proxy: CountingProxy, s3: S3, tmp_path: Path) -> None:
    folder = local_log(tmp_path / "t", 2)
    upload(s3.endpoint, folder, "same/t")
    first = read(proxy, "s3://lake/same/t")
    assert first.commit is not None
    proxy.reset()
    again = read(proxy, "s3a://lake/same/t", first.commit)
    assert again == LogRead(first.commit)  # no checksum fetched: the caller has its facts
    assert proxy.snapshot() == {"list": 1}
    # The listing starts at the cached version: a long log is one page, not one per thousand files.
    assert proxy.names == [("list", f"/{BUCKET}?prefix=same/t/_delta_log/&start-after=same/t/_delta_log/{1:020d}")]

    # A new version is found from there, and its checksum read.
    local_log(folder, 3)
    upload(s3.endpoint, folder, "same/t")
    proxy.reset()
    moved = read(proxy, "s3a://lake/same/t", first.commit)
    assert moved.commit is not None
    assert moved.commit.version == 2
    assert moved.checksum == {"numFiles": 2, "tableSizeBytes": 0}
    assert proxy.snapshot() == {"list": 1, "get": 1}


def test_a_table_written_again_at_its_path_is_read_again(proxy: CountingProxy, s3: S3, tmp_path: Path) -> None:
    folder = local_log(tmp_path / "t", 3)
    upload(s3.endpoint, folder, "again/t")
    first = read(proxy, "s3a://lake/again/t")
    assert first.commit is not None
    assert first.commit.version == 2
    # Dropped and created anew at the same path: version 0 again, fewer versions than the cache's.
    s3_client = client(s3.endpoint)
    listed = s3_client.list_objects_v2(Bucket=BUCKET, Prefix="again/t/")
    s3_client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": o["Key"]} for o in listed["Contents"]]})
    shutil.rmtree(folder)
    upload(s3.endpoint, local_log(folder, 1), "again/t")
    proxy.reset()
    found = read(proxy, "s3a://lake/again/t", first.commit)
    assert found.commit is not None
    assert found.commit.version == 0
    assert found.checksum == {"numFiles": 0, "tableSizeBytes": 0}
    # From the cached version on there was no commit: the whole log was listed.
    assert proxy.snapshot() == {"list": 2, "get": 1}
    # Same version, same size, another object: its ETag tells them apart.
    same = LogCommit(0, found.commit.size, found.commit.mtime_ns, remote_log.etag_number('"old"'), True)
    assert read(proxy, "s3a://lake/again/t", same).checksum is not None


def test_what_the_listing_cannot_tell_goes_to_delta(proxy: CountingProxy, s3: S3, tmp_path: Path) -> None:
    staged = local_log(tmp_path / "staged", 2)
    (staged / "_delta_log" / "_staged_commits").mkdir()
    (staged / "_delta_log" / "_staged_commits" / f"{2:020d}.x.json").write_text("{}")
    upload(s3.endpoint, staged, "cases/staged")
    no_crc = local_log(tmp_path / "no_crc", 2, checksums=False)
    upload(s3.endpoint, no_crc, "cases/no_crc")
    where = [remote_log.remote_location(f"s3a://lake/cases/{t}") for t in ("staged", "no_crc", "missing")]
    requests = [LogRequest(w, through(proxy)) for w in where if w is not None]
    staged_read, no_crc_read, missing = remote_log.read_logs(requests)
    assert staged_read == LogRead(None)
    assert no_crc_read.commit is not None
    assert no_crc_read.commit.version == 1
    assert no_crc_read.checksum is None
    assert missing == LogRead(None, gone=True)
    assert proxy.snapshot() == {"list": 3}


def test_a_table_delta_rs_wrote_to_s3(proxy: CountingProxy, s3: S3) -> None:
    options = {
        "AWS_ENDPOINT_URL": s3.endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }
    uri = "s3://lake/delta_rs/orders"
    write_deltalake(uri, pa.table({"id": pa.array([1, 2], pa.int64())}), storage_options=options)
    write_deltalake(uri, pa.table({"id": pa.array([3], pa.int64())}), mode="append", storage_options=options)
    found = read(proxy, "s3a://lake/delta_rs/orders")
    # delta-rs writes no checksum file: the caller reads it through Delta once, then lists it.
    assert found.commit is not None
    assert found.commit.version == DeltaTable(uri, storage_options=options).version() == 1
    assert not found.commit.has_checksum
    assert found.checksum is None
    assert proxy.snapshot() == {"list": 1}


def test_a_failing_server_sends_every_table_to_delta_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_log, "MAX_RETRIES", 1)
    remote_log.forget_clients()
    (closed,) = free_ports(1)
    with counting_proxy(f"http://127.0.0.1:{closed}") as proxy:
        requests = [LogRequest(RemoteLocation(BUCKET, f"t{i}"), through(proxy)) for i in range(300)]
        assert remote_log.read_logs(requests) == [LogRead(None)] * 300
        # The first failure stops the reads not yet sent: at most those in flight then were sent, each retried.
        assert proxy.total() <= remote_log.IN_FLIGHT * 2
    remote_log.forget_clients()


def test_a_silent_server_costs_one_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_log, "REQUEST_TIMEOUT", "1s")
    monkeypatch.setattr(remote_log, "MAX_RETRIES", 1)
    remote_log.forget_clients()
    with silent_server() as port:
        conf = {"fs.s3a.endpoint": f"http://127.0.0.1:{port}", "fs.s3a.path.style.access": "true"}
        # Credentials given: without them the AWS chain would ask the instance metadata service, off this machine.
        settings = settings_of({**conf, "fs.s3a.access.key": ACCESS, "fs.s3a.secret.key": SECRET})
        assert settings is not None
        started = time.monotonic()
        found = remote_log.read_logs([LogRequest(RemoteLocation(BUCKET, f"t{i}"), settings) for i in range(300)])
    assert found == [LogRead(None)] * 300
    assert time.monotonic() - started < 30  # one round of timeouts, not one per table
    remote_log.forget_clients()


def test_the_cache_keeps_tables_on_s3(tmp_path: Path) -> None:
    cache = table_cache.TableCache(tmp_path / "tables.json")
    facts = TableFacts({"type": "struct", "fields": []}, None, (), {}, (), (), 0, 3, 0, (1, 2))
    commit = LogCommit(3, 10, 20, remote_log.etag_number('"x"'), True)
    cache.put("s3://lake/t", commit, facts)
    cache.save()
    loaded = table_cache.TableCache(cache.path, table_cache.load(tmp_path / "tables.json"))
    assert loaded.get("s3://lake/t", commit) == facts
    cached = loaded.cached_commit("s3://lake/t")
    assert cached is not None
    assert cached.key() == commit.key()
    loaded.drop("s3://lake/t")
    loaded.save()
    assert table_cache.load(tmp_path / "tables.json") == {}
