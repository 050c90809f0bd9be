"""A real S3-compatible server on 127.0.0.1 for the tests: moto's S3 backend, in server mode.

The server runs moto's WSGI application under werkzeug's threaded HTTP server on a free port, in a
daemon thread of the test process, behind :class:`RequestLog`, a WSGI middleware that records every
request (method, bucket, key, bytes in and out). Clients talk real HTTP to it: pyarrow's S3 file
system (what pypaimon uses for ``s3://``), boto3, Spark's Python workers, other processes.

    server = S3Server.start()                  # raises ServerUnavailable when moto is missing
    bucket = server.new_bucket()               # a fresh, empty bucket
    options = server.catalog_options()         # fs.s3.endpoint / keys / region / path-style
    with server.log.counting(bucket) as calls: # requests and bytes of one bucket in a block
        ...
    calls.requests, calls.by_method, calls.bytes_in, calls.bytes_out

Importable without moto: the fixtures in ``conftest.py`` skip cleanly when it cannot start.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"
HOST = "127.0.0.1"


class ServerUnavailable(RuntimeError):
    """moto (or werkzeug) is missing, or the server could not start."""


@dataclass(frozen=True)
class Request:
    method: str
    bucket: str
    key: str
    query: str
    bytes_in: int
    bytes_out: int
    status: int


@dataclass
class Calls:
    """The requests of one bucket recorded while a :meth:`RequestLog.counting` block ran."""

    bucket: str
    items: list[Request] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.items)

    @property
    def by_method(self) -> Counter[str]:
        return Counter(r.method for r in self.items)

    @property
    def bytes_in(self) -> int:
        """Bytes clients sent (PUT bodies)."""
        return sum(r.bytes_in for r in self.items)

    @property
    def bytes_out(self) -> int:
        """Bytes the server answered with (GET bodies, listings)."""
        return sum(r.bytes_out for r in self.items)

    def keys(self, method: str | None = None) -> list[str]:
        return [r.key for r in self.items if method is None or r.method == method]


#: How long :meth:`RequestLog.since` waits for requests still being recorded.
SETTLE_SECONDS = 10.0


class RequestLog:
    """WSGI middleware: every request to the wrapped application, in arrival order (thread-safe)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Condition()
        self._requests: list[Request] = []
        #: Requests begun and not yet recorded: a client can have a whole response before the
        #: server thread comes back to record it.
        self._in_flight = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        path = unquote(environ.get("PATH_INFO", ""))
        bucket, _, key = path.lstrip("/").partition("/")  # path-style addressing only
        bytes_in = int(environ.get("CONTENT_LENGTH") or 0)
        status: list[int] = [0]
        with self._lock:
            self._in_flight += 1

        def record_status(code: str, headers: list[Any], *exc: Any) -> Any:
            status[0] = int(code.split(" ", 1)[0])
            return start_response(code, headers, *exc)

        bytes_out = 0
        try:
            for chunk in self._app(environ, record_status):
                bytes_out += len(chunk)
                yield chunk
        finally:
            with self._lock:
                self._requests.append(Request(environ.get("REQUEST_METHOD", "?"), bucket, key,
                                              environ.get("QUERY_STRING", ""), bytes_in, bytes_out,
                                              status[0]))
                self._in_flight -= 1
                self._lock.notify_all()

    def mark(self) -> int:
        with self._lock:
            return len(self._requests)

    def since(self, mark: int, bucket: str | None = None) -> list[Request]:
        """The requests recorded after ``mark``, once every request in flight is recorded."""
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=SETTLE_SECONDS)
            items = self._requests[mark:]
        return [r for r in items if bucket is None or r.bucket == bucket]

    @contextmanager
    def counting(self, bucket: str) -> Iterator[Calls]:
        """The requests to ``bucket`` made inside the block (filled in when it ends)."""
        calls = Calls(bucket)
        start = self.mark()
        try:
            yield calls
        finally:
            calls.items = self.since(start, bucket)


class S3Server:
    """A running moto S3 server; :meth:`stop` shuts it down."""

    _names = itertools.count()

    def __init__(self, server: Any, thread: threading.Thread, log: RequestLog) -> None:
        self._server = server
        self._thread = thread
        self.log = log
        self.port = int(server.server_address[1])
        self.endpoint = f"http://{HOST}:{self.port}"

    @classmethod
    def start(cls) -> S3Server:
        """Start a server on a free port of 127.0.0.1."""
        try:
            from moto.moto_server.werkzeug_app import (
                DomainDispatcherApplication,
                MotoRequestHandler,
                create_backend_app,
            )
            from werkzeug.serving import make_server
        except ImportError as e:
            raise ServerUnavailable(f"moto[server] is not installed ({e})") from e
        class QuietHandler(MotoRequestHandler):
            def log_request(self, *args: Any, **kwargs: Any) -> None:  # the RequestLog records them
                pass

        log = RequestLog(DomainDispatcherApplication(create_backend_app))
        try:
            server = make_server(HOST, 0, log, threaded=True, request_handler=QuietHandler)
        except OSError as e:
            raise ServerUnavailable(f"cannot listen on {HOST}: {e}") from e
        thread = threading.Thread(target=server.serve_forever, name="moto-s3", daemon=True)
        thread.start()
        return cls(server, thread, log)

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)

    def catalog_options(self) -> dict[str, str]:
        """The catalog options (pypaimon's spellings) reaching this server."""
        return {"fs.s3.endpoint": self.endpoint, "fs.s3.accessKeyId": ACCESS_KEY,
                "fs.s3.accessKeySecret": SECRET_KEY, "fs.s3.region": REGION,
                "fs.s3.path-style-access": "true"}

    def client(self) -> Any:
        """A boto3 S3 client on this server (for the tests' own checks)."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def new_bucket(self, prefix: str = "t") -> str:
        """Create a fresh, empty bucket and return its name."""
        name = f"{prefix}-{next(self._names)}-{uuid.uuid4().hex[:8]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key of ``bucket`` under ``prefix`` (not counted: the log skips nothing, so
        call it outside a counting block)."""
        client = self.client()
        keys: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [item["Key"] for item in page.get("Contents", ())]
        return sorted(keys)
