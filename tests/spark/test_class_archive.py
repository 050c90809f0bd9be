"""The local driver's class-data-sharing archive (:mod:`paimon_index.spark.class_archive`), against
the real JVM: what is published, what is refused, and that a fresh session maps it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from paimon_index.spark import class_archive
from paimon_index.spark.class_archive import QUIET, Recording, publish
from paimon_index.spark.session import _java_executable, _version_text

JAVA = _java_executable()
needs_java = pytest.mark.skipif(JAVA is None, reason="no java on this machine")
#: What ``-Xlog:class+load`` says of a class the JVM took from a dynamic (top) archive.
FROM_TOP_ARCHIVE = "shared objects file (top)"


def _jar(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return path


def _record(tmp_path: Path, class_path: str = "") -> tuple[Recording, subprocess.Popen[bytes]]:
    """A real JVM recording an archive (of the classes ``java -version`` loads) as it exits."""
    assert JAVA is not None
    tmp = tmp_path / f"spark-driver-k.jsa.{os.getpid()}.tmp"
    recording = Recording(tmp, tmp_path / "spark-driver-k.jsa", JAVA, class_path)
    command = [JAVA, *(["-cp", class_path] if class_path else []), f"-XX:ArchiveClassesAtExit={tmp}", QUIET,
               "-version"]
    return recording, subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _classes_from_archive(archive: Path, class_path: str = "") -> int:
    assert JAVA is not None
    command = [JAVA, *(["-cp", class_path] if class_path else []), f"-XX:SharedArchiveFile={archive}",
               "-Xlog:class+load=info", "-version"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout.count(FROM_TOP_ARCHIVE)


@needs_java
def test_a_recording_is_published_once_its_jvm_has_exited_and_maps(tmp_path: Path) -> None:
    jar = str(_jar(tmp_path / "app.jar"))
    # Archives of an earlier Java or Spark: one nobody mapped for over 30 days goes as this one
    # is published, with its training lock; one a driver mapped recently stays.
    unused, used = tmp_path / "spark-driver-old.jsa", tmp_path / "spark-driver-used.jsa"
    for archive in (unused, used, unused.with_name(unused.name + class_archive.TRAINING_SUFFIX)):
        archive.write_bytes(b"an archive")
        old = time.time() - class_archive.UNUSED_SECONDS - 60
        os.utime(archive, (old, old))
    os.utime(used)
    recording, jvm = _record(tmp_path, jar)
    # The JVM is this process's child: once exited it is a zombie until reaped, which publish must
    # count as exited (it polls the pid, as the detached watcher polls a JVM that is not its child).
    assert publish(recording, jvm.pid, wait_seconds=60)
    jvm.wait()
    assert recording.final.is_file() and not recording.tmp.exists()
    assert _classes_from_archive(recording.final, jar) > 0
    assert sorted(p.name for p in tmp_path.glob("spark-driver-*")) == [recording.final.name, used.name]


@needs_java
@pytest.mark.parametrize("keep", [100, 4096, "half"])
def test_a_truncated_recording_is_never_published(tmp_path: Path, keep: int | str) -> None:
    """A JVM killed mid-dump leaves a truncated file; under the final name it would stop every later
    driver from starting (a JVM fails, or crashes, on one)."""
    recording, jvm = _record(tmp_path)
    jvm.wait()
    data = recording.tmp.read_bytes()
    recording.tmp.chmod(0o600)
    recording.tmp.write_bytes(data[: len(data) // 2 if keep == "half" else int(keep)])
    assert not publish(recording, jvm.pid)
    assert not recording.final.exists() and not recording.tmp.exists()


@needs_java
@pytest.mark.skipif(shutil.which("javac") is None, reason="no javac (a JDK) on this machine")
def test_an_archive_the_drivers_class_path_cannot_map_is_not_published(tmp_path: Path) -> None:
    """The archive holds a class of the recording's jar: a class path with another jar there (an
    upgrade between the recording and its check) cannot map it, so it is never published."""
    assert JAVA is not None
    (tmp_path / "Hello.java").write_text("public class Hello { public static void main(String[] a) {} }")
    subprocess.run(["javac", "-d", str(tmp_path), str(tmp_path / "Hello.java")], check=True)
    recorded, other = tmp_path / "app.jar", tmp_path / "upgraded.jar"
    for jar, extra in ((recorded, ""), (other, "x")):
        with zipfile.ZipFile(jar, "w") as z:
            z.write(tmp_path / "Hello.class", "Hello.class")
            z.writestr("README", extra)
    tmp = tmp_path / f"spark-driver-k.jsa.{os.getpid()}.tmp"
    subprocess.run([JAVA, "-cp", str(recorded), f"-XX:ArchiveClassesAtExit={tmp}", QUIET, "Hello"],
                   check=True, capture_output=True)
    final = tmp_path / "spark-driver-k.jsa"
    assert _classes_from_archive(tmp, str(recorded)) > 0  # it maps with the recording's own class path
    assert not publish(Recording(tmp, final, JAVA, str(other)), os.getpid() + 10**7)
    assert not final.exists() and not tmp.exists()


@needs_java
def test_driver_options_train_record_then_map_and_keep_the_callers_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert JAVA is not None
    monkeypatch.setenv(class_archive.CACHE_DIR_VARIABLE, str(tmp_path))
    monkeypatch.delenv(class_archive.ARCHIVE_SWITCH, raising=False)
    conf = {class_archive.DRIVER_JAVA_OPTIONS: "-XX:TieredStopAtLevel=1"}
    # No archive: a user's session starts as Spark would (nothing recorded), naming the one to train.
    first = class_archive.driver_options(JAVA, _version_text(JAVA), conf)
    assert first.options == {} and first.recording is None and first.mapped is None
    assert first.missing is not None and first.missing.parent == tmp_path and not first.missing.exists()

    # The trainer's session (the switch set to record) records it.
    monkeypatch.setenv(class_archive.ARCHIVE_SWITCH, class_archive.RECORD)
    recording = class_archive.driver_options(JAVA, _version_text(JAVA), conf).recording
    assert recording is not None and recording.final == first.missing
    options = class_archive.driver_options(JAVA, _version_text(JAVA), conf).options
    assert options[class_archive.DRIVER_JAVA_OPTIONS].split() == [
        "-XX:TieredStopAtLevel=1", f"-XX:ArchiveClassesAtExit={recording.tmp}", QUIET]
    assert recording.tmp.name == f"{recording.final.name}.{os.getpid()}.tmp"

    recording.final.write_bytes(b"an archive")
    os.utime(recording.final, (1.0, 1.0))
    for switch in (class_archive.RECORD, "on"):
        monkeypatch.setenv(class_archive.ARCHIVE_SWITCH, switch)
        second = class_archive.driver_options(JAVA, _version_text(JAVA), conf)
        assert second.mapped == recording.final and second.recording is None and second.missing is None
        assert f"-XX:SharedArchiveFile={recording.final}" in second.options[class_archive.DRIVER_JAVA_OPTIONS]
        assert time.time() - recording.final.stat().st_mtime < 60  # mapping it marked its use

    # Another class path is another archive; the switch and the caller's own sharing choice turn it off.
    jars = class_archive.driver_options(JAVA, _version_text(JAVA), {**conf, "spark.jars": "/x/extra.jar"})
    assert jars.missing is not None and jars.missing != recording.final
    own_choice = {class_archive.DRIVER_JAVA_OPTIONS: "-Xshare:off"}
    assert class_archive.driver_options(JAVA, _version_text(JAVA), own_choice) == class_archive.NO_ARCHIVE
    monkeypatch.setenv(class_archive.ARCHIVE_SWITCH, "off")
    assert class_archive.driver_options(JAVA, _version_text(JAVA), conf) == class_archive.NO_ARCHIVE


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)


@pytest.mark.skipif(os.name != "posix", reason="POSIX only")
def test_one_trainer_per_archive_at_the_lowest_priority_until_its_lock_expires(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``train`` spawns the trainer module detached, at niceness 19, with the switch set to record
    and the class path settings as its argument; a second call while the lock holds spawns none."""
    (tmp_path / "fake_trainer.py").write_text(textwrap.dedent("""
        import json, os, sys
        out = os.path.join(os.path.dirname(__file__), "trainer-%d.json" % os.getpid())
        with open(out + ".part", "w") as f:
            json.dump({"argv": sys.argv[1:], "nice": os.nice(0), "sid": os.getsid(0) == os.getpid(),
                       "switch": os.environ.get("PAIMON_INDEX_CLASS_ARCHIVE")}, f)
        os.replace(out + ".part", out)
    """))
    monkeypatch.setattr(class_archive, "TRAINER_MODULE", "fake_trainer")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    missing = tmp_path / "spark-driver-k.jsa"
    conf = {"spark.jars": "/x/a.jar", "spark.executor.memory": "1g"}
    pid = class_archive.train(missing, conf)
    assert pid is not None
    report = tmp_path / f"trainer-{pid}.json"
    _wait_for(report)
    assert json.loads(report.read_text()) == {"argv": [json.dumps({"spark.jars": "/x/a.jar"})],
                                              "nice": class_archive.TRAINER_NICENESS, "sid": True,
                                              "switch": class_archive.RECORD}
    lock = missing.with_name(missing.name + class_archive.TRAINING_SUFFIX)
    assert lock.exists()
    assert class_archive.train(missing, conf) is None  # the lock holds
    old = time.time() - class_archive.TRAINING_LOCK_SECONDS - 1
    os.utime(lock, (old, old))
    again = class_archive.train(missing, conf)  # a trainer that failed is retried once it expired
    assert again is not None and again != pid
    _wait_for(tmp_path / f"trainer-{again}.json")


@needs_java
def test_an_archive_another_user_could_replace_is_never_used(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive is code the JVM maps: a cache directory others can write to, or an archive file
    another user owns, starts the driver without one."""
    assert JAVA is not None
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(class_archive.CACHE_DIR_VARIABLE, str(shared))
    monkeypatch.delenv(class_archive.ARCHIVE_SWITCH, raising=False)
    assert class_archive.driver_options(JAVA, _version_text(JAVA), {}) == class_archive.NO_ARCHIVE

    own = tmp_path / "own" / "cache"
    monkeypatch.setenv(class_archive.CACHE_DIR_VARIABLE, str(own))
    missing = class_archive.driver_options(JAVA, _version_text(JAVA), {}).missing
    assert missing is not None
    assert (own.stat().st_mode & 0o777) == class_archive.PRIVATE_MODE  # created for this user alone
    missing.write_bytes(b"an archive")
    assert class_archive.driver_options(JAVA, _version_text(JAVA), {}).mapped == missing
    if os.getuid() != 0:
        return  # only root can give the file to another user
    os.chown(missing, 4242, -1)
    assert class_archive.driver_options(JAVA, _version_text(JAVA), {}) == class_archive.NO_ARCHIVE


def test_a_killed_recordings_leftover_is_removed_once_its_owner_is_gone(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"spark-driver-k.jsa.{dead.pid}.tmp"
    running = tmp_path / f"spark-driver-k.jsa.{os.getpid()}.tmp"
    fresh = tmp_path / f"spark-driver-j.jsa.{dead.pid}.tmp"
    for leftover in (stale, running, fresh):
        leftover.write_bytes(b"partial")
    old = time.time() - class_archive.STALE_SECONDS - 60
    os.utime(stale, (old, old))
    os.utime(running, (old, old))
    class_archive._remove_leftovers(tmp_path)
    assert not stale.exists()
    assert running.exists()  # its owner still runs: its JVM may still be dumping
    assert fresh.exists()  # too recent: a JVM may still be writing it


@pytest.mark.spark
def test_the_runs_session_started_with_the_archive(spark) -> None:
    """The suite's own session went through local_session: its driver maps the archive, or (none
    yet on this machine) starts without one while a trainer records it (unless the run switched
    it off)."""
    if os.environ.get(class_archive.ARCHIVE_SWITCH, "on").lower() in ("off", "0", "false", "no"):
        pytest.skip(f"{class_archive.ARCHIVE_SWITCH} is off")
    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    sharing = [a for a in arguments if a.startswith(("-XX:SharedArchiveFile=", "-XX:ArchiveClassesAtExit="))]
    if sharing:
        assert len(sharing) == 1 and sharing[0].startswith("-XX:SharedArchiveFile=") and QUIET in arguments
        assert str(class_archive.archive_dir()) in sharing[0]
    else:
        locks = class_archive.archive_dir().glob(f"*{class_archive.SUFFIX}{class_archive.TRAINING_SUFFIX}")
        assert list(locks), "a session without an archive spawns a trainer"


FRESH_SESSION = textwrap.dedent("""
    import sys
    from paimon_index.spark.session import local_session
    log = sys.argv[1]
    conf = {"spark.driver.extraJavaOptions": "-Xlog:class+load=info:file=" + log} if log else None
    spark = local_session("archive-test", master="local[1]", conf=conf)
    assert spark.range(10).selectExpr("sum(id)").collect()[0][0] == 45
    print("answered", flush=True)
    print("class path:" + spark._jvm.System.getProperty("java.class.path"), flush=True)
""")


def _fresh_session(cache: Path, class_log: str = "") -> str:
    """A fresh process's local_session with ``cache`` as the archive directory; its driver's class path."""
    env = {**os.environ, class_archive.CACHE_DIR_VARIABLE: str(cache)}
    env.pop(class_archive.ARCHIVE_SWITCH, None)
    # In the cache's directory: a JVM that crashes on a damaged archive leaves its hs_err log in its cwd.
    done = subprocess.run([sys.executable, "-c", FRESH_SESSION, class_log], env=env, capture_output=True,
                          text=True, timeout=300, check=False, cwd=cache.parent)
    assert "answered" in done.stdout, done.stderr[-3000:]
    return done.stdout.split("class path:", 1)[1].strip()


def _published(cache: Path, timeout: float = 180.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        archives = list(cache.glob(f"{class_archive.PREFIX}*{class_archive.SUFFIX}"))
        if archives:
            return archives[0]
        time.sleep(1)
    raise AssertionError(f"no archive published in {cache}: {sorted(p.name for p in cache.iterdir())}")


def _archived_classes(archive: Path, class_path: str) -> str:
    """The archive's class dictionary as the JVM prints it (one ``<n>: <class> <loader>`` per line;
    nothing unless ``class_path`` is the recording driver's)."""
    assert JAVA is not None
    done = subprocess.run([JAVA, "-cp", class_path, f"-XX:SharedArchiveFile={archive}",
                           "-XX:+PrintSharedArchiveAndExit", "-XX:+PrintSharedDictionary"],
                          capture_output=True, text=True, check=False, timeout=120)
    return done.stdout


@needs_java
@pytest.mark.slow
def test_a_fresh_session_trains_then_the_next_maps_and_a_damaged_archive_is_dropped(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    class_log = tmp_path / "classes.log"
    # No archive: the session starts without one (nothing mapped, nothing recorded by it) and spawns
    # the trainer, whose own session records while it runs the workload, then a watcher publishes.
    class_path = _fresh_session(cache, str(class_log))
    assert class_log.read_text().count(FROM_TOP_ARCHIVE) == 0
    archive = _published(cache, timeout=600)
    # The trainer's queries are in it: a broadcast join (the deletion vectors' words join) and
    # the Python source's reader, which a session that only counted rows never loads.
    archived = _archived_classes(archive, class_path)
    for name in ("org.apache.spark.sql.execution.joins.BroadcastHashJoinExec ",
                 "org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory "):
        assert name in archived, name
    _fresh_session(cache, str(class_log))
    assert class_log.read_text().count(FROM_TOP_ARCHIVE) > 5000  # Spark's classes, mapped

    # A damaged archive (here: truncated) would stop the JVM from starting: the session drops it.
    data = archive.read_bytes()
    archive.chmod(0o600)
    archive.write_bytes(data[:4096])
    _fresh_session(cache)
    assert not archive.exists()
