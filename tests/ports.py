"""Ports for servers the tests start (Spark Connect, a standalone master): pick one, wait for it.

Waiting for a server must not *connect* to its port. Between :func:`free_port` releasing a port and
the server binding it, the kernel may hand the same port to another program of the test run -- the
classic Spark session of the other pytest worker opens a one-shot socket server on an ephemeral port
for every ``collect()``. A probe that connects to it is taken for the Python side of that
``collect()``: the JVM reads no secret and closes the server, and the real client's connection is
refused (PySpark then reports ``UnboundLocalError: ... 'sockfile'``, its own clean-up failing). This
failed a CI run. :func:`listening` reads the kernel's socket table instead and asks whether the
listening socket on the port belongs to the server's own processes.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

#: ``st`` of a listening TCP socket in ``/proc/net/tcp`` (include/net/tcp_states.h: TCP_LISTEN).
_TCP_LISTEN = "0A"
_PROC = Path("/proc")


def free_port() -> int:
    """A port of 127.0.0.1 no socket holds now (another may take it before the caller binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int, group: int) -> bool:
    """Whether a process of process group ``group`` listens on TCP ``port`` (never connects to it).

    Where the kernel's tables cannot be read (no ``/proc``: not Linux), falls back to a connecting
    probe, with the risk the module docstring describes.
    """
    table = _PROC / "net" / "tcp"
    if not table.exists():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    inodes = _listening_inodes(port)
    return bool(inodes) and any(inodes & _socket_inodes(pid) for pid in _group_members(group))


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            # sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            fields = line.split()
            if len(fields) > 9 and fields[3] == _TCP_LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _group_members(group: int) -> list[int]:
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, split after it.
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) == group:
            members.append(int(entry.name))
    return members


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        fds = list((_PROC / str(pid) / "fd").iterdir())
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes
