"""What the warm engine lends a command, on the JVM side: a py4j gateway of its own, and the cancelling of its
Spark jobs.

Each lease gets a py4j server of its own on 127.0.0.1 with a secret of its own (the engine's own gateway is
never lent). The JVM objects a command creates live in that gateway's table, so they all go when the lease
ends, whether the command said goodbye or died: a busy engine does not grow. A command's jobs carry its
sessions' job tags (`spark-session-<uuid>`: Spark tags every job a session runs with it), which it tells the
engine; the engine cancels those tags' jobs on Ctrl-C and when the lease ends, and never anyone else's.

The engine's scheduler is FAIR and each lease has a pool of its own, so that one command's long query does not
hold every other command's jobs behind it. The pool is a local property of the lease's gateway thread, which
every thread serving the command's calls inherits (py4j starts them from it): the command's main thread, the
threads it spawns for parallel reads, probes and statements, all without the command's side doing anything.

The FAIR scheduler only chooses who gets a core when a task ends; a task is never paused. A stage of long tasks
(a query over billions of rows: a minute a task) keeps every core until its tasks end, and another command's
one-second job would wait that long. So the engine also shares by preemption (`JvmLender.share`): a pool whose
job has waited STARVED seconds with no task running, while another pool runs two or more, gets a core back: the
youngest task of the pool that runs the most is killed (not interrupted: it stops at its next check, as a
cancelled task does), and Spark runs it again later, from its start. The long job loses at most that task's
work; each pool keeps at least one core.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

POOL = "spark.scheduler.pool"
STARVED = 0.3  # seconds a pool's job waits with no core before one is taken back for it
SHARE_EVERY = 0.1
SETTLE_TIMEOUT = 3600.0  # how long a dead command's statement in flight is awaited (a DDL has no job to cancel)
_POLL = 0.1


def pool_name(number: int) -> str:
    return f"delta-sync-{number}"


class JvmLender:
    """Lends per-command py4j gateways on the engine's JVM and cancels a command's jobs by its session tag."""

    def __init__(self, spark: Any) -> None:
        context = spark.sparkContext
        self._gateway = context._gateway
        self._jvm = context._jvm
        self._sc = context._jsc.sc()
        self._loopback = self._jvm.java.net.InetAddress.getLoopbackAddress()
        self._lock = threading.Lock()
        self._servers: dict[int, Any] = {}
        self._pools: dict[int, int] = {}  # handle -> its pool's number
        self._lent = 0
        self._closing: dict[int, Any] = {}  # gateways of ended leases, until their last call has returned
        # pool -> since when its job has waited with no task running, and the cores taken back for it meanwhile
        self._starved: dict[str, tuple[float, int]] = {}

    def lend(self) -> tuple[dict[str, Any], int]:
        """A new gateway: what the command connects with, and the handle to take it back."""
        secret = secrets.token_hex(32)
        with self._lock:
            self._lent += 1
            handle = self._lent
            # Spark never drops a pool, and the FAIR scheduler sorts them all at every offer of a core: a number
            # freed by an ended lease is taken again, so that the pools are as many as the leases ever open at once.
            number = min(set(range(1, len(self._pools) + 2)) - set(self._pools.values()))
            self._pools[handle] = number
        # Local properties are inherited by a thread from the one that creates it: the gateway's accepting thread
        # is started by this one, and starts a thread for each connection of the command.
        self._sc.setLocalProperty(POOL, pool_name(number))
        try:
            builder = self._jvm.py4j.ClientServer.ClientServerBuilder()
            server = builder.javaPort(0).javaAddress(self._loopback).authToken(secret).build()
        except Exception:
            with self._lock:
                self._pools.pop(handle, None)
            raise
        finally:
            self._sc.setLocalProperty(POOL, None)
        port = int(server.getJavaServer().getListeningPort())
        with self._lock:
            self._servers[handle] = server
        return {"port": port, "secret": secret, "pool": pool_name(number)}, handle

    def cancel(self, tags: list[str]) -> None:
        """Cancel the running jobs of these tags (a command's sessions: no other command's)."""
        for tag in tags:
            self._sc.cancelJobsWithTag(tag, "the delta-sync command that started it was interrupted or ended")

    def running(self, tags: list[str]) -> list[int]:
        tracker = self._sc.statusTracker()
        active = {int(job) for job in tracker.getActiveJobIds()}
        return sorted({int(job) for tag in tags for job in tracker.getJobIdsForTag(tag)} & active)

    def share_forever(self, log: Callable[[str], None]) -> None:
        """`share`, every SHARE_EVERY seconds, until the JVM goes. Under FIFO (a project's own setting) a freed core
        goes back to the earliest job, whatever its pool: taking one back would only lose work."""
        if str(self._sc.getSchedulingMode()) != "FAIR":
            return
        while True:
            time.sleep(SHARE_EVERY)
            try:
                taken = self.share(time.monotonic())
            except Exception:  # a stage or task that ended while looked at; or the JVM stopping, which ends this
                try:
                    if self._sc.isStopped():
                        return
                except Exception:
                    return
                continue
            if taken is not None:
                log(taken)

    def share(self, now: float) -> str | None:
        """One look at the running stages: a core taken back for a pool starved of one (see the module's text),
        said in a sentence for the engine's log, or None."""
        tracker = self._sc.statusTracker()
        stage_ids = list(tracker.getActiveStageIds())
        if len(stage_ids) < 2:  # one stage: nobody waits behind another command (the usual case: one call)
            self._starved.clear()
            return None
        store = self._sc.statusStore()
        running: dict[str, int] = {}
        waiting: set[str] = set()
        stages: dict[str, list[Any]] = {}
        for stage_id in stage_ids:
            with contextlib.suppress(Exception):  # a stage ending meanwhile
                data = store.lastStageAttempt(stage_id)
                pool = str(data.schedulingPool())
                active = int(data.numActiveTasks())
                running[pool] = running.get(pool, 0) + active
                if int(data.numTasks()) - int(data.numCompletedIndices()) - active > 0:
                    waiting.add(pool)
                stages.setdefault(pool, []).append(data)
        starved = {pool for pool in waiting if running.get(pool, 0) == 0}
        for pool in list(self._starved):
            if pool not in starved:
                del self._starved[pool]
        for pool in starved:
            self._starved.setdefault(pool, (now, 0))
        # A pool still starved after a core was taken back for it (the scheduler gave it elsewhere: a project's
        # own pool settings) waits twice as long before the next one: never a loop of lost work.
        due = [pool for pool in starved if now - self._starved[pool][0] >= STARVED * 2 ** self._starved[pool][1]]
        richest = max(running, key=lambda pool: running[pool], default=None)
        if not due or richest is None or running[richest] < 2:
            return None
        task = self._youngest_task(store, stages[richest])
        if task is None:
            return None
        reason = f"delta-sync: a core handed to pool {due[0]}, whose job waited behind this one; the task runs again"
        if not bool(self._sc.killTaskAttempt(task, False, reason)):
            return None
        self._starved[due[0]] = (now, self._starved[due[0]][1] + 1)
        return f"pool {due[0]} waited {STARVED:.1f}s with no core: task {task} of pool {richest} stopped to run later"

    @staticmethod
    def _youngest_task(store: Any, stages: list[Any]) -> int | None:
        """The running task launched last among these stages: the one whose work lost is least."""
        youngest: tuple[int, int] | None = None
        for data in stages:
            # The last tasks launched come first; the running ones are among them.
            tasks = store.taskList(int(data.stageId()), int(data.attemptId()), 64)
            for index in range(int(tasks.size())):
                task = tasks.apply(index)
                if str(task.status()) == "RUNNING":
                    launched = int(task.launchTime().getTime())
                    if youngest is None or launched > youngest[0]:
                        youngest = (launched, int(task.taskId()))
        return None if youngest is None else youngest[1]

    def take_back(self, handle: int, tags: list[str], settle: bool) -> None:
        """The lease ended: its jobs are cancelled, then its gateway (and every object in it) goes once the calls
        it was serving have returned. With `settle` (a statement was in flight) this returns only then; without,
        at once, and the gateway closes in the background.

        py4j's shutdown interrupts a connection's thread that is still in a call, and an interrupt inside the
        metastore's Derby or a Delta commit can leave them half done (Derby drops the connection, which the
        metastore's pool then lacks: after a few, every command waits for one forever). So a dead command's
        calls run to their end, never cut: a statement lands in full or not at all, as in-process."""
        with self._lock:
            server = self._servers.pop(handle, None)
            self._closing[handle] = server
        if settle:
            self._close_when_returned(handle, server, tags, SETTLE_TIMEOUT)
        else:
            self.cancel_running(tags)
            threading.Thread(
                target=self._close_when_returned, args=(handle, server, tags, None), name="close", daemon=True
            ).start()

    def cancel_running(self, tags: list[str]) -> None:
        if tags and self.running(tags):
            self.cancel(tags)

    def _close_when_returned(self, handle: int, server: Any, tags: list[str], timeout: float | None) -> None:
        """Once no call of this gateway runs (its jobs cancelled meanwhile: one call may start several), it closes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while deadline is None or time.monotonic() < deadline:
                self.cancel_running(tags)
                if server is None or self._connections(server) == 0:
                    break
                time.sleep(_POLL)
        except Exception:  # the JVM is going: so is the gateway
            pass
        if server is not None:
            with contextlib.suppress(Exception):
                server.shutdown()
            with contextlib.suppress(Exception):
                self._gateway.detach(server)
        with self._lock:
            self._closing.pop(handle, None)
            self._pools.pop(handle, None)

    def _connections(self, server: Any) -> int:
        """Connections of this gateway still open: a connection closes itself when its command's socket is gone
        and no call of it is running."""
        field = self._jvm.java.lang.Class.forName("py4j.GatewayServer").getDeclaredField("connections")
        field.setAccessible(True)
        return int(field.get(server.getJavaServer()).size())

    def figures(self) -> dict[str, Any]:
        """For `engine status` and the soak: lent gateways open, the objects they hold, the JVM's heap."""
        with self._lock:
            servers = list(self._servers.values())
        objects = 0
        for server in servers:
            with contextlib.suppress(Exception):
                objects += int(server.getJavaServer().getGateway().getBindings().size())
        runtime = self._jvm.java.lang.Runtime.getRuntime()
        used = int(runtime.totalMemory()) - int(runtime.freeMemory())
        with self._lock:
            closing = len(self._closing)
        return {
            "gateways": len(servers),
            "gateways_closing": closing,
            "gateway_objects": objects,
            "active_jobs": len(self._sc.statusTracker().getActiveJobIds()),
            "heap_used_mb": round(used / 2**20, 1),
        }
