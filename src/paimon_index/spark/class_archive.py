"""A class-data-sharing archive of the local Spark driver's classes: later fresh processes start
their driver JVM in about half the time and answer their first query sooner.

A local Spark driver loads some 18,000 classes before its first answer, and its first large query
thousands more; the JVM parses and verifies each one. Java (13+) can save the classes a JVM loaded
into an archive when it exits (``-XX:ArchiveClassesAtExit``) and map them at the next start
(``-XX:SharedArchiveFile``). Measured here (2 cores): a plain PySpark session and its first tiny
job 10-11 s -> 5-6 s.

Lifecycle, per (Java build, Spark jars, class path settings) -- the archive's *key*::

    no archive    the session starts without one and spawns a *trainer* (one per key at a time: a
                  ``<archive>.training`` lock): a detached process at the lowest priority
                  (:mod:`paimon_index.spark.archive_training`) whose own session records
                  (this switch set to ``record``) while it runs a small workload of what users run
                  -- SQL DDL and DML, planned reads with deletion vectors, joins, aggregates, a
                  TopN, the Python source -- so the archive holds the classes of real queries,
                  not only those of whichever program happened to start first. Its JVM writes
                  <key>.<pid>.tmp as it exits; a detached process of this file waits for that
                  exit, checks the file maps (``java -cp <the driver's class path>
                  -XX:SharedArchiveFile=<tmp> -Xshare:on -version``: a JVM fails to start with a
                  truncated archive, or crashes) and renames it into place. Only a complete,
                  checked archive ever has the final name; a JVM killed mid-dump leaves a .tmp,
                  removed by a later recording.
    archive       ``-XX:SharedArchiveFile``; the JVM itself checks that every jar on the class path
                  is the one recorded (size and time) and ignores an archive that is not, as it
                  ignores a file that is not an archive at all.

Nobody's program pays for the recording (a recording JVM starts slower, ~15 s instead of ~10 here,
and dumps for ~12 s at exit): the trainer does, on cycles the user's programs leave idle. A
trainer that fails leaves its lock; another is tried an hour later. A JVM that cannot start with
an archive (a damaged file) makes :func:`~paimon_index.spark.session.local_session` drop it and
start without.

Archives live in ``$PAIMON_INDEX_CACHE_DIR``, else ``$XDG_CACHE_HOME/paimon-index``, else
``~/.cache/paimon-index`` (~150-200 MB each), a directory that must be the user's and writable by
no one else (an archive is code the JVM maps); ``PAIMON_INDEX_CLASS_ARCHIVE=off`` turns this off,
and so does a driver option of the caller's own that chooses sharing (``-Xshare``, an archive).
Every mapping touches the archive; publishing one removes those no driver mapped for 30 days (an
upgraded Java or Spark leaves its old archive unused for good). POSIX only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ARCHIVE_SWITCH", "CLASS_PATH_SETTINGS", "DRIVER_JAVA_OPTIONS", "NO_ARCHIVE", "RECORD",
           "DriverArchive", "Recording", "archive_dir", "discard", "driver_options", "publish",
           "remove_unused", "train", "watch"]

#: Environment switch: ``off`` (or ``0``/``false``/``no``) starts every driver without an archive;
#: ``record`` (the trainer's) makes a driver with no archive yet record one.
ARCHIVE_SWITCH = "PAIMON_INDEX_CLASS_ARCHIVE"
RECORD = "record"
CACHE_DIR_VARIABLE = "PAIMON_INDEX_CACHE_DIR"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
#: Settings that change the driver's class path, so the archive's key.
CLASS_PATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
#: Java options of the caller's that already decide class sharing: left alone.
SHARING_OPTIONS = ("-Xshare", "-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit")
#: The JVM's CDS log lines (every skipped class of a dump, a mismatch note) are warnings on stdout.
QUIET = "-Xlog:cds*=off"
PREFIX = "spark-driver-"
SUFFIX = ".jsa"
#: How long a recording JVM may take to exit once its Python driver is gone (its dump: ~12 s here).
DUMP_WAIT_SECONDS = 300.0
POLL_SECONDS = 0.5
#: The cache directory's mode when this module creates it (the user's alone).
PRIVATE_MODE = 0o700
#: A .tmp whose owner process is gone and is this old is a killed recording's leftover.
STALE_SECONDS = 600.0
#: A trainer's lock (``<archive>.training``) holds this long: the trainer's session, its workload
#: and the dump take ~2 minutes here; a trainer that failed is retried after it.
TRAINING_LOCK_SECONDS = 3600.0
TRAINING_SUFFIX = ".training"
#: An archive no driver mapped for this long is removed when another is published (a mapping
#: touches it): an upgraded Java or Spark leaves the old one unused for good.
UNUSED_SECONDS = 30 * 24 * 3600.0
#: The trainer's program (spawned by module name: this low module imports none of the layers it uses).
TRAINER_MODULE = "paimon_index.spark.archive_training"
#: The trainer's priority: the lowest, so it runs on the cycles the user's programs leave idle.
TRAINER_NICENESS = 19


@dataclass(frozen=True)
class Recording:
    """A session whose JVM writes ``tmp`` at exit, to become ``final`` (:func:`publish`)."""

    tmp: Path
    final: Path
    java: str
    #: The recording JVM's ``java.class.path``: the archive maps only with it (the probe's).
    class_path: str = ""


def archive_dir() -> Path:
    explicit = os.environ.get(CACHE_DIR_VARIABLE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "paimon-index"


def _switch() -> str:
    return os.environ.get(ARCHIVE_SWITCH, "on").strip().lower()


def _enabled() -> bool:
    # POSIX only: the watcher polls the JVM with os.kill(pid, 0), which on Windows ends the process.
    return os.name == "posix" and _switch() not in ("off", "0", "false", "no")


def _private(directory: Path) -> bool:
    """Whether ``directory`` is this user's and nobody else can write into it: an archive is code
    the JVM maps, so one that another user could replace is never used (nor recorded there)."""
    try:
        directory.mkdir(mode=PRIVATE_MODE, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError:
        return False
    return (info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            and os.access(directory, os.W_OK | os.X_OK))


def _spark_jars() -> Path | None:
    try:  # where spark-submit takes its jars from (SPARK_HOME, else pyspark's own)
        from pyspark.find_spark_home import _find_spark_home

        jars = Path(_find_spark_home()) / "jars"
    except (Exception, SystemExit):  # pyspark's helper exits when it finds no Spark
        return None
    return jars if jars.is_dir() else None


def _key(java: str, java_version_text: str, jars: Path, conf: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for part in (os.path.realpath(java), java_version_text, str(jars.resolve())):
        digest.update(part.encode() + b"\0")
    for jar in sorted(jars.iterdir()):
        info = jar.stat()
        digest.update(f"{jar.name}:{info.st_size}:{info.st_mtime_ns}\0".encode())
    for setting in CLASS_PATH_SETTINGS:
        digest.update(f"{setting}={conf.get(setting, '')}\0".encode())
    return digest.hexdigest()[:20]


@dataclass(frozen=True)
class DriverArchive:
    """What :func:`driver_options` chose: the settings to start the driver with, the archive they map
    (``mapped``), the recording they start (``recording``, a trainer's session), or the archive
    that does not exist yet and that :func:`train` should have a trainer record (``missing``)."""

    options: Mapping[str, str]
    mapped: Path | None = None
    recording: Recording | None = None
    missing: Path | None = None


NO_ARCHIVE = DriverArchive({})


def driver_options(java: str, java_version_text: str, conf: Mapping[str, str]) -> DriverArchive:
    """The driver Java options that map (or record) this machine's archive, merged into ``conf``'s
    own ``spark.driver.extraJavaOptions``; :data:`NO_ARCHIVE` when off, or when the caller's options
    choose sharing themselves."""
    own = conf.get(DRIVER_JAVA_OPTIONS, "")
    if not _enabled() or any(option in own for option in SHARING_OPTIONS):
        return NO_ARCHIVE
    jars = _spark_jars()
    directory = archive_dir()
    # Spark splits the options on spaces: a path with one would break them. "~": no home directory.
    if jars is None or any(c.isspace() or c in "\"'~" for c in str(directory)) or not _private(directory):
        return NO_ARCHIVE
    try:
        final = directory / f"{PREFIX}{_key(java, java_version_text, jars, conf)}{SUFFIX}"
    except OSError:
        return NO_ARCHIVE  # the jars cannot be listed: start as Spark would
    if final.is_file():
        if final.stat().st_uid != os.getuid():
            return NO_ARCHIVE
        with contextlib.suppress(OSError):  # its last use: archives unused for long are removed
            os.utime(final)
        return DriverArchive(_merged(own, f"-XX:SharedArchiveFile={final}"), mapped=final)
    _remove_leftovers(directory)
    if _switch() != RECORD:
        return DriverArchive({}, missing=final)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    return DriverArchive(_merged(own, f"-XX:ArchiveClassesAtExit={tmp}"),
                         recording=Recording(tmp, final, java))


def train(missing: Path, conf: Mapping[str, str]) -> int | None:
    """Spawn a detached trainer that records ``missing`` (see the module docstring) with ``conf``'s
    class path settings; its pid, or None when another trainer holds the key's lock."""
    lock = missing.with_name(missing.name + TRAINING_SUFFIX)
    if not _lock(lock):
        return None
    package_root = str(Path(__file__).resolve().parents[2])  # for a caller that found it by sys.path
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, ARCHIVE_SWITCH: RECORD, "PYTHONPATH": path}
    settings = {key: conf[key] for key in CLASS_PATH_SETTINGS if conf.get(key)}
    pid = _spawn_detached(["-m", TRAINER_MODULE, json.dumps(settings)], env)
    with contextlib.suppress(OSError):  # the trainer lowers itself too; this covers its first steps
        os.setpriority(os.PRIO_PROCESS, pid, TRAINER_NICENESS)
    return pid


def _spawn_detached(arguments: list[str], env: Mapping[str, str]) -> int:
    """This Python run with ``arguments``, detached: posix_spawn, not Popen (it outlives this
    interpreter, and a Popen object of a running process warns, ResourceWarning, when collected);
    its own session (a terminal's Ctrl-C does not end it); its stdio on /dev/null. A daemon thread
    collects it when it ends (a child nobody waits for stays a zombie while this interpreter runs);
    its pid."""
    import threading

    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    pid = os.posix_spawn(sys.executable, [sys.executable, *arguments], env, file_actions=quiet, setsid=True)
    threading.Thread(target=lambda: _wait(pid), name=f"paimon-index-reap-{pid}", daemon=True).start()
    return pid


def _wait(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _lock(lock: Path) -> bool:
    """Take the training lock ``lock``: created, or replaced when older than TRAINING_LOCK_SECONDS."""
    for _ in range(2):
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime < TRAINING_LOCK_SECONDS:
                    return False
                lock.unlink()
            except OSError:
                continue
        except OSError:
            return False
    return False


def _merged(own: str, option: str) -> dict[str, str]:
    return {DRIVER_JAVA_OPTIONS: " ".join(part for part in (own, option, QUIET) if part)}


def discard(archive: Path) -> None:
    """Remove an archive the JVM could not start with (a later session records a new one)."""
    with contextlib.suppress(OSError):
        archive.unlink(missing_ok=True)


def _remove_leftovers(directory: Path) -> None:
    now = time.time()
    for tmp in directory.glob(f"{PREFIX}*{SUFFIX}.*.tmp"):
        try:
            owner = int(tmp.name.rsplit(".", 2)[-2])
            if _alive(owner) or now - tmp.stat().st_mtime < STALE_SECONDS:
                continue
            tmp.unlink()
        except (ValueError, OSError):
            continue


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _proc_stat(pid)
    return fields is None or fields[0] not in ("Z", "X")


def watch(recording: Recording, jvm_pid: int | None) -> None:
    """Publish ``recording`` once the driver JVM ``jvm_pid`` has exited (it writes the archive as it
    exits: when this interpreter ends, or is killed, and the JVM's stdin closes). A detached
    process of this file waits for it, so the interpreter's exit does not."""
    if jvm_pid is None:
        return
    arguments = [str(jvm_pid), str(recording.tmp), str(recording.final), recording.java, recording.class_path]
    _spawn_detached([__file__, *arguments], os.environ)


def publish(recording: Recording, jvm_pid: int, *, wait_seconds: float = DUMP_WAIT_SECONDS) -> bool:
    """Wait until process ``jvm_pid`` has exited, check its archive maps, rename it into place.
    Whether an archive was published; False (the .tmp removed) when it is missing or broken."""
    deadline = None
    while _alive(jvm_pid):
        if deadline is None and not _running_session(jvm_pid):
            deadline = time.monotonic() + wait_seconds
        if deadline is not None and time.monotonic() > deadline:
            return False  # a dump this long is not one to trust; a later recording removes the .tmp
        time.sleep(POLL_SECONDS)
    tmp = recording.tmp
    if not tmp.is_file() or not _maps(recording, tmp):
        tmp.unlink(missing_ok=True)
        return False
    os.replace(tmp, recording.final)
    remove_unused(recording.final.parent)
    return True


def remove_unused(directory: Path, *, now: float | None = None) -> list[Path]:
    """Remove the archives (and their training locks) no driver mapped for UNUSED_SECONDS: those of
    a Java or Spark since replaced, ~150-200 MB each. The archives removed."""
    now = time.time() if now is None else now
    removed = []
    for archive in directory.glob(f"{PREFIX}*{SUFFIX}"):
        try:
            if now - archive.stat().st_mtime < UNUSED_SECONDS:
                continue
            archive.unlink()  # a JVM mapping it keeps its pages: the file goes with the last one
            archive.with_name(archive.name + TRAINING_SUFFIX).unlink(missing_ok=True)
        except OSError:
            continue
        removed.append(archive)
    return removed


def _running_session(pid: int) -> bool:
    """Whether ``pid``'s parent (the Python driver) still lives: the JVM serves it until then."""
    fields = _proc_stat(pid)
    if fields is None:
        return True  # no /proc: wait for the JVM without a deadline
    return int(fields[1]) != 1 and _alive(int(fields[1]))


def _proc_stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat``'s fields after the command name (state, parent pid, ...); None without."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields or None


def _maps(recording: Recording, archive: Path) -> bool:
    """Whether a JVM with the recording's class path starts with ``archive`` mapped (``-Xshare:on``
    fails the start otherwise; a truncated archive crashes it)."""
    crash_log = archive.with_name(archive.name + ".hs_err")
    command = [recording.java, *(["-cp", recording.class_path] if recording.class_path else []),
               f"-XX:SharedArchiveFile={archive}", "-Xshare:on", QUIET, "-XX:-CreateCoredumpOnCrash",
               f"-XX:ErrorFile={crash_log}", "-version"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        crash_log.unlink(missing_ok=True)
    return done.returncode == 0


if __name__ == "__main__":  # the detached watcher of :func:`watch` (stdlib only: no package import)
    pid, tmp_path, final_path, java_path, class_path = sys.argv[1:6]
    publish(Recording(Path(tmp_path), Path(final_path), java_path, class_path), int(pid))
