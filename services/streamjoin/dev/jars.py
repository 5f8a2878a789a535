"""Java programs of the embedded stack, resolved from Maven Central once and cached.

Each program is a pom in `streamjoin/dev/maven/<name>.pom.xml` that lists what it needs (Apache
Kafka's broker, a schema registry). `classpath(name)` runs `mvn validate dependency:copy-dependencies`
on it the first time, into `<cache>/jars/<name>-<hash of the pom>/`, and returns that folder; later
calls return it at once. A changed pom gets a new folder, so an upgrade never mixes two versions' jars.
A program that is not a set of dependencies binds its own fetching to the `validate` phase, writing
to the same `outputDirectory`: the schema registry unpacks its published distribution archive there.
The set-up scripts call `python -m streamjoin.dev.fetch_jars NAME...` so the first test or demo does not
wait for the download.

>>> pom_path("kafka").name
'kafka.pom.xml'
>>> sorted(programs())[:1]
['kafka']
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "CACHE_DIR_ENV",
    "JarsUnavailableError",
    "cache_dir",
    "classpath",
    "is_cached",
    "java_executable",
    "pom_path",
    "programs",
    "resolve",
]

CACHE_DIR_ENV = "STREAMJOIN_CACHE_DIR"
_MAVEN_DIR = Path(__file__).with_name("maven")
_POM_SUFFIX = ".pom.xml"
_DONE_MARKER = ".resolved"


class JarsUnavailableError(RuntimeError):
    """A program's jars cannot be had here (no Java, no Maven, or Maven failed); the message says which."""


def programs() -> list[str]:
    """Return the names of the Java programs that have a pom."""
    return sorted(p.name.removesuffix(_POM_SUFFIX) for p in _MAVEN_DIR.glob(f"*{_POM_SUFFIX}"))


def pom_path(name: str) -> Path:
    """Return the pom of program `name`."""
    return _MAVEN_DIR / f"{name}{_POM_SUFFIX}"


def cache_dir() -> Path:
    """Return `$STREAMJOIN_CACHE_DIR`, else `$XDG_CACHE_HOME/streamjoin`, else `~/.cache/streamjoin`."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "streamjoin"


def java_executable() -> str:
    """Return the `java` to run: `$JAVA_HOME/bin/java`, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "java", os.X_OK):
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise JarsUnavailableError("no `java` on PATH (install Java 17: Debian's openjdk-17-jre-headless)")
    return found


def classpath(name: str) -> Path:
    """Return the folder holding every jar of program `name`, resolving it from Maven Central if needed.

    Raises:
        JarsUnavailableError: the jars are not cached and Maven is missing or failed.
    """
    pom = pom_path(name)
    if not pom.is_file():
        raise JarsUnavailableError(f"no pom for {name!r} (known: {', '.join(programs())})")
    # `validate` first: a pom may unpack an archive there (the schema registry's does).
    return resolve(pom, name, goals=("validate", "dependency:copy-dependencies"))


def resolve(
    pom: Path,
    name: str,
    *,
    goals: Sequence[str] = ("dependency:copy-dependencies",),
    sources: Sequence[Path] = (),
) -> Path:
    """Run Maven's `goals` on `pom` once and return the folder of the jars they leave.

    The folder is `<cache>/jars/<name>-<hash of the pom and the sources>/`; Maven is given it as
    `-DoutputDirectory` (where `dependency:copy-dependencies` copies the runtime dependencies) and
    `<folder>/build` as `-Dstreamjoin.build.dir` (a pom that compiles code builds there, and may put
    its jar in `${outputDirectory}`), so the source tree stays clean. Later calls return the folder
    at once; a changed pom or source gets a new one.

    Raises:
        JarsUnavailableError: the folder is not cached and Maven is missing or failed.
    """
    target = _folder(pom, name, sources)
    if (target / _DONE_MARKER).is_file():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailableError(f"{name}: its jars are not cached and there is no `mvn` to fetch them")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Resolved into a scratch folder and renamed: two processes resolving at once never see half a set.
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    argv = [mvn, "-q", "-B", "-f", str(pom), *goals, "-DincludeScope=runtime",
            f"-DoutputDirectory={scratch}", f"-Dstreamjoin.build.dir={scratch / 'build'}"]  # fmt: skip
    completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-20:])
        raise JarsUnavailableError(f"{name}: `mvn {' '.join(goals)}` failed:\n{tail}")
    (scratch / _DONE_MARKER).write_text(pom.read_text())
    try:
        scratch.rename(target)
    except OSError:
        # Another process finished first: its folder is as good as ours.
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def is_cached(name: str) -> bool:
    """Whether program `name`'s jars are cached (`classpath` then returns at once)."""
    return (_cached_folder(name) / _DONE_MARKER).is_file()


def _cached_folder(name: str) -> Path:
    """Where program `name`'s jars are (or will be) cached."""
    pom = pom_path(name)
    if not pom.is_file():
        raise JarsUnavailableError(f"no pom for {name!r} (known: {', '.join(programs())})")
    return _folder(pom, name, ())


def _folder(pom: Path, name: str, sources: Sequence[Path]) -> Path:
    """`<cache>/jars/<name>-<hash of the pom and the sources>`."""
    digest = hashlib.sha256(pom.read_bytes())
    for source in sorted(sources):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return cache_dir() / "jars" / f"{name}-{digest.hexdigest()[:12]}"
