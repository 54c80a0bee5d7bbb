"""What pyspark would print or import for nothing in a delta-sync command, turned off."""

from __future__ import annotations

import logging


def quiet_python_loggers() -> None:
    """Silence what pyspark would log to the terminal itself: its errors reach the user as messages."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    _without_numpy_converter()


def _without_numpy_converter() -> None:
    """pyspark registers py4j converters for numpy values whose first use imports pyspark.testing, and with it
    pandas: 0.8-1 s of every command (measured), for values delta-sync never passes."""
    import py4j.protocol
    from pyspark.sql.types import NumpyArrayConverter, NumpyScalarConverter

    converters = py4j.protocol.INPUT_CONVERTER
    converters[:] = [c for c in converters if not isinstance(c, NumpyArrayConverter | NumpyScalarConverter)]
