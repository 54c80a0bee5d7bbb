from pathlib import Path

import pytest

SPARK_DIR = Path(__file__).parent / "spark"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything under tests/spark/ needs the JVM; mark it so `-m "not spark"` gives the fast loop.
    for item in items:
        if SPARK_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)
