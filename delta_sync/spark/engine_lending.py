"""What the warm engine lends a command, on the JVM side: a py4j gateway of its own, and the cancelling of its
Spark jobs.

Each lease gets a py4j server of its own on 127.0.0.1 with a secret of its own (the engine's own gateway is
never lent). The JVM objects a command creates live in that gateway's table, so they all go when the lease
ends, whether the command said goodbye or died: a busy engine does not grow. A command's jobs carry its
sessions' job tags (`spark-session-<uuid>`: Spark tags every job a session runs with it), which it tells the
engine; the engine cancels those tags' jobs on Ctrl-C and when the lease ends, and never anyone else's.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from typing import Any

SETTLE_TIMEOUT = 3600.0  # how long a finished lease waits for its last call to return (a DDL has no job to cancel)
_POLL = 0.1


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
        self._lent = 0

    def lend(self) -> tuple[dict[str, Any], int]:
        """A new gateway: what the command connects with, and the handle to take it back."""
        secret = secrets.token_hex(32)
        builder = self._jvm.py4j.ClientServer.ClientServerBuilder()
        server = builder.javaPort(0).javaAddress(self._loopback).authToken(secret).build()
        port = int(server.getJavaServer().getListeningPort())
        with self._lock:
            self._lent += 1
            handle = self._lent
            self._servers[handle] = server
        return {"port": port, "secret": secret}, handle

    def cancel(self, tags: list[str]) -> None:
        """Cancel the running jobs of these tags (a command's sessions: no other command's)."""
        for tag in tags:
            self._sc.cancelJobsWithTag(tag, "the delta-sync command that started it was interrupted or ended")

    def running(self, tags: list[str]) -> list[int]:
        tracker = self._sc.statusTracker()
        active = {int(job) for job in tracker.getActiveJobIds()}
        return sorted({int(job) for tag in tags for job in tracker.getJobIdsForTag(tag)} & active)

    def take_back(self, handle: int, tags: list[str]) -> None:
        """The lease ended: its jobs are cancelled, then its gateway (and every object in it) goes once the calls
        it was serving have returned.

        py4j's shutdown interrupts a connection's thread that is still in a call, and an interrupt inside the
        metastore's Derby or a Delta commit can leave them half done (Derby drops the connection, which the
        metastore's pool then lacks: after a few, every command waits for one forever). So a dead command's
        calls run to their end: a statement lands in full or not at all, as in-process."""
        with self._lock:
            server = self._servers.get(handle)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline:
            if tags and self.running(tags):
                self.cancel(tags)
            elif server is None or self._connections(server) == 0:
                break
            time.sleep(_POLL)
        with self._lock:
            server = self._servers.pop(handle, None)
        if server is not None:
            with contextlib.suppress(Exception):
                server.shutdown()
            with contextlib.suppress(Exception):
                self._gateway.detach(server)

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
        return {
            "gateways": len(servers),
            "gateway_objects": objects,
            "active_jobs": len(self._sc.statusTracker().getActiveJobIds()),
            "heap_used_mb": round(used / 2**20, 1),
        }
