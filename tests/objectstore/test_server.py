"""The test server itself: real HTTP, counted per bucket, conditional create as AWS S3 has it."""

from __future__ import annotations

import pytest

from objectstore.conftest import S3Warehouse


def test_requests_are_counted_per_bucket(s3: S3Warehouse) -> None:
    client = s3.server.client()
    other = s3.server.new_bucket()
    with s3.server.log.counting(s3.bucket) as calls:
        client.put_object(Bucket=s3.bucket, Key="a/b", Body=b"12345")
        client.put_object(Bucket=other, Key="x", Body=b"1")
        assert client.get_object(Bucket=s3.bucket, Key="a/b")["Body"].read() == b"12345"
    assert calls.by_method == {"PUT": 1, "GET": 1}
    assert calls.bytes_in == 5 and calls.bytes_out == 5
    assert calls.keys("PUT") == ["a/b"]


def test_put_if_none_match_refuses_an_existing_key(s3: S3Warehouse) -> None:
    from botocore.exceptions import ClientError

    client = s3.server.client()
    client.put_object(Bucket=s3.bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=s3.bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert client.get_object(Bucket=s3.bucket, Key="k")["Body"].read() == b"first"
