"""Fixtures of the object-store tests: one moto S3 server per test run, a fresh bucket per test.

Skips (never fails) when the server cannot start. Other test packages (the Spark pipeline on S3)
reuse them with ``from objectstore.conftest import s3_server, s3_bucket  # noqa: F401`` or by
importing :mod:`objectstore.server` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from objectstore.server import S3Server, ServerUnavailable


@dataclass(frozen=True)
class S3Warehouse:
    """A bucket on the test server and how to reach it."""

    server: S3Server
    bucket: str

    @property
    def warehouse(self) -> str:
        return f"s3://{self.bucket}/wh"

    @property
    def catalog_options(self) -> dict[str, str]:
        return self.server.catalog_options()

    def objects(self, prefix: str = "") -> list[str]:
        return self.server.keys(self.bucket, prefix)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    try:
        import boto3  # noqa: F401  (the fixtures create buckets with it)

        server = S3Server.start()
    except (ImportError, ServerUnavailable) as e:
        pytest.skip(f"no S3-compatible test server: {e}")
    yield server
    server.stop()


@pytest.fixture()
def s3(s3_server: S3Server) -> S3Warehouse:
    """A fresh bucket; the warehouse is ``s3://<bucket>/wh``."""
    return S3Warehouse(s3_server, s3_server.new_bucket())
