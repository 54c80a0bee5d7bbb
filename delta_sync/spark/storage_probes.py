"""`doctor`'s probes of object storage: each S3 bucket an environment names, listed with the settings and
credentials S3A would use (one sentence per failure); the connector an ADLS or GCS location needs; and whether
commits on S3 are safe beyond one Spark driver. The other probes of the machine are `doctor_probes.py`."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from delta_sync.render.doctor import Check, failure, ok, warning
from delta_sync.spark import jars

# What Spark 4.2 runs on.


# A bucket that does not answer must be one line within seconds, not object_store's minutes of retries.
STORAGE_CONNECT_TIMEOUT = "3s"
STORAGE_REQUEST_TIMEOUT = "10s"
STORAGE_RETRY_SECONDS = 8
_AZURE_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
_GCS_SCHEMES = ("gs",)
_REMOTE_SCHEMES = ("s3a", "s3", "s3n", *_AZURE_SCHEMES, *_GCS_SCHEMES)
# S3A's providers whose credentials the probe's client finds the same way (the settings' keys, the process
# environment, the instance or container role, web identity); any other (profiles, SSO, a class of the user's
# own, an assumed role) only S3A reads, and the bucket is not checked.
_KNOWN_PROVIDERS = frozenset(
    {
        "SimpleAWSCredentialsProvider",
        "TemporaryAWSCredentialsProvider",
        "EnvironmentVariableCredentialsProvider",
        "IAMInstanceCredentialsProvider",
        "InstanceProfileCredentialsProvider",
        "ContainerCredentialsProvider",
        "WebIdentityTokenFileCredentialsProvider",
        "AnonymousAWSCredentialsProvider",
    }
)
_S3_CODE = re.compile(r"<Code>([^<]+)</Code>")
_HTTP_STATUS = re.compile(r"status code: (\d{3})")


def storage_locations(conf: Mapping[str, str], tables: Sequence[str] = ()) -> list[str]:
    """Where an environment keeps tables on object storage: the locations its Spark settings name (the
    warehouse, a catalog's root) and the specs' own `location:`s (`tables`), each once, in that order."""
    found: dict[str, None] = {}
    for text in (*conf.values(), *tables):
        parts = urllib.parse.urlsplit(text.strip())
        if parts.scheme.lower() in _REMOTE_SCHEMES and parts.netloc:
            found.setdefault(text.strip(), None)
    return list(found)


def storage_checks(
    locations: Sequence[str],
    conf: Mapping[str, str],
    redact: Callable[[str], str] = lambda t: t,
    list_one: Callable[[str, str, Any], str | None] | None = None,
) -> list[Check]:
    """One check per S3 bucket the locations name (listed with the credentials S3A would use: a missing
    bucket, a wrong endpoint or refused credentials is one sentence), and one per Azure or GCS location, whose
    connector and settings the environment must name (not reached from here)."""
    from delta_sync.spark import remote_log

    buckets: dict[str, tuple[str, str]] = {}
    others: list[Check] = []
    for location in locations:
        remote = remote_log.remote_location(location)
        if remote is not None:
            buckets.setdefault(remote.bucket, (location, remote.prefix))
            continue
        check = connector_check(location, conf, redact)
        if check is not None and check.title not in {c.title for c in others}:
            others.append(check)
    probe = list_one or _list_one
    return [bucket_check(b, where, prefix, conf, redact, probe) for b, (where, prefix) in buckets.items()] + others


def bucket_check(
    bucket: str,
    location: str,
    prefix: str,
    conf: Mapping[str, str],
    redact: Callable[[str], str] = lambda t: t,
    list_one: Callable[[str, str, Any], str | None] | None = None,
) -> Check:
    """The bucket listed under `prefix` (the first location on it), as S3A would reach it with these settings."""
    from delta_sync.spark import remote_log

    title = f"Bucket {bucket}"
    shown = redact(location)
    settings = remote_log.s3_settings(bucket, lambda key: conf.get(f"spark.hadoop.{key}"))
    if settings is None:
        return ok(
            "storage",
            title,
            f"{shown}: not checked (S3A reads it with SSE-C, client-side encryption or an access point)",
        )
    providers = _setting(conf, bucket, "aws.credentials.provider")
    own = [p for p in re.split(r"[,\s]+", providers) if p and p.rsplit(".", 1)[-1] not in _KNOWN_PROVIDERS]
    if own and not settings.credentials:
        return ok("storage", title, f"{shown}: not checked (its credentials come from {own[0]}, which only S3A reads)")
    endpoint = redact(settings.endpoint or f"AWS S3 ({settings.region or 'the default region'})")
    problem = (list_one or _list_one)(bucket, prefix, settings)
    if problem is None:
        keys = "the settings' access key" if settings.credentials else "the credentials of the environment"
        return ok("storage", title, f"{shown} reachable at {endpoint}, listed with {keys}")
    message, fix = bucket_problem(bucket, shown, endpoint, redact(problem))
    if settings.endpoint is None and settings.region is None and message.startswith(f"bucket {bucket} is in another"):
        # S3A finds a bucket's region itself (cross-region access, on by default); this client asked one region.
        return warning("storage", title, f"{message}; S3A finds it, but its credentials were not checked", fix)
    return failure("storage", title, message, fix)


def bucket_problem(bucket: str, location: str, endpoint: str, error: str) -> tuple[str, str]:
    """An object-store client's error listing `bucket` as one sentence and its fix: a wrong endpoint, a missing
    bucket, refused or absent credentials, another region; else the error's first line."""
    code = _S3_CODE.search(error)
    status = _HTTP_STATUS.search(error)
    name = code.group(1) if code else (f"HTTP {status.group(1)}" if status else "")
    endpoint_fix = "check spark.hadoop.fs.s3a.endpoint (and that the server runs)"
    if "169.254.169.254" in error or "NoCredentialProviders" in error:
        return (
            f"no credentials for bucket {bucket}: the settings name no access key, the process environment has no "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and no instance role answered",
            "set spark.hadoop.fs.s3a.access.key and .secret.key (the secret as ${env:NAME}), or export "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        )
    if "Connection refused" in error or "ConnectionRefused" in error:
        return f"nothing answers at {endpoint} (connection refused), so bucket {bucket} cannot be reached", endpoint_fix
    if "dns error" in error or "Name or service not known" in error:
        return (
            f"the endpoint {endpoint} is not a known host name (DNS), so bucket {bucket} cannot be reached",
            endpoint_fix,
        )
    if "timed out" in error.lower() or "TimedOut" in error:
        return f"{endpoint} did not answer within seconds, so bucket {bucket} cannot be reached", endpoint_fix
    if name == "NoSuchBucket" or (not code and status and status.group(1) == "404"):
        return (
            f"there is no bucket {bucket} at {endpoint} ({location} is on it)",
            "create the bucket, or fix the location that names it (spark.sql.warehouse.dir or a spec's location:)",
        )
    if name in ("InvalidAccessKeyId", "InvalidClientTokenId"):
        return (
            f"{endpoint} refused the access key for bucket {bucket} ({name}: it knows no such key)",
            "check spark.hadoop.fs.s3a.access.key (or AWS_ACCESS_KEY_ID)",
        )
    if name == "SignatureDoesNotMatch":
        return (
            f"{endpoint} refused the credentials for bucket {bucket} (SignatureDoesNotMatch: the secret key is not "
            "the access key's)",
            "check spark.hadoop.fs.s3a.secret.key (or AWS_SECRET_ACCESS_KEY)",
        )
    if name in ("ExpiredToken", "InvalidToken", "TokenRefreshRequired"):
        return (
            f"{endpoint} refused the session token for bucket {bucket} ({name})",
            "renew the credentials (spark.hadoop.fs.s3a.session.token or AWS_SESSION_TOKEN)",
        )
    if name in ("PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"):
        return (
            f"bucket {bucket} is in another region than the one it was asked in ({name})",
            "set spark.hadoop.fs.s3a.endpoint.region to the bucket's region",
        )
    if name in ("AccessDenied", "AllAccessDisabled", "HTTP 403"):
        return (
            f"{endpoint} refused to list {location} with the credentials given ({name})",
            "grant these credentials s3:ListBucket on the bucket, or use others",
        )
    first = error.split("\n\nDebug source", 1)[0].replace("Generic S3 error: ", "").strip()
    first = (first.splitlines() or ["no message"])[0][:300]
    return f"could not list {location} at {endpoint}: {first}", endpoint_fix


def connector_check(location: str, conf: Mapping[str, str], redact: Callable[[str], str] = lambda t: t) -> Check | None:
    """An Azure (`abfss://`, `wasbs://`) or GCS (`gs://`) location: the connector's jar and settings the
    environment must name, as a warning while any is missing (delta-sync fetches and maps neither, and does not
    reach the store itself); None for any other location."""
    parts = urllib.parse.urlsplit(location.strip())
    scheme = parts.scheme.lower()
    jars_named = ",".join(conf.get(key, "") for key in (jars.PACKAGES_KEY, "spark.jars")).lower()
    shown = redact(location)
    if scheme in _AZURE_SCHEMES:
        account = parts.hostname or "<account>.dfs.core.windows.net"
        title = f"Azure storage ({account})"
        missing = []
        if "hadoop-azure" not in jars_named:
            missing.append("packages: [org.apache.hadoop:hadoop-azure:3.5.0]")
        if not any(k.startswith(("spark.hadoop.fs.azure.account.", "spark.hadoop.fs.azure.sas.")) for k in conf):
            missing.append(
                f"spark.hadoop.fs.azure.account.key.{account} (or fs.azure.account.auth.type: OAuth with its client "
                "id, secret and endpoint)"
            )
        if missing:
            return warning(
                "storage",
                title,
                f"{shown} is reached through Hadoop's Azure connector with the account's credentials, and the "
                f"environment's settings lack {len(missing)} of the 2",
                f"add {' and '.join(missing)} to the environment's spark: settings (README, Object storage)",
            )
        return ok("storage", title, f"{shown}: the connector and credentials are named (not reached by doctor)")
    if scheme in _GCS_SCHEMES:
        title = f"Google Cloud Storage ({parts.hostname})"
        missing = []
        if "gcs-connector" not in jars_named:
            missing.append("packages: [com.google.cloud.bigdataoss:gcs-connector:hadoop3-2.2.26]")
        if "spark.hadoop.fs.gs.impl" not in conf:
            missing.append("spark.hadoop.fs.gs.impl: com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem")
        if not any(k.startswith(("spark.hadoop.google.cloud.auth.", "spark.hadoop.fs.gs.auth.")) for k in conf):
            missing.append("spark.hadoop.google.cloud.auth.service.account.json.keyfile (or fs.gs.auth.*)")
        if missing:
            return warning(
                "storage",
                title,
                f"{shown} is reached through the GCS connector, mapped to gs:// and given credentials, and the "
                f"environment's settings lack {len(missing)} of the 3",
                f"add {' and '.join(missing)} to the environment's spark: settings (README, Object storage)",
            )
        return ok("storage", title, f"{shown}: the connector and credentials are named (not reached by doctor)")
    return None


def concurrency_check(conf: Mapping[str, str], locations: Sequence[str]) -> Check | None:
    """A warning when the environment's tables on S3 are safe to write from one Spark driver at a time only."""
    from delta_sync.spark.object_storage import concurrency_note

    note = concurrency_note(conf, locations)
    if note is None:
        return None
    return warning(
        "log_store",
        "Concurrent writers",
        note,
        "none while every writer of these tables runs in one Spark driver (commands through one warm engine do; "
        "in-process commands side by side, and jobs on other clusters, do not)",
    )


def _setting(conf: Mapping[str, str], bucket: str, key: str) -> str:
    for name in (f"spark.hadoop.fs.s3a.bucket.{bucket}.{key}", f"spark.hadoop.fs.s3a.{key}"):
        if conf.get(name, "").strip():
            return conf[name].strip()
    return ""


def _list_one(bucket: str, prefix: str, settings: Any) -> str | None:
    """One LIST of at most one key under `prefix` (an empty folder lists fine); the client's error, or None."""
    from datetime import timedelta

    import obstore
    from obstore.store import S3Store

    try:
        store = S3Store(
            config=settings.store_config(bucket),
            client_options={
                "allow_http": True,
                "connect_timeout": STORAGE_CONNECT_TIMEOUT,
                "timeout": STORAGE_REQUEST_TIMEOUT,
            },
            retry_config={"max_retries": 1, "retry_timeout": timedelta(seconds=STORAGE_RETRY_SECONDS)},
        )
        next(iter(obstore.list(store, prefix=f"{prefix}/" if prefix else None, chunk_size=1)), None)
    except Exception as exc:  # the client's own errors are the finding, never a traceback
        return str(exc) or type(exc).__name__
    return None
