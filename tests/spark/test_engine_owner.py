"""The warm engine lets only its owner in.

The engine's doors: its TCP port on 127.0.0.1 (a request must carry the token of the owner-only engine.json), the
preloaded process's unix socket (SO_PEERCRED: the owner's uid only) and the JVM's own ports (py4j wants the
gateway's secret, which only a lease hands out). Proven here against one real engine (one JVM start for the
module), from outside, the way another client or another user on the machine would knock:
- a client without the token, or with a wrong one, is refused for every request, learns nothing (no gateway, no
  pid) and changes nothing: the engine serves the next command and is not stopping;
- engine.json is 0600 in a folder others cannot write;
- another user (a child of this test dropped to `nobody`) cannot read engine.json, is never served by the
  preloaded process, gets no lease without the token, gets no py4j answer from the JVM, and a `delta-sync plan`
  it runs is not served by the owner's engine;
- the token (and the gateway's secret) is in no log, no argument list, no environment and no `engine status`;
- every socket the engine's processes listen on is on the loopback address, or a unix socket;
- Spark's own ports (the driver's RPC and the block manager's) answer a client of Spark's protocol only when it
  holds the application's secret, which Spark generated inside the JVM (`spark.authenticate`);
- and inside: each command's jobs run in a FAIR scheduler pool of its own, the threads it starts included;
- and the other way round, a command does not hand its terminal and environment to another user's process
  listening where the preloaded process would (expected to fail until the client checks who listens).
"""

from __future__ import annotations

import contextlib
import gc
import ipaddress
import json
import os
import pty
import pwd
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.spark.cli import ENGINE, Cli, environ

pytestmark = pytest.mark.spark

SPEC = "table: owner.a\ncolumns:\n  - name: id\n    type: bigint\n  - name: v\n    type: string\n"
REFUSED_KEYS = {"ok", "error"}  # all a refused client may learn
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
ACCEPTING = 0x00010000  # __SO_ACCEPTCON in /proc/net/unix: a listening unix socket
MARK = "DELTA_SYNC_OWNER_TEST"  # in the environment that started the engine: found in its JVM's


@dataclass
class Engine:
    root: Path
    cli: Cli
    state: dict[str, Any]
    prefork_name: str  # the preloaded process's abstract socket, "\0..."
    lent: list[str] = field(default_factory=list)  # the gateway secrets the owner's leases were lent

    @property
    def home(self) -> Path:
        return self.root / ".delta-sync" / "local"

    @property
    def state_file(self) -> Path:
        return self.home / "engine" / "engine.json"

    @property
    def token(self) -> str:
        return str(self.state["token"])

    @property
    def port(self) -> int:
        return int(self.state["port"])

    @property
    def pid(self) -> int:
        return int(self.state["pid"])

    @property
    def jvm_pid(self) -> int:
        return int(self.state["jvm_pid"])

    def secrets(self) -> list[str]:
        """What must never leave the owner: the engine's token, and the JVM gateway secrets its leases were lent."""
        return [self.token, *self.lent]

    def status(self) -> dict[str, Any]:
        """The engine's own status, asked with the token."""
        answer = ask(self.port, {"op": "status", "token": self.token})
        assert answer is not None
        assert answer["ok"] is True, answer
        return answer

    def prefork_pid(self) -> int:
        """The process listening on the preloaded process's socket: a child of the engine."""
        wanted = "@" + self.prefork_name[1:]
        inodes = {inode for inode, path in unix_listeners().items() if path == wanted}
        assert inodes, f"nobody listens on {wanted!r}"
        found = [pid for pid in children(self.pid) if socket_inodes(pid) & inodes]
        assert len(found) == 1, found
        return found[0]


# --- clients knocking on the engine's doors ---------------------------------------------------------------------


def exchange(port: int, payload: bytes, timeout: float = 15) -> tuple[bytes, bytes]:
    """Send one payload to the engine's port: its first answer line, and what followed before it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        reader = sock.makefile("rb")
        line = reader.readline()
        rest = reader.read() if line else b""  # a refused client is shown the door: EOF, not a waiting socket
    return line, rest


def ask(port: int, message: object) -> dict[str, Any] | None:
    line, _rest = exchange(port, json.dumps(message).encode() + b"\n")
    return json.loads(line) if line else None


@contextlib.contextmanager
def held_lease(engine: Engine) -> Iterator[dict[str, Any]]:
    """An owner's lease, held as a command holds it and given back as it does ("done"); its answer. The refusals'
    positive control, and the JVM gateway it lends stays open while it is held."""
    with socket.create_connection(("127.0.0.1", engine.port), timeout=15) as sock:
        message = {
            "op": "lease",
            "token": engine.token,
            "version": engine.state["version"],
            "settings": engine.state["settings"],
            "pid": os.getpid(),
            "command": "delta-sync test lease",
        }
        sock.sendall(json.dumps(message).encode() + b"\n")
        answer: dict[str, Any] = json.loads(sock.makefile("rb").readline())
        assert answer["ok"] is True, answer
        secret = (answer.get("gateway") or {}).get("secret")
        if secret:
            engine.lent.append(str(secret))
        try:
            yield answer
        finally:
            sock.sendall(b'{"op": "done"}\n')


def wrong_tokens(token: str) -> list[tuple[str, dict[str, Any]]]:
    """Messages without the token: none at all, empty, null, a number, a guess, one character off, a prefix."""
    flipped = token[:-1] + ("0" if token[-1] != "0" else "1")
    return [
        ("none", {}),
        ("empty", {"token": ""}),
        ("null", {"token": None}),
        ("number", {"token": 0}),
        ("guess", {"token": "guess"}),
        ("same length", {"token": "f" * len(token)}),
        ("one character off", {"token": flipped}),
        ("prefix", {"token": token[: len(token) // 2]}),
        ("doubled", {"token": token + token}),
    ]


def refusals(engine: Engine, state: dict[str, Any]) -> list[str]:
    """Every request of every kind without the right token; what went wrong with each (empty: all refused).
    `state` is what the client knows of the engine besides the token (an outsider may guess version and settings)."""
    problems: list[str] = []
    for op in ("status", "lease", "stop"):
        for name, token in wrong_tokens(engine.token):
            message = {
                "op": op,
                "version": state.get("version"),
                "settings": state.get("settings"),
                "pid": os.getpid(),
                "command": "delta-sync plan",
                **token,
            }
            line, rest = exchange(engine.port, json.dumps(message).encode() + b"\n")
            problems += refused(f"{op} with {name} token", line, rest, engine)
    for name, junk in (("not json", b"hello\n"), ("a list", b'["status"]\n'), ("empty line", b"\n")):
        line, rest = exchange(engine.port, junk)
        problems += refused(name, line, rest, engine)
    return problems


def refused(what: str, line: bytes, rest: bytes, engine: Engine) -> list[str]:
    if rest:
        return [f"{what}: more than one answer: {rest!r}"]
    if not line:
        return []  # closed without a word: refused too
    answer = json.loads(line)
    problems = []
    if answer.get("ok") is not False:
        problems.append(f"{what}: not refused: {answer}")
    if set(answer) - REFUSED_KEYS:
        problems.append(f"{what}: told {sorted(set(answer) - REFUSED_KEYS)}: {answer}")
    for secret in engine.secrets():
        if secret in line.decode():
            problems.append(f"{what}: the answer holds a secret")
    return problems


def knock_prefork(name: str, root: Path, out: int, timeout: float = 15) -> dict[str, Any]:
    """A command order sent to the preloaded process as the client sends `delta-sync --version` (stdin from
    /dev/null, stdout and stderr to `out`). Whether it connected, whether a pid came back, and how it ended."""
    outcome: dict[str, Any] = {"connected": False, "pid": None, "closed": False, "code": None}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    null = os.open(os.devnull, os.O_RDONLY)
    with conn:
        try:
            conn.connect(name)
        except OSError as exc:
            outcome["connect_error"] = type(exc).__name__
            return outcome
        outcome["connected"] = True
        order = json.dumps(
            {
                "argv": ["delta-sync", "--version"],
                "cwd": str(root),
                "env": environ(ENGINE),
                "umask": 0o022,
                "encoding": ["utf-8", "strict", "utf-8"],
            }
        ).encode()
        try:
            socket.send_fds(conn, [struct.pack("!I", len(order))], [null, out, out])
            conn.sendall(order)
        except OSError as exc:
            outcome["send_error"] = type(exc).__name__
        finally:
            os.close(null)
        data = receive(conn, 4)
        if data is None:
            outcome["closed"] = True
            return outcome
        if len(data) < 4:
            outcome["timeout"] = True
            return outcome
        outcome["pid"] = struct.unpack("!i", data)[0]
        status = receive(conn, 4)
        if status is not None and len(status) == 4:
            outcome["code"] = struct.unpack("!i", status)[0]
    return outcome


def receive(conn: socket.socket, size: int) -> bytes | None:
    """`size` bytes; None when the peer closed (or reset) the connection; fewer on a timeout."""
    data = b""
    while len(data) < size:
        try:
            chunk = conn.recv(size - len(data))
        except (ConnectionResetError, BrokenPipeError):
            return None
        except TimeoutError:
            return data
        if not chunk:
            return None
        data += chunk
    return data


def py4j_call(port: int, secret: str | None, timeout: float = 15) -> str:
    """A py4j reflection call (look up `java`) on a JVM port, with the gateway's secret or without: the answer
    ("!y...": served), or "" when the port closed without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        reader = sock.makefile("rb")
        try:
            if secret is not None:
                sock.sendall(f"A\n{secret}\n".encode())
                if not reader.readline().startswith(b"!y"):
                    return "auth refused"
            sock.sendall(b"r\nu\njava\nrj\ne\n")
            return reader.readline().decode(errors="replace").strip()
        except (OSError, TimeoutError) as exc:
            return f"{type(exc).__name__}"


@contextlib.contextmanager
def jvm_through(gateway: dict[str, Any]) -> Iterator[Any]:
    """The JVM through a lent gateway, as a command's pyspark reaches it: py4j's pinned threads, one JVM thread per
    Python thread."""
    from py4j.clientserver import ClientServer, JavaParameters, PythonParameters

    client = ClientServer(
        java_parameters=JavaParameters(port=int(gateway["port"]), auth_token=str(gateway["secret"]), auto_convert=True),
        python_parameters=PythonParameters(port=0, eager_load=False),
    )
    try:
        yield client.jvm
    finally:
        # A thread's connection leaves py4j's list once that thread's local data is collected: then it is closed too.
        gc.collect()
        client.close()


def pool_of_a_job(jvm: Any, tag: str) -> dict[str, str | None]:
    """On the calling thread: the scheduler pool it is set to, and the pools the status store recorded for the
    stages of a small query run from it (its jobs found by a job tag of its own)."""
    context = jvm.org.apache.spark.SparkContext.getOrCreate()
    session = jvm.org.apache.spark.sql.classic.SparkSession.getDefaultSession().get()
    context.addJobTag(tag)
    try:
        session.sql("SELECT count(*) FROM range(0, 100, 1, 2)").collect()
    finally:
        context.removeJobTag(tag)
    tracker = context.statusTracker()
    stages = [stage for job in tracker.getJobIdsForTag(tag) for stage in tracker.getJobInfo(job).get().stageIds()]
    assert stages, "the query ran no job"
    context.listenerBus().waitUntilEmpty(60000)  # the status store has heard of every stage's end
    # A stage a later job of the query found done is listed for that job too, as skipped: it ran in the earlier one.
    ran = [data for data in map(context.statusStore().lastStageAttempt, stages) if str(data.status()) == "COMPLETE"]
    assert ran, "no stage of the query is complete"
    pools = {str(data.schedulingPool()) for data in ran}
    return {"thread": context.getLocalProperty("spark.scheduler.pool"), "stages": ",".join(sorted(pools))}


def spark_client_conf(jvm: Any, authenticate: bool) -> tuple[Any, Any]:
    """A SparkConf and SecurityManager for a client of Spark's own protocol, made in the engine's JVM. With
    `authenticate`, it holds the application's secret (Spark keeps the one it generated in the JVM user's
    credentials, which every SecurityManager there reads); without, it is any other local process."""
    conf = jvm.org.apache.spark.SparkConf(False)
    for key, value in {"spark.rpc.lookupTimeout": "20s", "spark.authenticate": str(authenticate).lower()}.items():
        conf.set(key, value)
    settings = getattr(getattr(jvm.org.apache.spark.internal.config, "package$"), "MODULE$")
    return conf, jvm.org.apache.spark.SecurityManager(conf, jvm.scala.Option.empty(), settings.AUTH_SECRET_FILE())


def knock_rpc(jvm: Any, port: int, authenticate: bool) -> str:
    """Ask the driver's RPC port for its BlockManagerMaster endpoint, as an executor would: "answered", or why not."""
    conf, security = spark_client_conf(jvm, authenticate)
    client = jvm.org.apache.spark.rpc.RpcEnv.create("knock", "127.0.0.1", 0, conf, security, True)
    try:
        client.setupEndpointRefByURI(f"spark://BlockManagerMaster@127.0.0.1:{port}")
        return "answered"
    except Exception as exc:
        return f"refused: {str(exc).splitlines()[0][:200]}"
    finally:
        client.shutdown()


def knock_blocks(jvm: Any, port: int, authenticate: bool) -> str:
    """Ask the block manager's port to open a stream of no blocks, as another executor fetching blocks would:
    "answered", or why not."""
    context = jvm.org.apache.spark.SparkContext.getOrCreate()
    _conf, security = spark_client_conf(jvm, authenticate)
    network = jvm.org.apache.spark.network
    transport = network.util.TransportConf("shuffle", network.util.MapConfigProvider(jvm.java.util.HashMap()))
    bootstraps = jvm.java.util.ArrayList()
    if authenticate:
        bootstraps.add(network.crypto.AuthClientBootstrap(transport, context.applicationId(), security))
    transport_context = network.TransportContext(transport, network.server.NoOpRpcHandler())
    factory = transport_context.createClientFactory(bootstraps)
    try:
        client = factory.createClient("127.0.0.1", port)
        no_blocks = jvm.java.lang.reflect.Array.newInstance(jvm.java.lang.Class.forName("java.lang.String"), 0)
        request = network.shuffle.protocol.OpenBlocks(context.applicationId(), "driver", no_blocks)
        client.sendRpcSync(request.toByteBuffer(), 20000)
        return "answered"
    except Exception as exc:
        return f"refused: {str(exc).splitlines()[0][:200]}"
    finally:
        factory.close()
        transport_context.close()


# A command in the JVM through a lease of its own, as a command's pyspark would be: its lease (and, given a statement,
# that statement told as running), then one call that does not return until the test connects to the port it prints
# (a DDL still committing, or a read still in the metastore: a call with no Spark job to cancel).
IN_A_CALL = """
import json, os, socket, sys
from py4j.clientserver import ClientServer, JavaParameters, PythonParameters
state, statement = json.loads(sys.argv[1]), sys.argv[2]
lease = socket.create_connection(("127.0.0.1", state["port"]), timeout=60)
message = {"op": "lease", "token": state["token"], "version": state["version"], "settings": state["settings"],
           "pid": os.getpid(), "command": "delta-sync " + ("apply" if statement else "plan") + " (dying)"}
lease.sendall(json.dumps(message).encode() + b"\\n")
gateway = json.loads(lease.makefile("rb").readline())["gateway"]
if statement:
    lease.sendall(json.dumps({"op": "running", "sql": statement}).encode() + b"\\n")
client = ClientServer(JavaParameters(port=gateway["port"], auth_token=gateway["secret"]), PythonParameters(port=0))
listener = client.jvm.java.net.ServerSocket(0, 1, client.jvm.java.net.InetAddress.getLoopbackAddress())
print(listener.getLocalPort(), flush=True)
listener.accept()
"""


@contextlib.contextmanager
def dying_command(engine: Engine, statement: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A command in a call (IN_A_CALL), listed by the engine: its process, and the port that ends its call."""
    child = subprocess.Popen(
        [sys.executable, "-c", IN_A_CALL, json.dumps(engine.state), statement], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    port = int(child.stdout.readline())
    try:
        yield child, port
    finally:
        child.kill()
        child.wait()
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=10):
            pass


def wait_for(check: Callable[[], bool], timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


# --- another user --------------------------------------------------------------------------------------------


def nobody() -> tuple[int, int]:
    if os.getuid() != 0:
        pytest.skip("dropping to another user needs root (run as root to prove another user is kept out)")
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this machine has no `nobody` user to try the engine's doors as another user")
    return entry.pw_uid, entry.pw_gid


class Child:
    """`action` running in a child of this process turned into `user` (uid, gid)."""

    def __init__(self, user: tuple[int, int], action: Callable[[], dict[str, Any]]) -> None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 0
            try:
                os.close(read_end)
                os.setgroups([])
                os.setgid(user[1])
                os.setuid(user[0])
                try:
                    done = action()
                    done["uid"] = os.getuid()
                except BaseException as exc:
                    done = {"error": f"{type(exc).__name__}: {exc}"}
                with os.fdopen(write_end, "w") as out:
                    json.dump(done, out, default=str)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write_end)
        self.pid = pid
        self._answer = read_end

    def result(self, timeout: float = 120) -> dict[str, Any] | None:
        """What `action` returned (and the child's uid); None if it had not within `timeout` (it is killed)."""
        data = b""
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._answer], [], [], left)[0]:
                    os.kill(self.pid, signal.SIGKILL)
                    return None
                chunk = os.read(self._answer, 65536)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(self._answer)
            os.waitpid(self.pid, 0)
        assert data, "the child died without an answer"
        found: dict[str, Any] = json.loads(data)
        return found


def as_user(user: tuple[int, int], action: Callable[[], dict[str, Any]], timeout: float = 120) -> dict[str, Any]:
    """`action` run in a child of this process turned into `user` (uid, gid); what it returned (and its uid)."""
    found = Child(user, action).result(timeout)
    assert found is not None, f"the child did not answer within {timeout} s"
    return found


# --- /proc ---------------------------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat_file.read_text().rsplit(") ", 1)[1].split()[1]) == pid:
                found.append(int(stat_file.parent.name))
    return found


def socket_inodes(pid: int) -> set[int]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                found.add(int(target[len("socket:[") : -1]))
    return found


def tcp_listeners() -> dict[int, tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """Every listening TCP socket of this network namespace: inode -> (address, port)."""
    found: dict[int, tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]] = {}
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        for line in (table.read_text() if table.exists() else "").splitlines()[1:]:
            fields = line.split()
            if fields[3] != LISTEN:
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            # The kernel prints each 32-bit word of the address in host byte order.
            if sys.byteorder == "little":
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found[int(fields[9])] = (ipaddress.ip_address(raw), int(port, 16))
    return found


def unix_listeners() -> dict[int, str]:
    """Every listening unix socket: inode -> path ("@name" in the abstract namespace)."""
    found = {}
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[3], 16) & ACCEPTING:
            found[int(fields[6])] = fields[7] if len(fields) > 7 else ""
    return found


def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def environment(pid: int) -> str:
    return Path(f"/proc/{pid}/environ").read_bytes().replace(b"\0", b"\n").decode(errors="replace")


# --- the engine --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    """One engine for the module, started by a first command at a terminal, in a project others may look into
    (/tmp, 0755: another user reaches its files, so what keeps them out is the files' own modes)."""
    from delta_sync.spark.engine_identity import prefork_address

    root = Path(tempfile.mkdtemp(prefix="delta-sync-owner-"))
    root.chmod(0o755)
    (root / "specs").mkdir()
    (root / "specs" / "a.yaml").write_text(SPEC)
    cli = Cli(root, ENGINE)
    try:
        first = cli.run(["plan", "specs"], env={MARK: "1"})  # the engine and its JVM inherit this environment
        assert first.returncode == 0, first.stderr
        assert "Starting the delta-sync engine" in first.stderr
        state = cli.engine()
        assert state is not None
        found = Engine(root, cli, state, prefork_address(root, str(state["version"])))
        with held_lease(found) as answer:
            assert answer["pid"] == found.pid
        assert found.status()["stopping"] is False
        yield found
    finally:
        cli.close()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def waiting_command(engine: Engine) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`delta-sync apply specs` at a terminal, waiting at its prompt (holding its lease meanwhile): its client
    process, and the pid of the process that runs it (the preloaded process's copy). Answered "n" at the end."""
    master, terminal = pty.openpty()
    client = subprocess.Popen(
        [sys.executable, "-m", "delta_sync", "apply", "specs"],
        cwd=engine.root,
        env=environ(ENGINE),
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(terminal)
    try:
        deadline = time.monotonic() + 120
        while not (held := [c for c in engine.status()["commands"] if c["command"] == "delta-sync apply specs"]):
            assert client.poll() is None, f"the command ended ({client.returncode}) before it was seen running"
            assert time.monotonic() < deadline, "the command never took a lease"
            time.sleep(0.1)
        yield client, int(held[0]["pid"])
    finally:
        with contextlib.suppress(OSError):
            os.write(master, b"n\n")
        try:
            client.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(client.pid, signal.SIGKILL)
            client.wait()
        os.close(master)


def status(engine: Engine, *extra: str) -> str:
    """`delta-sync engine status`, what it printed."""
    done = engine.cli.run(["engine", "status", *extra])
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


# --- the tests -----------------------------------------------------------------------------------------------


def test_a_client_without_the_token_learns_nothing_and_the_engine_serves_on(engine: Engine) -> None:
    before = engine.status()
    # The positive control: with the token, the same kind of request is answered, pid and all.
    assert before["pid"] == engine.pid
    assert before["jvm_pid"] == engine.jvm_pid
    assert refusals(engine, engine.state) == []
    after = engine.status()
    assert after["stopping"] is False, "a refused `stop` stopped the engine"
    assert after["served"] == before["served"], "a refused lease was counted as served"
    assert after["pid"] == engine.pid
    # A real command afterwards is served by this engine, which is still not stopping.
    plan = engine.cli.run(["plan", "specs"])
    assert plan.returncode == 0, plan.stderr
    assert "create table owner.a" in plan.stdout
    shown = json.loads(engine.cli.run(["engine", "status", "--format", "json"]).stdout)
    assert shown["pid"] == engine.pid
    assert shown["served"] == before["served"] + 1
    assert shown["stopping"] is False
    assert "refused a client without the engine's token" in (engine.home / "logs" / "engine.log").read_text()


def test_each_command_runs_its_jobs_in_a_scheduler_pool_of_its_own(engine: Engine) -> None:
    import threading
    import uuid

    seen: dict[str, dict[str, dict[str, str | None]]] = {}
    with held_lease(engine) as first, held_lease(engine) as second:
        for name, answer in (("first", first), ("second", second)):
            with jvm_through(answer["gateway"]) as jvm:
                assert str(jvm.org.apache.spark.SparkContext.getOrCreate().getSchedulingMode()) == "FAIR"
                found = seen[name] = {"main": pool_of_a_job(jvm, f"pool-test-{uuid.uuid4()}")}

                # A thread the command starts (its probes', reads' and statements' threads) gets a JVM thread of its
                # own, which nobody set a pool on.
                def spawned(jvm: Any = jvm, found: dict[str, dict[str, str | None]] = found) -> None:
                    found["spawned"] = pool_of_a_job(jvm, f"pool-test-{uuid.uuid4()}")

                thread = threading.Thread(target=spawned)
                thread.start()
                thread.join(120)
                assert "spawned" in found, "the spawned thread's job did not finish"
            assert {pools[key] for pools in found.values() for key in pools} == {answer["gateway"]["pool"]}, found
    assert seen["first"]["main"]["stages"] != seen["second"]["main"]["stages"], seen


def test_sparks_own_ports_answer_only_a_client_with_the_applications_secret(engine: Engine) -> None:
    with held_lease(engine) as answer, jvm_through(answer["gateway"]) as jvm:
        spark_env = jvm.org.apache.spark.SparkEnv.get()
        assert spark_env.conf().get("spark.authenticate", "false") == "true"
        ports = {
            "rpc": int(spark_env.rpcEnv().address().port()),
            "block manager": int(spark_env.blockManager().blockManagerId().port()),
        }
        listening = {port for inode, (_a, port) in tcp_listeners().items() if inode in socket_inodes(engine.jvm_pid)}
        assert set(ports.values()) <= listening, (ports, listening)
        knocks = {"rpc": knock_rpc, "block manager": knock_blocks}
        # The positive control: the same clients, holding the secret, are answered.
        holding = {name: knocks[name](jvm, port, True) for name, port in ports.items()}
        without = {name: knocks[name](jvm, port, False) for name, port in ports.items()}
    print(json.dumps({"holding the secret": holding, "without": without}))
    assert holding == {"rpc": "answered", "block manager": "answered"}, holding
    for name, said in without.items():
        assert said.startswith("refused"), f"Spark's {name} port answered a client without the secret: {said}"
    assert engine.status()["stopping"] is False


def test_a_dead_commands_statement_in_flight_is_awaited_and_its_read_is_not(engine: Engine) -> None:
    def listed(command: str) -> list[str]:
        found = engine.status()
        return [c["command"] for c in found["commands"] if command in c["command"]] + [
            a["command"] for a in found["awaiting"] if command in a["command"]
        ]

    def closing() -> int:
        return int(engine.status()["memory"]["gateways_closing"])

    closing_before = closing()  # another test's gateway may still wait for a connection its client left open
    # A read: the lease ends as soon as the command is dead, while its call still runs in the JVM.
    with dying_command(engine, "") as (child, call):
        assert wait_for(lambda: listed("plan (dying)") != [])
        child.kill()
        assert wait_for(lambda: listed("plan (dying)") == []), engine.status()
        assert closing() >= 1, "its call still runs: its gateway is closing"
        with socket.create_connection(("127.0.0.1", call), timeout=10):
            pass  # its call returns: then its gateway closes
        assert wait_for(lambda: closing() <= closing_before), engine.status()

    # A statement: awaited until its call returns, shown as such, since when.
    statement = "ALTER TABLE owner.a ADD COLUMNS (w STRING)"
    with dying_command(engine, statement) as (child, call):
        assert wait_for(lambda: listed("apply (dying)") != [])
        child.kill()
        killed = time.time()
        assert wait_for(lambda: engine.status()["awaiting"] != []), engine.status()
        shown = status(engine)
        (awaited,) = engine.status()["awaiting"]
        assert awaited["command"] == "delta-sync apply (dying)"
        assert [s["sql"] for s in awaited["statements"]] == [statement]
        assert awaited["statements"][0]["since"] <= killed <= awaited["died"] + 1
        assert "awaiting what delta-sync apply (dying)" in shown, shown
        assert statement in shown, shown
        assert "since " in shown, shown
        assert engine.status()["awaiting"] != [], "the statement's call has not returned: still awaited"
        with socket.create_connection(("127.0.0.1", call), timeout=10):
            pass  # the statement's call returns
        assert wait_for(lambda: engine.status()["awaiting"] == []), engine.status()
    assert wait_for(lambda: closing() <= closing_before)
    assert engine.status()["stopping"] is False


def test_a_job_starved_behind_another_commands_long_tasks_gets_a_core_back(engine: Engine) -> None:
    import threading

    log = engine.home / "logs" / "engine.log"
    before = log.read_text().count("stopped to run later")
    long_query = "SELECT sum(hash(id)) FROM range(0, 40000000000, 1, 8)"  # 8 tasks of a minute or more: every core
    with (
        held_lease(engine) as first,
        held_lease(engine) as second,
        jvm_through(first["gateway"]) as long_jvm,
        jvm_through(second["gateway"]) as small_jvm,
    ):
        context = long_jvm.org.apache.spark.SparkContext.getOrCreate()
        ended: list[str] = []

        def run_long() -> None:
            session = long_jvm.org.apache.spark.sql.classic.SparkSession.getDefaultSession().get()
            context.addJobTag("long-query")
            try:
                session.sql(long_query).collect()
                ended.append("finished")
            except Exception:
                ended.append("cancelled")

        thread = threading.Thread(target=run_long)
        thread.start()
        try:
            tracker = context.statusTracker()
            assert wait_for(lambda: len(list(tracker.getJobIdsForTag("long-query"))) > 0)
            small = pool_of_a_job(small_jvm, "starved-query")  # waits for a core held by the long tasks
            assert ended == [], "the long query ended before the small one: it did not hold the cores"
        finally:
            context.cancelJobsWithTag("long-query")
            thread.join(120)
    assert ended == ["cancelled"]
    assert small["stages"] == second["gateway"]["pool"]
    assert log.read_text().count("stopped to run later") > before, "no core was taken back for the small query"


def test_engine_json_is_the_owners_alone(engine: Engine) -> None:
    info = engine.state_file.stat()
    assert oct(info.st_mode & 0o777) == oct(0o600)
    assert info.st_uid == os.getuid()
    assert engine.token in engine.state_file.read_text()
    # Its folder, and every folder up to the project, is not writable by others (who could swap the file).
    folder = engine.state_file.parent
    while True:
        mode = folder.stat().st_mode
        assert mode & 0o002 == 0, f"{folder} is writable by others ({oct(mode & 0o777)})"
        assert folder.stat().st_uid == os.getuid()
        if folder == engine.root:
            break
        folder = folder.parent


def test_another_user_cannot_read_or_replace_engine_json(engine: Engine) -> None:
    user = nobody()
    path = engine.state_file

    def look() -> dict[str, Any]:
        found: dict[str, Any] = {}
        attempts: dict[str, Callable[[], object]] = {
            "list": lambda: os.listdir(path.parent),
            "stat": path.stat,
            "read": path.read_bytes,
            "append": lambda: path.open("a").close(),
            "create beside": lambda: (path.parent / "planted.json").write_text("{}"),
            "replace": lambda: os.replace(path.parent / "start.json", path),
            "remove": path.unlink,
        }
        for what, attempt in attempts.items():
            try:
                attempt()
                found[what] = "done"
            except OSError as exc:
                found[what] = type(exc).__name__
        return found

    seen = as_user(user, look)
    assert seen.get("uid") == user[0], seen
    # The project's folders let it through (0755); the engine's folder (0700) and the file (0600) stop it.
    assert os.access(path.parent.parent, os.R_OK | os.X_OK)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for what in ("list", "stat", "read", "append", "create beside", "replace", "remove"):
        assert seen[what] == "PermissionError", (what, seen)
    assert engine.status()["pid"] == engine.pid


def test_another_user_is_never_served_by_the_preloaded_process(engine: Engine) -> None:
    user = nobody()
    # The positive control: the owner's order, sent the same way, is served (a pid, its output, its exit code).
    with tempfile.TemporaryFile() as out:
        owner = knock_prefork(engine.prefork_name, engine.root, out.fileno())
        out.seek(0)
        said = out.read().decode()
    assert owner["pid"], owner
    assert owner["code"] == 0, owner
    assert said.startswith("delta-sync "), said
    with tempfile.TemporaryFile() as out:
        other = as_user(user, lambda: knock_prefork(engine.prefork_name, engine.root, out.fileno()))
        out.seek(0)
        said = out.read().decode()
    assert other.get("uid") == user[0], other
    assert other["pid"] is None, f"another user's command was served: {other}"
    assert other["closed"] or not other["connected"], f"the connection was left open: {other}"
    assert said == "", said


def test_another_user_gets_no_lease_and_no_answer_from_the_jvm(engine: Engine) -> None:
    user = nobody()
    known = {"version": engine.state["version"], "settings": engine.state["settings"]}
    with held_lease(engine) as answer:  # a gateway lent to the owner is open meanwhile
        gateway = answer["gateway"]
        jvm_ports = {port for inode, (_a, port) in tcp_listeners().items() if inode in socket_inodes(engine.jvm_pid)}
        # The positive control: the owner, with the secret its lease gave, is answered on the gateway's port.
        assert int(gateway["port"]) in jvm_ports, (gateway["port"], jvm_ports)
        assert py4j_call(int(gateway["port"]), str(gateway["secret"])).startswith("!y")

        def knock() -> dict[str, Any]:
            # It cannot read the token; it knows the ports (anyone may list them) and may guess version and
            # settings, even a secret.
            return {
                "problems": refusals(engine, known),
                "py4j": {port: py4j_call(port, None) for port in sorted(jvm_ports)},
                "guessed": py4j_call(int(gateway["port"]), "0" * len(str(gateway["secret"]))),
            }

        seen = as_user(user, knock)
    assert seen.get("uid") == user[0], seen
    assert seen["problems"] == [], seen
    assert len(seen["py4j"]) == len(jvm_ports)
    print(json.dumps(seen["py4j"]))
    for port, said in [*seen["py4j"].items(), ("guessed", seen["guessed"])]:
        assert not said.startswith("!y"), f"the JVM answered another user on port {port}: {said}"
    assert engine.status()["stopping"] is False


def test_a_plan_run_by_another_user_is_not_served_by_the_owners_engine(engine: Engine) -> None:
    user = nobody()
    from delta_sync.processes import prefork
    from delta_sync.spark.jars import delta_jars

    # What the other user needs to get as far as the engine: Delta's jars and a cache folder it can use.
    own = Path(tempfile.mkdtemp(prefix="delta-sync-nobody-"))
    try:
        extra = {"HOME": str(own), "DELTA_SYNC_CACHE": str(own)}
        if jars := delta_jars().jars:
            (own / "jars").mkdir()
            for jar in jars:
                shutil.copy(jar, own / "jars")
            extra["DELTA_SYNC_JARS"] = str(own / "jars")
        for path in [own, *own.rglob("*")]:
            os.chown(path, *user)
        prefork.preload()  # once it is another user this Python's own files are closed to it: imported now
        served = engine.status()["served"]
        with tempfile.TemporaryFile() as output:

            def plan() -> dict[str, Any]:
                """`delta-sync plan specs` in the owner's project, through the command's entry point (which
                tries the preloaded process first, then runs the command here); its output to `output`."""
                from delta_sync.cli import console, launch
                from delta_sync.spark.engine_identity import engine_version, prefork_address, project_root

                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                os.dup2(output.fileno(), 1)
                os.dup2(output.fileno(), 2)
                sys.stdin = open(0, closefd=False)  # noqa: SIM115
                sys.stdout = open(1, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
                os.chdir(engine.root)
                os.environ.clear()
                os.environ.update(environ(ENGINE, extra))
                sys.argv = ["delta-sync", "plan", "specs"]
                console.fresh_consoles()
                knocked = prefork_address(project_root(Path.cwd()), engine_version())
                forwarded = launch.forward(["plan", "specs"])
                code: object = 0
                try:
                    launch.main()
                except SystemExit as exit_:
                    code = exit_.code
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                return {"knocked": knocked, "forwarded": forwarded, "code": code, "pid": os.getpid()}

            seen = as_user(user, plan)
            output.seek(0)
            said = output.read().decode(errors="replace")
    finally:
        shutil.rmtree(own, ignore_errors=True)
    assert seen.get("uid") == user[0], (seen, said)
    assert seen["knocked"] == engine.prefork_name, "the command knocked elsewhere than at the owner's engine"
    assert seen["forwarded"] is None, f"the preloaded process ran another user's command: {seen}"
    assert seen["code"] not in (0, None), said
    assert "create table owner.a" not in said
    after = engine.status()
    assert after["served"] == served, "the engine served another user's command"
    assert after["stopping"] is False
    assert f"pid {seen['pid']}:" not in (engine.home / "logs" / "engine.log").read_text()
    print(said)


def test_the_token_is_in_no_log_argument_list_environment_or_status(engine: Engine) -> None:
    # A command running in the engine (waiting at its prompt), so that every process of the engine is there, and a
    # lease of the owner's own held meanwhile: its gateway's secret is one more that must not show.
    with waiting_command(engine) as (client, command), held_lease(engine):
        processes = {
            "engine": engine.pid,
            "JVM": engine.jvm_pid,
            "preloaded process": engine.prefork_pid(),
            "client": client.pid,
            "command": command,
        }
        # The scan reads what it should (positive controls).
        assert "delta_sync.processes.daemon" in cmdline(engine.pid)
        assert "java" in cmdline(engine.jvm_pid)
        assert "delta_sync apply specs" in cmdline(client.pid)
        assert f"{MARK}=1" in environment(engine.jvm_pid)
        assert str(engine.port) in (engine.home / "logs" / "engine.log").read_text()
        for name, pid in processes.items():
            line = cmdline(pid)
            for secret in engine.secrets():
                assert secret not in line, f"a secret is in the {name}'s arguments: {line}"
            try:
                env = environment(pid)
            except PermissionError:
                continue
            for secret in engine.secrets():
                assert secret not in env, f"a secret is in the {name}'s environment"
        # Nor in any process's arguments on this machine.
        for path in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                text = path.read_bytes().decode(errors="replace")
                for secret in engine.secrets():
                    assert secret not in text, f"a secret is in the arguments of process {path.parent.name}"
        # `engine status`, text and JSON, while a command runs.
        for shown in (status(engine), status(engine, "--format", "json")):
            assert str(engine.pid) in shown
            assert "delta-sync apply specs" in shown
            for secret in engine.secrets():
                assert secret not in shown, shown
    # The logs, and every file of the project but engine.json itself.
    log = engine.home / "logs" / "engine.log"
    assert f"ready on 127.0.0.1:{engine.port}" in log.read_text()
    files = [p for p in engine.root.rglob("*") if p.is_file() and p != engine.state_file]
    assert log in files
    for path in files:
        data = path.read_bytes()
        for secret in engine.secrets():
            assert secret.encode() not in data, f"a secret is in {path}"


def test_every_listening_socket_is_on_the_loopback(engine: Engine) -> None:
    # A command running (its processes listen too) and a gateway lent to the owner open meanwhile.
    with waiting_command(engine) as (client, command), held_lease(engine) as answer:
        tcp = tcp_listeners()
        unix = unix_listeners()
        processes = {
            "engine": engine.pid,
            "preloaded process": engine.prefork_pid(),
            "JVM": engine.jvm_pid,
            "command": command,
            "client": client.pid,
        }
        listening: dict[str, list[str]] = {}
        tcp_ports: dict[str, set[int]] = {}
        for name, pid in processes.items():
            inodes = socket_inodes(pid)
            listening[name] = [f"unix {unix[inode]}" for inode in inodes & unix.keys()]
            tcp_ports[name] = set()
            for inode in inodes & tcp.keys():
                address, port = tcp[inode]
                listening[name].append(f"{address} port {port}")
                tcp_ports[name].add(port)
                assert loopback(address), f"the {name} (pid {pid}) listens on {address} port {port}"
    # The scan finds what is known to be there: the engine's port, the preloaded process's socket, the lent
    # gateway's port on the JVM.
    assert f"127.0.0.1 port {engine.port}" in listening["engine"], listening
    assert f"unix @{engine.prefork_name[1:]}" in listening["preloaded process"], listening
    assert int(answer["gateway"]["port"]) in tcp_ports["JVM"], listening
    print(json.dumps(listening, indent=1))


def test_a_command_hands_nothing_to_another_users_socket_in_the_engines_place() -> None:
    """The other way round: another user binds the preloaded process's socket name of a project (abstract names
    have no permissions; this one is computed from the project's path, the installation and delta-sync's
    version) before the owner's engine does. The owner's next command there must not hand it its terminal
    or its environment (credentials live there), nor take its word for the command's exit code."""
    user = nobody()
    from delta_sync.spark.engine_identity import engine_version, prefork_address

    secret = os.urandom(16).hex()
    project = Path(tempfile.mkdtemp(prefix="delta-sync-squat-"))
    try:
        project.chmod(0o755)
        (project / "specs").mkdir()
        (project / "specs" / "a.yaml").write_text(SPEC)
        address = prefork_address(project, engine_version())

        def squat() -> dict[str, Any]:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(address)
            listener.listen(1)
            listener.settimeout(60)
            conn, _address = listener.accept()
            conn.settimeout(10)
            header, fds, _flags, _from = socket.recv_fds(conn, 4, 3)
            got: dict[str, Any] = {"connected": True, "fds": len(fds), "env": {}}
            if len(header) == 4:
                (size,) = struct.unpack("!I", header)
                payload = b""
                while len(payload) < size and (more := conn.recv(size - len(payload))):
                    payload += more
                got["env"] = json.loads(payload)["env"]
            if len(fds) == 3:
                os.write(fds[1], b"written by another user\n")
                conn.sendall(struct.pack("!i", os.getpid()) + struct.pack("!i", 0))
            return got

        squatter = Child(user, squat)
        deadline = time.monotonic() + 30
        while "@" + address[1:] not in unix_listeners().values():
            assert time.monotonic() < deadline, "the other user's socket never listened"
            time.sleep(0.05)
        # An offline command (no Spark, no engine needed): forwarded like any other when the socket answers.
        done = subprocess.run(
            [sys.executable, "-m", "delta_sync", "validate", "specs"],
            cwd=project,
            env=environ(ENGINE, {"DELTA_SYNC_OWNER_SECRET": secret}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        seen = squatter.result(timeout=5) or {"connected": False, "fds": 0, "env": {}}
    finally:
        Cli(project, ENGINE).close()
        shutil.rmtree(project, ignore_errors=True)
    assert seen.get("error") is None, seen
    assert "written by another user" not in done.stdout, "another user wrote on the owner's terminal"
    assert seen["fds"] == 0, "the command handed its stdin, stdout and stderr to another user's process"
    assert seen["env"].get("DELTA_SYNC_OWNER_SECRET") != secret, "the command handed its environment to another user"
    assert done.returncode == 0, done.stderr
