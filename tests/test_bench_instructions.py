"""``bench/instructions.py --steps``: the instructions of callgrind's functions summed into the
steps of the parse and the assembly."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from instructions import STEPS, step_counts  # noqa: E402

_PY = "__pyx_pw_9cuzk_diag_6ingest_"  # (the C names' common start: a wrapper, ...)
_C = "__pyx_f_9cuzk_diag_6ingest_"  # (... a C function)
#: (instructions, C file, function) as ``callgrind_annotate --inclusive=yes`` lists them.
_FUNCTIONS = [
    (586_533_729, "assemble/__init__.c", _PY + "8assemble_9Assembler_5feed_many"),
    (
        586_533_000,
        "assemble/__init__.c",
        "__pyx_pf_9cuzk_diag_6ingest_8assemble_9Assembler_4feed_many.constprop.0",
    ),
    (217_296_124, "assemble/gpu.c", _C + "8assemble_3gpu_gpu_line"),
    (92_782_934, "assemble/gpu.c", _C + "8assemble_3gpu_extend_beam"),
    (81_460_400, "parse/classify.c", _PY + "5parse_8classify_3classify"),
    (48_163_446, "parse/classify.c", _PY + "5parse_8classify_1split_lines"),
    (11_740_339, "assemble/calls.c", _C + "8assemble_5calls__ts_ms"),
    (18_656_283, "assemble/timeline.c", _C + "8assemble_8timeline_tracing_line"),
    (70_000_000, "Objects/dictobject.c", "PyDict_SetItem"),
]
_ANNOTATED = "\n".join(
    [
        "-" * 80,
        "Ir",
        "-" * 80,
        "2,686,879,861 (100.0%)  PROGRAM TOTALS",
        *(
            f"{n:>14,} ( 1.00%)  {'*  ' if 'gpu_line' in fn else ''}/b/{src}:{fn} [/x/m.so]"
            for n, src, fn in _FUNCTIONS
        ),
    ]
)


def test_steps_take_each_function_once_and_sum_their_patterns() -> None:
    got = {name: n for _, name, n in step_counts(_ANNOTATED)}
    assert len(got) == len(STEPS)
    by = {name.split(" (")[0]: n for name, n in got.items()}
    # A method's wrapper and body: the larger, not their sum.
    assert by["assembly"] == 586_533_729
    assert by["GPU-region lines"] == 217_296_124
    assert by["of them placed in a beam"] == 92_782_934
    # Two functions of one step: summed.
    assert by["line classification"] == 81_460_400 + 48_163_446
    assert by["tracing lines"] == 18_656_283 + 11_740_339
    # Steps whose functions are not in the text (a pure build's run): none counted.
    assert by["C++ lines placed at each clock reading"] == 0
    assert by["events made from the columns"] == 0


def test_the_steps_are_nested_one_level_at_a_time() -> None:
    depths = [depth for depth, _, _ in STEPS]
    assert depths[0] == 0
    assert all(b <= a + 1 for a, b in zip(depths, depths[1:], strict=False))
