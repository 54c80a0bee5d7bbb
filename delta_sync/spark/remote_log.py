"""Delta tables' `_delta_log` on S3 read from Python, many tables at once: the listing that gives each table's
latest commit and, where needed, that commit's checksum file, the same two reads `delta_log` does on local disk.

What it holds:
- `remote_location`: a table location on S3 (`s3a://`, `s3://` or `s3n://`, one place whichever) as its bucket,
  its key prefix and the one spelling the cache keeps it under; None for anything else.
- `S3Settings`, `s3_settings`: where and as whom S3A reads a bucket, from the session's Hadoop configuration
  (`fs.s3a.endpoint`, `.endpoint.region`, `.path.style.access`, `.access.key`, `.secret.key`, `.session.token`,
  each overridden per bucket by `fs.s3a.bucket.<bucket>.*` as S3A does), or None where S3A would read in a way
  this reader does not (SSE-C and client-side encryption, access points): Delta reads those tables, as before.
  Without keys in the configuration the credentials come from the process environment and the AWS default chain
  (web identity, container, instance metadata), as S3A's own default providers do.
- `read_logs`: for each table, one listing of its `_delta_log` (from its cached version on, when there is one),
  its latest commit (`delta_log.LogCommit`, the object's ETag standing for the inode) and, when that commit is
  not the cached one, its checksum file: up to `IN_FLIGHT` requests at a time, through obstore (Rust's
  `object_store`; DECISIONS.md says why this library).

Whatever cannot be read exactly (an error of any kind, a listing that cannot tell the latest version) gives
None for that table, and the caller (`bulk_reads`) reads it through Delta as before. The first error that is
not a missing object stops the reads not yet sent: a wrong endpoint or credentials would fail them all, each
after its retries. Credentials are passed to the client and nowhere else: never logged, never written.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlsplit

from delta_sync.spark import delta_log
from delta_sync.spark.delta_log import LogCommit

if TYPE_CHECKING:
    from obstore.store import S3Config

# One bucket whichever the catalog wrote (`model.state.canonical_location`); each is read here only where the
# session maps its scheme to S3A (`RemoteLocation.fs_setting`).
SCHEMES = ("s3a", "s3", "s3n")
S3A_FILESYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"
# Requests in flight at once, over all tables. 64 overlapped 20 ms of latency per request on 1,000 tables
# (BENCHMARKS.md "Object storage"); S3 serves thousands per second per prefix.
IN_FLIGHT = 64
# An endpoint that does not answer must not hold a plan for object_store's default 3 minutes of retries: the
# tables then go to Delta, which says what is wrong.
CONNECT_TIMEOUT = "5s"
REQUEST_TIMEOUT = "30s"
MAX_RETRIES = 3
RETRY_TIMEOUT = timedelta(seconds=20)
# Objects per chunk handed to Python, S3's page: a log longer than that costs a request per page cold; a cached
# table lists from its cached version on, one page.
PAGE = 1000
# Read through `getPassword`, as S3A reads them: a Hadoop credential provider may hold them instead of the
# configuration.
SECRET_KEYS = frozenset({"access.key", "secret.key", "session.token"})
_ANONYMOUS = "AnonymousAWSCredentialsProvider"


@dataclass(frozen=True, slots=True)
class RemoteLocation:
    """A table's folder on S3: `bucket`, `prefix` (its key without a trailing slash) and `key`, the one
    spelling (`s3://bucket/prefix`) the cache keeps it under, whichever scheme the catalog wrote."""

    bucket: str
    prefix: str
    # As the catalog wrote it: Hadoop maps each scheme to its FileSystem (`fs_setting`).
    scheme: str = "s3a"

    @property
    def fs_setting(self) -> str:
        """The Hadoop setting naming the FileSystem of this location's scheme: it must be S3A's for this reader
        to read what Delta would (`s3://` unmapped fails in Delta, and must fail the same way)."""
        return f"fs.{self.scheme}.impl"

    @property
    def key(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    @property
    def log(self) -> str:
        return f"{self.prefix}/_delta_log/" if self.prefix else "_delta_log/"


def remote_location(location: str) -> RemoteLocation | None:
    """`s3a://bucket/path` (or `s3://`, `s3n://`) as a `RemoteLocation`; None for any other location."""
    parts = urlsplit(location)
    if parts.scheme.lower() not in SCHEMES or not parts.netloc or parts.query or parts.fragment:
        return None
    # Hadoop's URIs escape what a URI cannot hold (a space is %20); the object keys hold it unescaped.
    prefix = unquote(parts.path).strip("/")
    if "//" in prefix or any(part in (".", "..") for part in prefix.split("/")):
        return None  # a key S3A would normalise in a way this reader does not guess
    return RemoteLocation(parts.netloc, prefix, parts.scheme.lower())


@dataclass(frozen=True)
class S3Settings:
    """How S3A reaches one bucket: the obstore configuration built from them, the secrets kept out of `repr`."""

    endpoint: str | None
    region: str | None
    path_style: bool
    anonymous: bool
    requester_pays: bool
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)

    def store_config(self, bucket: str) -> dict[str, Any]:
        config: dict[str, Any] = {"bucket": bucket, **self.credentials}
        if self.region:
            config["region"] = self.region
        if self.endpoint:
            scheme, _, host = self.endpoint.partition("://")
            # S3A's virtual-hosted requests go to <bucket>.<endpoint>; object_store wants the bucket in it.
            config["endpoint"] = self.endpoint if self.path_style else f"{scheme}://{bucket}.{host}"
            config["virtual_hosted_style_request"] = not self.path_style
        if self.anonymous:
            config["skip_signature"] = True
        if self.requester_pays:
            config["request_payer"] = True
        return config


def _true(value: str | None, default: bool) -> bool:
    return default if value is None or not value.strip() else value.strip().lower() == "true"


def s3_settings(bucket: str, setting: Callable[[str], str | None]) -> S3Settings | None:
    """The S3A settings of `bucket`, `setting` giving the session's Hadoop configuration value of a key; None
    where S3A reads the bucket in a way this reader does not (the caller leaves its tables to Delta)."""

    def value(key: str) -> str | None:
        for name in (f"fs.s3a.bucket.{bucket}.{key}", f"fs.s3a.{key}"):
            found = setting(name)
            if found is not None and found.strip():
                return found.strip()
        return None

    encryption = (value("encryption.algorithm") or value("server-side-encryption-algorithm") or "").upper()
    # SSE-C needs the key on every GET, client-side encryption decrypts in the client; access points change
    # the host. Delta reads those.
    if encryption in ("SSE-C", "CSE-KMS", "CSE-CUSTOM") or value("accesspoint.arn"):
        return None
    endpoint = value("endpoint")
    if endpoint is not None and "://" not in endpoint:
        # S3A's own default for an endpoint without a scheme.
        ssl = _true(value("connection.ssl.enabled"), default=True)
        endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
    if endpoint is not None:
        endpoint = endpoint.rstrip("/")
    credentials = {
        name: found
        for key, name in (
            ("access.key", "access_key_id"),
            ("secret.key", "secret_access_key"),
            ("session.token", "session_token"),
        )
        if (found := value(key)) is not None
    }
    if "access_key_id" not in credentials or "secret_access_key" not in credentials:
        credentials = {}  # half a key pair: S3A skips it too, and looks further down its chain
    providers = value("aws.credentials.provider") or ""
    return S3Settings(
        endpoint=endpoint,
        region=value("endpoint.region"),
        path_style=_true(value("path.style.access"), default=False),
        anonymous=_ANONYMOUS in providers and not credentials,
        requester_pays=_true(value("requester.pays.enabled"), default=False),
        credentials=credentials,
    )


@dataclass(frozen=True, slots=True)
class LogRead:
    """What was read of one table: its latest commit (None: read it through Delta) and, when that commit is not
    the one the caller has cached, its checksum file (None when there is none or it could not be read)."""

    commit: LogCommit | None
    checksum: dict[str, Any] | None = None
    # True when the listing found no log at all: the cache may forget the table.
    gone: bool = False


@dataclass(frozen=True, slots=True)
class LogRequest:
    location: RemoteLocation
    settings: S3Settings
    # The commit the cache holds facts of, if any: the listing starts at its version, and a hit needs no GET.
    cached: LogCommit | None = None


_stores: dict[tuple[str, str], Any] = {}
_stores_lock = threading.Lock()


def _store(bucket: str, settings: S3Settings) -> Any:
    """One client per bucket and settings for the life of the process: a library caller's next plan reuses its
    connections."""
    from obstore.store import S3Store

    config = settings.store_config(bucket)
    identity = (bucket, hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest())
    with _stores_lock:
        store = _stores.get(identity)
        if store is None:
            store = S3Store(
                config=cast("S3Config", config),
                client_options={
                    "allow_http": True,
                    "connect_timeout": CONNECT_TIMEOUT,
                    "timeout": REQUEST_TIMEOUT,
                },
                retry_config={"max_retries": MAX_RETRIES, "retry_timeout": RETRY_TIMEOUT},
            )
            _stores[identity] = store
        return store


def forget_clients() -> None:
    """Drops the clients kept for reuse (tests that restart a server on the same port)."""
    with _stores_lock:
        _stores.clear()


def etag_number(etag: str | None) -> int:
    """An object's ETag as the number `LogCommit` keeps in place of an inode: a table written again at the same
    path and version has another ETag (its commit holds a new table id and time)."""
    digest = hashlib.blake2b((etag or "").encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1  # non-negative, JSON-safe on every reader


def mtime_ns(when: datetime) -> int:
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


def latest_in_listing(log: str, objects: Sequence[Mapping[str, Any]]) -> LogCommit | None:
    """The latest commit among the `objects` listed under the prefix `log` (`.../_delta_log/`), by the rules of
    `delta_log.latest_commit`: None without a commit, with a checkpoint newer than every commit, or with files
    in the folders where commits wait outside the log."""
    newest: Mapping[str, Any] | None = None
    newest_version, checkpoint, checksum = -1, -1, -1
    for meta in objects:
        path = str(meta["path"])
        if not path.startswith(log):
            continue
        name = path[len(log) :]
        folder, slash, rest = name.partition("/")
        if slash:
            # A folder's own marker object has nothing after the slash; anything else there is a file in it.
            if folder in delta_log.UNBACKFILLED and rest and not rest.startswith("."):
                return None
            continue
        if name.startswith("."):
            continue
        if (found := delta_log.COMMIT.fullmatch(name)) is not None:
            version = int(found.group(1))
            if version > newest_version:
                newest_version, newest = version, meta
        elif (found := delta_log.CHECKSUM.fullmatch(name)) is not None:
            checksum = max(checksum, int(found.group(1)))
        elif (found := delta_log.CHECKPOINT.fullmatch(name)) is not None:
            checkpoint = max(checkpoint, int(found.group(1)))
    if newest is None or checkpoint > newest_version:
        return None
    return LogCommit(
        newest_version,
        int(newest["size"]),
        mtime_ns(newest["last_modified"]),
        etag_number(newest.get("e_tag")),
        checksum == newest_version,
    )


class _Stop(Exception):
    """An error that would fail every other read too: the reads not sent yet are not sent."""


def _listing(store: Any, log: str, offset: str | None) -> list[Mapping[str, Any]]:
    import obstore

    found: list[Mapping[str, Any]] = []
    for chunk in obstore.list(store, log, offset=offset, chunk_size=PAGE):
        found.extend(chunk)
    return found


def _read_one(request: LogRequest, stop: threading.Event) -> LogRead:
    import obstore
    from obstore.exceptions import NotFoundError

    location = request.location
    if stop.is_set():
        return LogRead(None)
    try:
        store = _store(location.bucket, request.settings)
        log = location.log
        commit = None
        if request.cached is not None:
            # Keys sort by version (20 digits) and then the folders (`_...`): from the cached version on, the
            # listing still holds every newer commit and checkpoint and the waiting commits' folders.
            offset = f"{log}{request.cached.version:020d}"
            commit = latest_in_listing(log, _listing(store, log, offset))
        if commit is None:
            objects = _listing(store, log, None)
            commit = latest_in_listing(log, objects)
            if commit is None:
                return LogRead(None, gone=not objects)
        if (request.cached is not None and commit.key() == request.cached.key()) or not commit.has_checksum:
            return LogRead(commit)
        try:
            data = obstore.get(store, f"{log}{commit.version:020d}.crc").bytes()
        except NotFoundError:
            return LogRead(commit)
        try:
            checksum = json.loads(bytes(data))
        except ValueError:
            return LogRead(commit)
        return LogRead(commit, checksum if isinstance(checksum, dict) else None)
    except NotFoundError:
        return LogRead(None)
    except Exception:
        # A wrong endpoint, refused credentials, a missing bucket, a timeout: the same for every table.
        stop.set()
        return LogRead(None)


def read_logs(requests: Sequence[LogRequest]) -> list[LogRead]:
    """Each request's `LogRead`, in order, `IN_FLIGHT` at a time.

    Through obstore's blocking calls on threads of ours, not its asyncio ones: a blocking call waits for Rust
    with the GIL released (32 threads overlap 32 requests), and no Rust thread ever calls back into Python.
    With asyncio, obstore hands each result to the loop from one of its own threads, which takes the GIL once
    more after waking it; a process that finalized in between was aborted by Python 3.11 (SIGABRT at exit, 6 of
    87 runs of a command that ended right after its reads)."""
    if not requests:
        return []
    try:
        import obstore  # noqa: F401
    except ImportError:  # an install without it: Delta reads these tables, as before
        return [LogRead(None) for _ in requests]
    stop = threading.Event()
    with ThreadPoolExecutor(min(IN_FLIGHT, len(requests)), thread_name_prefix="delta-sync-s3") as pool:
        return list(pool.map(lambda request: _read_one(request, stop), requests))
