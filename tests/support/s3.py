"""A real S3 endpoint on loopback for tests: moto's server (``moto_server``, from PyPI), started as a
process, spoken to over HTTP by boto3 and django-storages exactly as a production S3 would be."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Endpoint:
    url: str

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def storage_setting(self, bucket: str) -> dict[str, Any]:
        """``STORAGES["agui_files"]`` for a bucket of this endpoint (what ``AGUI_FILES_STORAGE=s3`` makes)."""
        return {
            "BACKEND": "agui_app.file_storage.S3FileStorage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": self.url,
                "region_name": REGION,
                "access_key": ACCESS_KEY,
                "secret_key": SECRET_KEY,
                "default_acl": None,
                "file_overwrite": False,
            },
        }

    def keys(self, bucket: str) -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket)
        return [item["Key"] for item in listed.get("Contents", [])]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server(log_dir: Path) -> Iterator[S3Endpoint]:
    port = free_port()
    binary = Path(sys.executable).with_name("moto_server")
    log = (log_dir / "moto.log").open("wb")
    process = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start (see {log_dir / 'moto.log'})") from None
                time.sleep(0.1)
        yield S3Endpoint(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
