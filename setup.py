"""The package is pure Python; a regular install also compiles the modules that touch each log line
(``COMPILED``: the events, the parse, the assembly, the records' conversion, live mode's handling
of each record and the trace's events) with Cython, from the same source files, where a C
compiler is at hand.

Compiled, the same code assembles about 1.5 times as fast, and the fixed-form lines (C++,
TIMELINE, tracing shapes) are read by loops over their bytes (``ingest/parse/scan.py``), which the
pure build leaves to the per-line parsers: on a 50 MB log, one process, ``analyze`` and ``export``
take 1.8-2.1 s compiled against 4.4-4.5 s pure, ``export --lines`` 1.1-1.6 against 5.0-5.6 s
(docs/performance-history.md); ``trace`` takes about a tenth less than with its module pure.
Nothing else changes, and ``tests/test_compiled.py`` holds the compiled build to the pure one's
results.
Without a compiler the build warns and keeps the pure modules. An editable install (``pip install
-e .``) stays pure Python, so that an edited module is the module that runs. ``cuzk-diag
--version`` tells which build is installed. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SRC = Path(__file__).resolve().parent / "src"
#: Every module of these stages is compiled (``cuzk_diag.ingest.build`` checks the same set).
COMPILED = sorted(
    [
        SRC / "cuzk_diag" / "event.py",
        SRC / "cuzk_diag" / "frame.py",
        SRC / "cuzk_diag" / "live.py",
        SRC / "cuzk_diag" / "trace.py",
        SRC / "cuzk_diag" / "ingest" / "stream.py",
        *(SRC / "cuzk_diag" / "ingest" / "parse").glob("*.py"),
        *(SRC / "cuzk_diag" / "ingest" / "assemble").glob("*.py"),
    ]
)


class OptionalBuildExt(build_ext):
    """Translate ``COMPILED`` to C and compile it, unless the install is editable; a module
    that fails to compile stays pure Python (each extension is ``optional``)."""

    def run(self) -> None:
        if self.editable_mode:
            print("cuzk-diag: editable install: the modules stay pure Python")
            return
        try:
            from Cython.Build import cythonize
        except ImportError:
            print("cuzk-diag: Cython is not installed: the modules stay pure Python")
            return
        translated = cythonize(
            [Extension(ext.name, list(ext.sources)) for ext in self.extensions],
            language_level=3,
            # Python's semantics: annotations are not C types and functions stay
            # introspectable, but in the modules whose first line turns ``annotation_typing``
            # on (the assembly's per-line modules). There ``Block``, ``Call`` and ``State`` are
            # the extension types their .pxd files declare, read as C structs, and every
            # annotation holds exactly the type it names (an ``int`` or ``float`` annotation
            # would convert a value of another type: none of theirs gets one).
            compiler_directives={"binding": True, "annotation_typing": False},
            build_dir=str(Path(self.build_temp) / "cython"),
            quiet=True,
        )
        c_sources = {ext.name: ext.sources for ext in translated}
        for ext in self.extensions:
            ext.sources = c_sources[ext.name]
        if not self.parallel:
            self.parallel = os.cpu_count() or 1
        super().run()


def extension(path: Path) -> Extension:
    name = ".".join(path.relative_to(SRC).with_suffix("").parts)
    return Extension(name, [str(path.relative_to(SRC.parent))], optional=True)


setup(
    ext_modules=[extension(p) for p in COMPILED],
    cmdclass={"build_ext": OptionalBuildExt},
)
