"""Which Python object-store client reads 1,000 Delta logs on S3 fastest (issue 46, point 5): obstore against
fsspec's s3fs, with boto3 one request at a time as the baseline, side by side in one run, taking turns.

python bench/object_store_clients.py --tables 1000 --reps 3 [--s3fs-python /tmp/s3fs-venv/bin/python]
    [--out bench/results_object_store_clients.json]

Each table is a `_delta_log` of two commits with their checksum files, as Delta writes them, on moto's S3 server
behind a counting proxy (tests/servers/s3_proxy.py), once as moto answers and once with 20 ms added to every
request, as real S3 answers. Each client, in a fresh process, does what the fast reader does: per table one
listing of `_delta_log/` and one GET of the latest checksum file (cold), then one listing per table again on the
same client (warm: an unchanged table). Times are measured inside the client process from the client's creation
(imports excluded); requests are counted at the proxy. s3fs pins an older botocore than boto3 wants (the moto
server's), so it runs from a venv of its own (`--s3fs-python`); without one it is left out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "lake"
KEY, SECRET = "bench-access", "bench-secret"
REGION = "us-east-1"
IN_FLIGHT = 64


def log_prefix(table: int) -> str:
    return f"warehouse/bench.db/t{table:04d}/_delta_log/"


def latest_checksum(names: list[str]) -> str | None:
    commits = sorted(n for n in names if n.endswith(".json") and n.rsplit("/", 1)[-1][:20].isdigit())
    return commits[-1][: -len(".json")] + ".crc" if commits else None


# The clients: each returns (cold seconds, warm seconds), run in a process of its own.


def run_obstore(endpoint: str, tables: int) -> tuple[float, float]:
    import obstore
    from obstore.store import S3Store

    async def reads(store: Any, cold: bool) -> None:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one(table: int) -> None:
            async with gate:
                names = [
                    m["path"] async for chunk in obstore.list(store, log_prefix(table), chunk_size=1000) for m in chunk
                ]
                crc = latest_checksum(names)
                if cold and crc is not None:
                    await (await obstore.get_async(store, crc)).bytes_async()

        await asyncio.gather(*(one(t) for t in range(tables)))

    started = time.perf_counter()
    store = S3Store(
        BUCKET,
        endpoint=endpoint,
        region=REGION,
        access_key_id=KEY,
        secret_access_key=SECRET,
        client_options={"allow_http": True},
    )
    asyncio.run(reads(store, True))
    cold = time.perf_counter() - started
    started = time.perf_counter()
    asyncio.run(reads(store, False))
    warm = time.perf_counter() - started
    settle()
    return cold, warm


def settle() -> None:
    """obstore's last result reaches asyncio from a tokio thread that must take the GIL once more after waking the
    loop; at exit, Python 3.11 ends such a thread, which aborts the process (delta_sync/spark/remote_log.py)."""
    time.sleep(0.05)


def run_s3fs(endpoint: str, tables: int) -> tuple[float, float]:
    import s3fs  # type: ignore[import-not-found]

    async def reads(fs: Any, cold: bool) -> None:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one(table: int) -> None:
            async with gate:
                found = await fs._ls(f"{BUCKET}/{log_prefix(table)}", detail=False, refresh=True)
                crc = latest_checksum([str(n) for n in found])
                if cold and crc is not None:
                    await fs._cat_file(crc)

        await asyncio.gather(*(one(t) for t in range(tables)))

    async def both() -> tuple[float, float]:
        started = time.perf_counter()
        fs = s3fs.S3FileSystem(
            key=KEY,
            secret=SECRET,
            endpoint_url=endpoint,
            asynchronous=True,
            skip_instance_cache=True,
            use_listings_cache=False,
            client_kwargs={"region_name": REGION},
            config_kwargs={"s3": {"addressing_style": "path"}, "max_pool_connections": IN_FLIGHT},
        )
        session = await fs.set_session()
        await reads(fs, True)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        await reads(fs, False)
        warm = time.perf_counter() - started
        await session.close()
        return cold, warm

    return asyncio.run(both())


def run_boto3(endpoint: str, tables: int) -> tuple[float, float]:
    import boto3

    def reads(client: Any, cold: bool) -> None:
        for table in range(tables):
            listed = client.list_objects_v2(Bucket=BUCKET, Prefix=log_prefix(table))
            crc = latest_checksum([o["Key"] for o in listed.get("Contents", [])])
            if cold and crc is not None:
                client.get_object(Bucket=BUCKET, Key=crc)["Body"].read()

    started = time.perf_counter()
    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )
    reads(client, True)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    reads(client, False)
    return cold, time.perf_counter() - started


CLIENTS = {"obstore": run_obstore, "s3fs": run_s3fs, "boto3": run_boto3}


# The orchestrator.


def fill(endpoint: str, tables: int) -> None:
    """`tables` logs of two commits and their checksum files (commit and checksum sizes as Delta writes them), in the
    server's bucket."""
    import boto3

    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )
    crc = json.dumps({"tableSizeBytes": 0, "numFiles": 0, "metadata": {"schemaString": "x" * 1200}}).encode()
    commit = json.dumps({"commitInfo": {"operation": "CREATE TABLE", "x": "y" * 900}}).encode()

    def one(table: int) -> None:
        for version in range(2):
            client.put_object(Bucket=BUCKET, Key=f"{log_prefix(table)}{version:020d}.json", Body=commit)
            client.put_object(Bucket=BUCKET, Key=f"{log_prefix(table)}{version:020d}.crc", Body=crc)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(tables)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--delays", default="0,0.02")
    parser.add_argument("--s3fs-python", default="")
    parser.add_argument("--clients", default="obstore,boto3,s3fs", help="the clients measured")
    parser.add_argument("--out", default="")
    parser.add_argument("--client", default="", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:  # one client's run, in its own process
        print(json.dumps(CLIENTS[args.client](args.endpoint, args.tables)))
        return

    sys.path.insert(0, str(ROOT))
    from tests.servers.s3 import s3_server
    from tests.servers.s3_proxy import counting_proxy

    pythons = {"obstore": sys.executable, "boto3": sys.executable}
    if args.s3fs_python:
        pythons["s3fs"] = args.s3fs_python
    pythons = {client: python for client, python in pythons.items() if client in args.clients.split(",")}
    results: dict[str, Any] = {
        "args": vars(args),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-s3-clients-") as work, s3_server(Path(work)) as s3:
        fill(s3.endpoint, args.tables)
        for delay in [float(d) for d in args.delays.split(",")]:
            with counting_proxy(s3.endpoint, delay) as proxy:
                for rep in range(args.reps):
                    for client, python in pythons.items():
                        if client == "boto3" and delay and rep:
                            continue  # one at a time through the delay: one repetition says enough
                        proxy.reset()
                        done = subprocess.run(
                            [
                                python,
                                __file__,
                                "--client",
                                client,
                                "--endpoint",
                                proxy.url,
                                "--tables",
                                str(args.tables),
                            ],
                            capture_output=True,
                            text=True,
                            check=True,
                            cwd=ROOT,
                        )
                        cold, warm = json.loads(done.stdout.strip().splitlines()[-1])
                        counts = proxy.snapshot()
                        run = {
                            "delay": delay,
                            "rep": rep,
                            "client": client,
                            "cold_s": cold,
                            "warm_s": warm,
                            "requests": counts,
                            "per_table": sum(counts.values()) / args.tables,
                        }
                        results["runs"].append(run)
                        print(json.dumps(run), flush=True)
    results["machine"]["load_end"] = os.getloadavg()
    summary: dict[str, dict[str, list[float]]] = {}
    for run in results["runs"]:
        side = summary.setdefault(f"{run['client']} @{run['delay'] * 1000:.0f}ms", {"cold": [], "warm": []})
        side["cold"].append(run["cold_s"])
        side["warm"].append(run["warm_s"])
    results["medians"] = {k: {p: statistics.median(v[p]) for p in v} for k, v in summary.items()}
    for key, value in results["medians"].items():
        print(f"{key:20} cold {value['cold']:7.2f} s  warm {value['warm']:7.2f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
