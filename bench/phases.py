"""Where the wall time of one `delta-sync plan` goes, phase by phase (prints JSON on stdout).

python bench/phases.py [CLI ARGS...]      e.g.  CI=true python bench/phases.py plan specs

Runs the command line in this process, exactly as `delta-sync` would, with timers around its phases:
- imports: delta-sync, typer, rich, pydantic (what `delta-sync` imports before it parses its arguments);
- jvm: spark-submit and the JVM up to py4j's gateway (in-process only);
- context: the SparkContext, its scheduler and block manager (in-process only);
- engine: borrowing the warm engine's JVM (lease and py4j connection; a start included when none ran);
- catalog: the first catalog access (Hive's client and Derby start, the schema listing);
- read: the tables' state (metastore entry, Delta snapshot);
- review: planning, analysis of the CHECK rules, probes, hazards;
- render: printing the plan.
The phases nest where the code does (catalog includes jvm and context when it starts the session), so each
figure reported is exclusive: the time of the phase minus the phases inside it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from io import StringIO
from typing import Any

T0 = time.perf_counter()
stack: list[list[float]] = []
spent: dict[str, float] = {}


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        stack.append([0.0])
        try:
            return fn(*args, **kwargs)
        finally:
            total = time.perf_counter() - started
            inner = stack.pop()[0]
            spent[name] = spent.get(name, 0.0) + total - inner
            if stack:
                stack[-1][0] += total

    return wrapper


def main() -> None:
    import delta_sync.cli.main as cli

    spent["imports"] = time.perf_counter() - T0
    import pyspark.java_gateway
    from pyspark.core import context

    from delta_sync.render import text as render
    from delta_sync.review import pipeline
    from delta_sync.spark import catalog, engine_borrow, table_reads

    pyspark.java_gateway.launch_gateway = timed("jvm", pyspark.java_gateway.launch_gateway)
    original_init = context.SparkContext.__init__
    context.SparkContext.__init__ = timed("context", original_init)  # type: ignore[method-assign]
    engine_borrow.borrow = timed("engine", engine_borrow.borrow)
    table_reads.schema_names = timed("catalog", table_reads.schema_names)
    catalog.SparkCatalog.read = timed("read", catalog.SparkCatalog.read)  # type: ignore[method-assign]
    pipeline.review = timed("review", pipeline.review)
    render.render_text = timed("render", render.render_text)
    sys.argv = ["delta-sync", *sys.argv[1:]]
    code = 0
    shown = StringIO()
    with redirect_stdout(shown):
        try:
            cli.main()
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    wall = time.perf_counter() - T0
    spent["other"] = wall - sum(spent.values())
    print(json.dumps({"wall": round(wall, 3), "exit": code, "phases": {k: round(v, 3) for k, v in spent.items()}}))


if __name__ == "__main__":
    main()
