"""What names a warm engine, cheap to import: every command's entry point (`delta_sync.cli.launch`) asks it
before anything else. delta-sync's version with a fingerprint of this folder's code, the key of the settings an
engine was started with, the project's root without the project module's imports, and the address of the
engine's preloaded process for a project.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from delta_sync.version import __version__

_JVM_ENV = ("JAVA_", "SPARK_", "HADOOP_", "YARN_", "HIVE_", "AWS_", "AZURE_", "GOOGLE_", "KRB5")
PROJECT_FILE = "delta-sync.yaml"  # project.PROJECT_FILE, not imported: that module is heavy


def engine_version() -> str:
    """delta-sync's version, and a fingerprint of the code on both ends of the engine's socket, so that an
    engine from another install (or an edited checkout) is replaced rather than spoken to."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        info = path.stat()
        digest.update(f"{path.name}:{info.st_size}:{info.st_mtime_ns};".encode())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def settings_key(master: str, conf: Mapping[str, str], idle: float, environ: Mapping[str, str] = os.environ) -> str:
    """What the engine was started with: another value means another engine."""
    started_with = {
        "master": master,
        "conf": sorted(conf.items()),
        "idle": idle,
        "python": sys.prefix,
        # What the JVM reads from its environment: credentials, Hadoop's and Spark's configuration, Java.
        "env": sorted((k, v) for k, v in environ.items() if k.startswith(_JVM_ENV) or k == "PYSPARK_PYTHON"),
    }
    return hashlib.sha256(json.dumps(started_with, sort_keys=True).encode()).hexdigest()[:16]


def project_root(start: Path) -> Path:
    """api.project_root, without its imports: the nearest folder holding delta-sync.yaml or .delta-sync/,
    else the working directory."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file() or (folder / ".delta-sync").is_dir():
            return folder
    return here


def prefork_address(root: Path, version: str) -> str:
    """The preloaded process's socket: in Linux's abstract namespace (no path length limit, nothing left on
    disk), named by project, installation and code version; only our own user is served (SO_PEERCRED)."""
    key = hashlib.sha256(f"{root.resolve()}\0{sys.prefix}\0{version}".encode()).hexdigest()[:32]
    return f"\0delta-sync-{key}"
