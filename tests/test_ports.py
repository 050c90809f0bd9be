"""The tests' wait for a server's port (tests/ports.py) must never connect to the port.

A connecting probe once landed on the one-shot socket server a classic Spark session opens for a
``collect()`` on the other pytest worker (the port had just been released by ``free_port``), and that
``collect()`` failed in CI.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from ports import free_port, listening

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc")


def _pending_connection(server: socket.socket) -> bool:
    server.setblocking(False)
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_a_port_this_process_group_listens_on_is_found_without_a_connection() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert listening(port, os.getpgid(0))
        assert not _pending_connection(server), "the wait connected to the server"


def test_a_port_another_program_took_is_not_the_servers() -> None:
    # The race of the module docstring: the port handed to the server is held by someone else.
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                 start_new_session=True)
        try:
            assert not listening(port, child.pid)
            assert not _pending_connection(other)
        finally:
            child.kill()
            child.wait()


def test_a_server_in_a_child_process_group_is_found_once_it_listens() -> None:
    port = free_port()
    script = ("import socket, time\n"
              f"s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(1); time.sleep(30)\n")
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not listening(port, child.pid):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert listening(port, child.pid)
        assert not listening(free_port(), child.pid)
    finally:
        child.kill()
        child.wait()
