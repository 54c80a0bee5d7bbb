"""Engine exceptions (pyspark, py4j, Spark Connect) -> `EngineFailure`: the error class, its parameters and
the message, whatever the JVM side can still render. The words for users are `delta_sync.model.failures`'."""

from __future__ import annotations

import re

from delta_sync.model.failures import EngineFailure

_GRPC_STATUS = re.compile(r'status = StatusCode\.(\w+)\s+details = "(.*)"')
_ERROR_CLASS = re.compile(r"\[([A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\]")


def engine_failure(exc: BaseException) -> EngineFailure:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    error_class: str | None = None
    parameters: dict[str, str] = {}
    message = ""
    # Each accessor can itself fail on the JVM side (Spark cannot render Delta's own error classes),
    # so every step falls back to something plainer.
    try:
        if isinstance(exc, PySparkException):
            error_class = exc.getCondition()
            parameters = dict(exc.getMessageParameters() or {})
            message = exc.getMessage() or ""
        elif isinstance(exc, Py4JJavaError):
            message = str(exc.java_exception.getMessage() or exc.java_exception.toString())
    except Exception:
        pass
    if not message:
        message = str(getattr(exc, "_desc", "") or "") or _safe_str(exc)
    transport = _GRPC_STATUS.search(message)
    if transport:  # Spark Connect lost the server: the transport's failure, not the statement's
        message = f"Spark Connect: {transport.group(2)} ({transport.group(1)})"
    if error_class is None:
        found = _ERROR_CLASS.search(message)
        error_class = found.group(1) if found else None
    return EngineFailure(error_class, message, parameters)


def unparsable(statement: str, exc: BaseException) -> str:
    """`statement` does not parse: its first line and the parser's reason, in one line."""
    first = statement.strip().splitlines()[0] if statement.strip() else statement
    message = engine_failure(exc).message.strip()
    reason = message.splitlines()[0] if message else type(exc).__name__
    return f"Spark's parser refuses `{first}`: {reason}"


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return type(exc).__name__
