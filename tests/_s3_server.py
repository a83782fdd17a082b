"""A loopback S3-compatible server (moto in server mode) holding a tree of runs."""

from __future__ import annotations

import contextlib
import urllib.request
from pathlib import Path

import pytest

BUCKET = "tp-runs"


@contextlib.contextmanager
def s3_server(tree: Path | None = None, prefix: str = "tree"):
    """A moto S3 server on loopback holding ``tree`` under ``s3://BUCKET/prefix/``, with
    the AWS environment pointed at it (dummy credentials) for the length of the block."""
    pytest.importorskip("s3fs")
    pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    import boto3
    import s3fs

    srv = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
            mp.delenv(k, raising=False)
        s3fs.S3FileSystem.clear_instance_cache()  # an instance cached for another endpoint
        # moto keeps its buckets in this process, across servers: start from none.
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10)
        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket=BUCKET)
        if tree is not None:
            for p in sorted(tree.rglob("*")):
                if p.is_file():
                    client.upload_file(str(p), BUCKET, f"{prefix}/{p.relative_to(tree).as_posix()}")
        try:
            yield client, env
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            srv.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
