"""The servers a session would use, checked before a JVM starts: the Spark master's and the Hive metastore's
addresses reachable, the metastore answering a thrift call; and URLs as messages show them (a password masked).
Out of the box Spark gives an unreachable master 3 x 20 s and Hive an unresponsive metastore its 600 s socket
timeout; a server that is not there is reported at once instead (`doctor` asks the same questions)."""

from __future__ import annotations

import re
import socket
import struct
from collections.abc import Callable, Mapping

from delta_sync.specs.settings import REDACTED

# Seconds.
CONNECT_TIMEOUT = 3.0
THRIFT_ANSWER_TIMEOUT = 5.0
METASTORE_KEYS = ("spark.hadoop.hive.metastore.uris", "spark.hive.metastore.uris")
# The master URLs spark-submit and SparkContext accept (SparkContext.createTaskScheduler's forms).
_MASTER = re.compile(
    r"local(\[\s*(\d+|\*)\s*(,\s*\d+\s*)?\])?|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"
    r"|yarn|k8s://\S+|spark://(\[[^\]]+\]|[^\s/:,\[\]]+):\d+(,(\[[^\]]+\]|[^\s/:,\[\]]+):\d+)*/?"
)
_ADDRESS = re.compile(r"(\[(?P<v6>[^\]]+)\]|(?P<host>[^\s/:,\[\]]+)):(?P<port>\d+)")
_PASSWORD = re.compile(r"(//[^/:@\s]*:)[^/@\s]*@")


def _as_is(text: str) -> str:
    return text


def shown(url: str, redact: Callable[[str], str] = _as_is) -> str:
    """A URL as messages show it: a password in it and the project's secrets masked."""
    return redact(_PASSWORD.sub(lambda m: m.group(1) + REDACTED + "@", url))


def _addresses(text: str) -> list[tuple[str, int]]:
    return [(m.group("v6") or m.group("host"), int(m.group("port"))) for m in _ADDRESS.finditer(text)]


def unreachable(host: str, port: int, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """Why nothing accepts a TCP connection on host:port, or None when something does."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror:
        return f"host {host} not found"
    except TimeoutError:
        return f"no answer within {timeout:.0f} s"
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()


def _thrift_call(name: str) -> bytes:
    """A strict TBinaryProtocol CALL of `name` with no arguments, as Hive's client sends it unframed."""
    encoded = name.encode()
    return struct.pack(">iI", -2147418111, len(encoded)) + encoded + struct.pack(">iB", 0, 0)


def thrift_silent(host: str, port: int, timeout: float = THRIFT_ANSWER_TIMEOUT) -> bool:
    """Whether what listens on host:port takes a thrift call and says nothing for `timeout` seconds,
    which is how Hive's client would hang on it for its 600 s socket timeout. A reply of any kind, or a
    closed connection (a SASL or framed metastore refusing a plain call), counts as an answer."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT) as sock:
            sock.settimeout(timeout)
            sock.sendall(_thrift_call("getVersion"))
            sock.recv(1)
            return False
    except TimeoutError:
        return True
    except OSError:
        return False


def master_problem(master: str, redact: Callable[[str], str] = _as_is) -> str | None:
    """What is wrong with the master URL, checked before a JVM starts, or None."""
    url = shown(master, redact)
    if not _MASTER.fullmatch(master.strip()):
        return (
            f"the Spark master `{url}` is not a master URL Spark knows; "
            "write local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"
        )
    if not master.strip().startswith("spark://"):
        return None
    addresses = _addresses(master.strip().removeprefix("spark://"))
    reasons = [unreachable(host, port) for host, port in addresses]
    if all(reasons):
        why = "; ".join(f"{host}:{port}: {reason}" for (host, port), reason in zip(addresses, reasons, strict=True))
        return (
            f"could not reach the Spark master at {url} ({why}); "
            "check that the master runs there and that this is its host and port"
        )
    return None


def metastore_uris(conf: Mapping[str, str]) -> tuple[str, str] | None:
    """The setting that points the session at a thrift metastore, and its value."""
    return next(((key, conf[key]) for key in METASTORE_KEYS if conf.get(key, "").strip()), None)


def metastore_problem(key: str, uris: str, redact: Callable[[str], str] = _as_is) -> str | None:
    """What would keep Hive's client from using the metastores `uris` names, or None.

    Hive's client skips a closed port and tries the next URI, but hangs on one that takes the
    connection and never answers, whichever place it has in the list."""
    url = shown(uris, redact)
    parsed = [(uri.strip(), _ADDRESS.fullmatch(uri.strip().removeprefix("thrift://"))) for uri in uris.split(",")]
    if any(found is None or not uri.startswith("thrift://") for uri, found in parsed):
        return (
            f"the Hive metastore setting {key} = `{url}` is not a list of thrift://HOST:PORT; "
            "write the metastore's thrift URI there"
        )
    reasons = []
    for uri, found in parsed:
        assert found is not None
        host, port = found.group("v6") or found.group("host"), int(found.group("port"))
        reason = unreachable(host, port)
        if reason is None and thrift_silent(host, port):
            silent = f"it accepts connections but did not answer a thrift call within {THRIFT_ANSWER_TIMEOUT:.0f} s"
            return (
                f"the Hive metastore at {shown(uri, redact)} is not answering ({silent}); check that {key} names "
                "the metastore's thrift port, not another service's, and that the metastore is not hung"
            )
        if reason is not None:
            reasons.append(f"{shown(uri, redact)}: {reason}")
    if len(reasons) < len(parsed):
        return None
    return (
        f"could not reach the Hive metastore at {url} ({'; '.join(reasons)}); check that the metastore runs "
        f"there and that {key} names its thrift host and port"
    )
