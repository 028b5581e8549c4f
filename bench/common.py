"""Shared helpers of the benchmark scripts: cached simulated logs, timed runs, machine facts.

Not a test module and not part of the package: the scripts in this directory import it as a
sibling (``python bench/run.py`` puts ``bench/`` first on ``sys.path``).
"""

from __future__ import annotations

import compileall
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "out"
TIME_BIN = "/usr/bin/time"
MB = 1_000_000  # file sizes and throughput: decimal MB, as the simulator reports them
MIB = 1024 * 1024  # peak RSS: /usr/bin/time reports KiB, shown as MiB

#: The simulated code era of the benchmark's logs (``ensure_log(era=...)`` takes another).
ERA = "main"
#: Fixed simulator parameters: a realistic main-era run, 2 GPUs x 2 workers, 4 proofs in flight.
SIM_ARGS = [
    "--era",
    ERA,
    "--gpus",
    "2",
    "--gw",
    "2",
    "--proofs",
    "20",
    "--concurrency",
    "4",
    "--seed",
    "1",
]


class BenchError(RuntimeError):
    """A benchmark could not be set up (missing tool, failed generation)."""


def log_name(mb: int, era: str = ERA) -> str:
    """Cache file name: every simulator parameter is in it, so a change of parameters misses."""
    return f"sim-{era}-g2-gw2-p20-j4-s1-{mb}mb.log"


def sim_args(era: str = ERA) -> list[str]:
    """``SIM_ARGS`` for logs of ``era``."""
    return [era if i == 1 else a for i, a in enumerate(SIM_ARGS)]


def ensure_log(
    mb: int,
    out_dir: Path,
    regen: bool = False,
    env: dict[str, str] | None = None,
    era: str = ERA,
) -> Path:
    """A simulated log of ``era`` (the code version's era) of at least ``mb`` MB in
    ``out_dir``, generated once and then reused."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / log_name(mb, era)
    if path.exists() and not regen and path.stat().st_size >= mb * MB:
        print(
            f"reusing {path.relative_to(REPO) if path.is_relative_to(REPO) else path} "
            f"({path.stat().st_size / MB:.1f} MB)",
            file=sys.stderr,
        )
        return path
    cmd = [sys.executable, "-m", "cuzk_diag.model.daemon", *sim_args(era), "--target-mb", str(mb)]
    print(f"generating {path.name}: {' '.join(['python', *cmd[1:]])} -o FILE", file=sys.stderr)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".part", dir=out_dir)
    os.close(fd)
    try:
        proc = subprocess.run([*cmd, "-o", tmp], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise BenchError(f"simulator failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        if os.path.getsize(tmp) < mb * MB:
            raise BenchError(
                f"simulator wrote {os.path.getsize(tmp) / MB:.1f} MB, asked for {mb} MB"
            )
        os.replace(tmp, path)  # atomic: an interrupted run never leaves a short cached log
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def package_dir() -> Path:
    """Directory of the installed ``cuzk_diag`` package (the source tree if installed editable)."""
    import importlib.util

    spec = importlib.util.find_spec("cuzk_diag")
    if spec is None or not spec.origin:
        raise BenchError("cuzk_diag is not installed (pip install -e . in the repository)")
    return Path(spec.origin).parent


def fingerprint(pkg: Path) -> str:
    """Short hash of every .py file of the package: tells whether the code changed."""
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def build_kind(env: dict[str, str] | None) -> str:
    """Which build of the package ``env`` imports: compiled, pure Python or partly compiled
    (``cuzk_diag.ingest.build``; an editable install is pure Python, see setup.py)."""
    probe = subprocess.run(
        [sys.executable, "-c", "from cuzk_diag.ingest import build; print(build())"],
        capture_output=True,
        text=True,
        env=env,
    )
    return probe.stdout.strip() or f"unknown ({probe.stderr.strip()[-200:]})"


def snapshot_env(work: Path) -> tuple[dict[str, str], str]:
    """Copy the installed package to ``work/snapshot`` and return an environment that imports it.

    With an editable install the package is the working tree; a benchmark of several minutes
    would otherwise measure whatever the tree holds at each command's start, mixing versions if
    the code is edited meanwhile. ``PYTHONPATH`` comes before site-packages, so the ``cuzk-diag``
    entry point and ``python -m`` both import the copy. Returns (environment, fingerprint).
    """
    pkg = package_dir()
    dest_root = work / "snapshot"
    compiled_copy(pkg, dest_root)
    return env_importing(dest_root, "the snapshot"), fingerprint(dest_root / pkg.name)


def compiled_copy(pkg: Path, dest_root: Path) -> None:
    """``pkg`` (a package's directory) copied into ``dest_root`` (emptied first) with the
    bytecode of every module written, as an installed package has it (pip compiles what it
    installs). Without it, where bytecode is not written at import (``PYTHONDONTWRITEBYTECODE``
    set, or a read-only tree), every command would compile each module it imports from its
    source: 0.3-0.5 s and 2.6 MiB more for ``analyze`` of a 10 MB log, which a build measured
    against one installed with its bytecode (``run.py --baseline``) would pay alone."""
    if dest_root.exists():
        shutil.rmtree(dest_root)
    dest = dest_root / pkg.name
    shutil.copytree(pkg, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if not compileall.compile_dir(str(dest), quiet=1):
        raise BenchError(f"{dest}: a module does not compile")


def env_importing(root: Path, what: str) -> dict[str, str]:
    """An environment whose ``cuzk-diag`` entry point and ``python -m cuzk_diag`` import the
    package in ``root`` (``PYTHONPATH`` comes before site-packages), checked by importing it;
    ``what`` names ``root`` in the error."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p
    )
    probe = subprocess.run(
        [sys.executable, "-c", "import cuzk_diag; print(cuzk_diag.__file__)"],
        capture_output=True,
        text=True,
        env=env,
    )
    if not probe.stdout.strip().startswith(str(root)):
        raise BenchError(
            f"{what} in {root} is not the package imported "
            f"({probe.stdout.strip() or probe.stderr.strip()[-300:]})"
        )
    return env


#: Files the "rotated" rows cut the log into.
ROTATED_FILES = 4


def rotated(log: Path, parts: int = ROTATED_FILES) -> list[Path]:
    """``log`` cut at line starts into ``parts`` files of about equal size, written beside it
    once (``NAME.rot-I-of-N``) and then reused, oldest first: the rotated files of one daemon
    log, as a user gives them (``daemon.log.3 ... daemon.log``)."""
    names = [log.with_name(f"{log.name}.rot-{i}-of-{parts}") for i in range(parts)]
    if (
        all(p.exists() for p in names)
        and sum(p.stat().st_size for p in names) == log.stat().st_size
    ):
        return names
    data = log.read_bytes()
    cuts = [0]
    for i in range(1, parts):
        at = data.find(b"\n", len(data) * i // parts)
        cuts.append(len(data) if at < 0 else at + 1)
    cuts.append(len(data))
    for name, lo, hi in zip(names, cuts, cuts[1:], strict=False):
        tmp = name.with_name(name.name + ".part")
        tmp.write_bytes(data[lo:hi])
        os.replace(tmp, name)
    return names


def warm_cache(path: Path) -> int:
    """Read the file once so that every tool starts from the page cache; returns its line count."""
    lines = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(16 << 20):
            lines += chunk.count(b"\n")
    return lines


def cuzk_diag_cmd() -> list[str]:
    """``python -m cuzk_diag`` under this interpreter: the package ``PYTHONPATH`` names (a build
    given with ``--baseline`` among them, whatever its entry points), started as the installed
    command starts it. (The ``cuzk-diag`` found on ``PATH`` may be a wrapper of its own: a
    pyenv shim adds 0.06-0.07 s to every run, which a venv's script does not.)"""
    return [sys.executable, "-m", "cuzk_diag"]


@dataclass
class Sample:
    wall_s: float
    rss_kib: int
    user_s: float
    sys_s: float
    rc: int
    stdout: str = ""
    stderr: str = ""
    time_e: float = 0.0  # GNU time's own %e (10 ms resolution)


def timed(cmd: list[str], tmp_dir: Path, env: dict[str, str] | None = None) -> Sample:
    """Run ``cmd`` under ``/usr/bin/time -f '%e %M %U %S'`` (wall s, peak RSS KiB, user s, sys s).

    Peak RSS and CPU times come from GNU time; the wall time from ``time.perf_counter``.

    The figures go to a file of their own (``-o``), so the tool's stderr cannot garble them.
    """
    fd, tfile = tempfile.mkstemp(prefix="time.", dir=tmp_dir)
    os.close(fd)
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [TIME_BIN, "-f", "%e %M %U %S", "-o", tfile, *cmd],
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
        )
        elapsed = time.perf_counter() - t0
        with open(tfile) as fh:
            last = [ln for ln in fh.read().splitlines() if ln.strip()][-1]
    finally:
        os.unlink(tfile)
    wall, rss, user, sys_ = last.split()[-4:]
    # %e has a resolution of 10 ms (grep on a small file shows 0.00); the wall time kept is the
    # script's own clock around the whole process, which differs from %e by ~1 ms of fork/exec.
    return Sample(
        max(elapsed, float(wall)),
        int(rss),
        float(user),
        float(sys_),
        proc.returncode,
        proc.stdout[-4000:],
        proc.stderr[-4000:],
        float(wall),
    )


@dataclass
class Measure:
    """Repeated samples of one command on one input."""

    name: str
    cmd: list[str]
    input_bytes: int
    samples: list[Sample] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.samples) and all(s.rc == 0 for s in self.samples)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall_s for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.user_s + s.sys_s for s in self.samples)

    @property
    def rss_mib(self) -> float:
        return statistics.median(s.rss_kib for s in self.samples) / 1024

    @property
    def mb_per_s(self) -> float:
        return self.input_bytes / MB / self.wall if self.wall > 0 else float("inf")

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "name": self.name,
            "command": shell_join(self.cmd),
            "input_mb": round(self.input_bytes / MB, 3),
            "ok": self.ok,
            "note": self.note,
            "samples": [
                {
                    "wall_s": round(s.wall_s, 4),
                    "time_e_s": s.time_e,
                    "peak_rss_kib": s.rss_kib,
                    "user_s": s.user_s,
                    "sys_s": s.sys_s,
                    "rc": s.rc,
                }
                for s in self.samples
            ],
        }
        if self.samples and self.samples[-1].stderr.strip():
            d["stderr_tail"] = self.samples[-1].stderr.strip().splitlines()[-5:]
        if self.ok:
            d.update(
                wall_s_median=self.wall,
                cpu_s_median=round(self.cpu, 3),
                mb_per_s=round(self.mb_per_s, 2),
                peak_rss_mib_median=round(self.rss_mib, 1),
            )
        return d


def shell_join(cmd: list[str]) -> str:
    import shlex

    shown = []
    for c in cmd:
        if c == sys.executable:
            c = "python"
        elif os.path.isabs(c) and shutil.which(os.path.basename(c)) == c:
            c = os.path.basename(c)  # an installed tool found on PATH: show it as typed
        else:
            try:
                p = Path(c)
                if p.is_absolute() and p.is_relative_to(REPO):
                    c = str(p.relative_to(REPO))
            except ValueError:
                pass
        shown.append(shlex.quote(c))
    return " ".join(shown)


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def machine_info() -> dict[str, object]:
    """What the numbers were measured on: cores, CPU model, RAM, versions, commit."""
    cpu = "unknown"
    mhz = None
    for ln in _read("/proc/cpuinfo").splitlines():
        if ln.startswith("model name") and cpu == "unknown":
            cpu = ln.split(":", 1)[1].strip()
        elif ln.startswith("cpu MHz") and mhz is None:
            mhz = round(float(ln.split(":", 1)[1]))
    ram_gib = None
    for ln in _read("/proc/meminfo").splitlines():
        if ln.startswith("MemTotal:"):
            ram_gib = round(int(ln.split()[1]) / 1024 / 1024, 1)
    nproc: int | None
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count()
    info: dict[str, object] = {
        "nproc": nproc,
        "cpu_model": cpu,
        "cpu_mhz": mhz,
        "ram_gib": ram_gib,
        "loadavg": _read("/proc/loadavg").split()[:3],
        "kernel": platform.release(),
        "python": platform.python_version(),
    }
    try:
        import cuzk_diag

        info["cuzk_diag"] = cuzk_diag.__version__
    except Exception:  # noqa: BLE001 - informational only
        info["cuzk_diag"] = "not importable"
    try:
        info["src_fingerprint"] = fingerprint(package_dir())
    except BenchError:
        pass
    info["commit"] = _git("rev-parse", "--short", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "src")
    info["src_modified"] = bool(dirty)
    lnav = shutil.which("lnav")
    if lnav:
        out = subprocess.run([lnav, "-V"], capture_output=True, text=True).stdout.strip()
        info["lnav"] = out
    info["grep"] = subprocess.run(["grep", "-V"], capture_output=True, text=True).stdout.split(
        "\n"
    )[0]
    return info


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
