"""``python -m bench.files [--storage local|s3] [--size-mib 16] [--count 5] [--database-url URL]``

Uploads a ``--size-mib`` file ``--count`` times to ``POST /api/v1/files`` of one real Uvicorn process
(a fresh database, ``seed_demo``'s key), then reads each back from ``…/content``, and prints ONE JSON
document: upload and download MiB/s (median over the uploads), and the server's peak resident memory
before and after (``VmHWM``: an upload that buffered the whole file would raise it by the file's size).
``--storage s3`` stores into a bucket of moto's S3 server started on loopback for the run
(django-storages' S3 backend, boto3 over HTTP). No timing assertion anywhere: figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.servers import API_KEY, choose_database_url, free_port, fresh_database, log, prepare, start_server

MiB = 1024 * 1024


def peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def start_moto(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    binary = Path(sys.executable).with_name("moto_server")
    log_file = (workdir / "moto.log").open("wb")
    process = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)], stdout=log_file, stderr=log_file
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url, timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    return process, url


def body_of(size: int) -> tuple[bytes, str]:
    boundary = f"bench{uuid.uuid4().hex}"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    data = (b"0123456789abcdef" * (size // 16 + 1))[:size]
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def measure(base: str, size: int, count: int, pid: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    body, content_type = body_of(size)
    ups: list[float] = []
    downs: list[float] = []
    before = peak_rss_mib(pid)
    with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
        for _ in range(count):
            started = time.perf_counter()
            response = client.post("/api/v1/files", content=body, headers={"Content-Type": content_type})
            ups.append(time.perf_counter() - started)
            response.raise_for_status()
            file_id = response.json()["id"]
            started = time.perf_counter()
            got = 0
            with client.stream("GET", f"/api/v1/files/{file_id}/content") as streamed:
                for chunk in streamed.iter_bytes():
                    got += len(chunk)
            downs.append(time.perf_counter() - started)
            assert got == size, (got, size)
    mib = size / MiB
    return {
        "file_mib": round(mib, 2),
        "uploads": count,
        "upload_mib_per_s_p50": round(mib / statistics.median(ups), 1),
        "download_mib_per_s_p50": round(mib / statistics.median(downs), 1),
        "upload_s": [round(x, 3) for x in ups],
        "server_peak_rss_mib_before": before,
        "server_peak_rss_mib_after": peak_rss_mib(pid),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", choices=["local", "s3"], default="local")
    parser.add_argument("--size-mib", type=float, default=16)
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    size = int(args.size_mib * MiB)
    url, _ = choose_database_url(args.database_url)
    moto = None
    with fresh_database(url) as db:
        os.environ["AGUI_FILES_ROOT"] = str(db.workdir / "files")
        os.environ["AGUI_FILE_QUOTA_BYTES"] = str(10 * 1024 * MiB)
        os.environ["AGUI_FILE_MAX_BYTES"] = str(max(size, 20 * MiB))
        if args.storage == "s3":
            moto, endpoint = start_moto(db.workdir)
            os.environ.update(
                {
                    "AGUI_FILES_STORAGE": "s3",
                    "AGUI_FILES_S3_ENDPOINT_URL": endpoint,
                    "AGUI_FILES_S3_BUCKET": "bench-files",
                    "AGUI_FILES_S3_REGION": "us-east-1",
                    "AWS_ACCESS_KEY_ID": "bench",
                    "AWS_SECRET_ACCESS_KEY": "bench",
                }
            )
            import boto3

            boto3.client(
                "s3",
                endpoint_url=endpoint,
                aws_access_key_id="bench",
                aws_secret_access_key="bench",
                region_name="us-east-1",
            ).create_bucket(Bucket="bench-files")
        prepare(db)
        server = start_server("uvicorn", db)
        try:
            log(f"uploading {args.count} x {args.size_mib} MiB ({args.storage})")
            result = measure(f"http://127.0.0.1:{server.port}", size, args.count, server.pid)
        finally:
            server.stop()
            if moto is not None:
                moto.terminate()
                moto.wait(10)
    print(json.dumps({"storage": args.storage, "database": db.backend, **result}, indent=2))


if __name__ == "__main__":
    main()
