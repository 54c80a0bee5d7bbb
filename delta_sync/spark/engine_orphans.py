"""The result servers a dead command leaves in the warm engine's JVM, ended.

pyspark's `collect()` asks the JVM for the rows (`Dataset.collectToPython`): the JVM collects them, starts a
thread (`serve-DataFrame`) that waits for the Python side on a loopback port, and returns the port; Python then
connects and reads. A command killed between the two never connects. Spark means that thread to give up after
`spark.python.authenticate.socketTimeout` (15 s), but Spark 4 sets the timeout on a ServerSocketChannel's socket,
whose `accept()` ignores it: the thread waits for ever, holding its port, a file descriptor and the collected
rows. A one-shot process ends with it; the engine kept one per such command for its whole life (11 in 2,500
commands of the memory soak, 5% of them killed: BENCHMARKS.md, "Memory over 5,000 commands").

So the engine ends them. Every SWEEP_EVERY seconds it looks at its JVM's threads in /proc (their names, which the
JVM gives the kernel, and their start times: no JVM call); only when a serving thread older than that exists, it
asks the JVM for the threads waiting in SocketAuthServer's accept, and interrupts those it found waiting at the
previous look too (a live command connects within milliseconds of getting the port). Interrupted, the accept
fails (the channel is interruptible), and the thread closes its port and ends, its rows with it; the JVM prints
its ClosedByInterruptException in the Spark log, and the engine's log says how many it ended.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SWEEP_EVERY = 30.0
PREFIX = "serve"  # pyspark's serving threads: serve-DataFrame, serve-Arrow, ... (the kernel keeps 15 characters)
_SERVER = "org.apache.spark.security.SocketAuthServer"


def old_serving_threads(jvm_pid: int, older_than: float) -> int:
    """The JVM's threads named like a result server's that started more than `older_than` seconds ago."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        tasks = list(Path(f"/proc/{jvm_pid}/task").iterdir())
    except (OSError, ValueError):
        return 0
    count = 0
    for task in tasks:
        try:
            if not (task / "comm").read_text().startswith(PREFIX):
                continue
            # starttime: field 22 of stat, the 20th after the command's closing parenthesis
            started = int((task / "stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
        except (OSError, ValueError, IndexError):
            continue
        if uptime - started > older_than:
            count += 1
    return count


class OrphanServers:
    """Ends the engine JVM's result servers that no command will connect to (see the module's text)."""

    def __init__(self, spark: Any, jvm_pid: int, older_than: float = SWEEP_EVERY) -> None:
        self._gateway = spark.sparkContext._gateway
        self._jvm = spark.sparkContext._jvm
        self._pid = jvm_pid
        self._older_than = older_than
        self._seen: set[int] = set()  # ids of the threads waiting in accept at the previous look

    def waiting(self) -> dict[int, Any]:
        """The JVM's threads waiting in a result server's accept, by thread id."""
        lang = self._jvm.java.lang
        group = lang.Thread.currentThread().getThreadGroup()
        while group.getParent() is not None:
            group = group.getParent()
        threads = self._gateway.new_array(lang.Thread, int(group.activeCount()) + 64)
        found: dict[int, Any] = {}
        for index in range(int(group.enumerate(threads, True))):
            thread = threads[index]
            if thread is None or not str(thread.getName()).startswith(PREFIX):
                continue
            frames = [(str(f.getClassName()), str(f.getMethodName())) for f in thread.getStackTrace()]
            in_accept = any(name.endswith("ServerSocketChannelImpl") and method == "accept" for name, method in frames)
            if in_accept and any(name.startswith(_SERVER) for name, _method in frames):
                found[int(thread.getId())] = thread
        return found

    def sweep(self) -> int:
        """One look: the servers ended."""
        if old_serving_threads(self._pid, self._older_than) == 0:
            self._seen = set()
            return 0
        waiting = self.waiting()
        ended = 0
        for ident, thread in waiting.items():
            if ident in self._seen:
                thread.interrupt()
                ended += 1
        self._seen = {ident for ident in waiting if ident not in self._seen}
        return ended

    def forever(self, log: Callable[[str], None]) -> None:
        """`sweep` every SWEEP_EVERY seconds until the JVM goes."""
        while True:
            time.sleep(SWEEP_EVERY)
            if not Path(f"/proc/{self._pid}").exists():
                return
            try:
                ended = self.sweep()
            except Exception:  # the JVM stopping, or a thread that ended while looked at
                continue
            if ended:
                log(f"ended {ended} result server(s) that no command connected to (it died before reading its rows)")
