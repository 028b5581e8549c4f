"""Line parsing: every line form of the format reference, with the exact fields expected."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.ingest.parse import (
    EraDetector,
    LineParser,
    iter_events,
    parse_duration_ms,
    parse_text,
)
from cuzk_diag.records import Accounting, Family
from test_columnar import ntt_h_lines, timeline_lines, timing_lines

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "lines"


def events_of(name: str):
    acc = Accounting()
    evs = list(iter_events([str(FIX / name)], acc))
    return evs, acc


def kinds(evs):
    return [(e.family.value, e.kind) for e in evs]


def test_main_era_timing_lines():
    evs, acc = events_of("timing_main.log")
    assert [(e.kind, e.fields) for e in evs] == [
        ("split_vectors", {"split_vectors_ms": 3, "setup_to_split_ms": 4}),
        ("prep_msm", {"prep_msm_ms": 1187}),
        ("mutex_wait", {"pre_lock_cpu_ms": 5, "mutex_wait_ms": 1260}),
        ("pool_threshold", {"gpu": 0}),
        ("d_a_cache", {"d_a_cache_mib": 4096, "gpu": 0}),
        (
            "ntt_h",
            {
                "d_b_alloc_ms": 0,
                "ntt_kernels_ms": 2,
                "coset_intt_sync_ms": 301,
                "msm_init_ms": 0,
                "msm_invoke_ms": 148,
                "msm_dtor_ms": 1,
                "ntt_h_total_ms": 452,
            },
        ),
        ("ntt_msm_h", {"gpu_tid": 0, "ntt_msm_h_ms": 453}),
        ("barrier_wait", {"gpu_tid": 0, "barrier_wait_ms": 0}),
        ("batch_add", {"gpu_tid": 0, "batch_add_ms": 402}),
        ("tail_msm", {"gpu_tid": 0, "tail_msm_ms": 79, "gpu_total_ms": 934}),
        ("mutex_held", {"mutex_held_ms": 941, "total_start_fn_ms": 2206}),
        ("b_g2_msm", {"b_g2_msm_ms": 1705, "num_circuits": 1}),
        ("async_dealloc", {"async_dealloc_ms": 211}),
    ]
    assert [e.line for e in evs] == list(range(1, 14))
    assert acc.malformed == 0 and not acc.unknown_keys
    det = EraDetector()
    for e in evs:
        det.observe(e)
    assert det.era == "main"


def test_prestage_era_timing_lines():
    evs, acc = events_of("timing_prestage.log")
    got = {e.line: (e.kind, e.fields) for e in evs}
    assert got[2] == ("host_register", {"host_register": "fallback", "err": 2})
    assert got[4] == (
        "prestage_vram",
        {
            "free_mib": 9870,
            "usable_mib": 9358,
            "need_da_mib": 4096,
            "need_dbc_mib": 8192,
            "total_mib": 12288,
        },
    )
    assert got[5] == ("prestage_setup", {"prestage_setup": "skip_vram"})
    assert got[6] == (
        "prestage_setup",
        {"prestage_setup": "ok", "domain": 134217728, "lot_of_memory": 1},
    )
    assert got[7][1] == {
        "prestage_setup": "ok",
        "domain": 134217728,
        "lot_of_memory": 1,
        "sync_ms": 2,
        "trim_ms": 0,
        "alloc_ms": 9,
        "upload_ms": 7,
        "total_ps_ms": 18,
    }
    assert got[8] == ("prestage_setup", {"prestage_setup": "fallback", "err": 700})
    assert got[12] == ("epilogue", {"epilogue_ms": 5, "pre_destructor_ms": 5312})
    assert acc.malformed == 0
    det = EraDetector()
    for e in evs:
        det.observe(e)
    assert det.era == "phase9-11"


def test_era_detection_from_markers():
    def era(text: str) -> str:
        det = EraDetector()
        for e in parse_text(text)[0]:
            det.observe(e)
        return det.era

    assert era("CUZK_TIMING: epilogue_ms=5 pre_destructor_ms=3800\n") == "phase4-8"
    assert era("CUZK_TIMING: prestage_setup=skip_vram\n") == "phase12"
    assert (
        era(
            "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=2ms coset_intt_sync=1ms msm_init=0ms "
            "msm_invoke=1ms msm_dtor=1ms total=5ms\n"
        )
        == "pool-cache"
    )
    assert era("CUZK_TIMING: gpu_tid=0 barrier_wait_ms=3\n") == "main"
    assert era("hello\n") == "unknown"


def test_timeline_lines_of_every_era():
    evs, acc = events_of("timeline_eras.log")
    f = {e.line: (e.kind, e.fields) for e in evs}
    assert f[1] == ("SYNTH_START", {"offset_ms": 100, "job_id": "job-a", "kind": "porep-c2"})
    assert f[3] == ("CHAN_SEND", {"offset_ms": 54801, "job_id": "job-a"})  # empty detail
    assert f[6] == (
        "GPU_END",
        {"offset_ms": 88803, "job_id": "job-a", "worker": 0, "gpu_ms": 34000},
    )
    assert f[10][1]["snap_partition"] == 7
    assert f[13] == (
        "GPU_QUEUE",
        {"offset_ms": 30300, "job_id": "0b1e6c52-7d0f-4b8e-9d51-3f6a2c9e8a41", "partition": 4},
    )
    assert f[14] == (
        "GPU_QUEUE",
        {"offset_ms": 30301, "job_id": "wdpost-t01000-3-[12 34 56 78 9 10 11 12]", "monolithic": 1},
    )
    assert f[16][1] == {
        "offset_ms": 415854,
        "job_id": "0b1e6c52-7d0f-4b8e-9d51-3f6a2c9e8a41",
        "worker": 1,
        "partition": 3,
        "gpu_ms": 2951,
    }
    assert acc.by_family["timeline"] == 16 and acc.malformed == 0
    det = EraDetector()
    for e in evs:
        det.observe(e)
    assert det.timeline_era == "T4"


def test_tracing_lines():
    evs, acc = events_of("tracing.log")
    by = {e.line: e for e in evs}
    assert [by[i].kind for i in range(1, 15)] == [
        "daemon_start",
        "gpu_threads",
        "engine_start",
        "gpu_workers_init",
        "gpu_worker_started",
        "gpu_timing_overhead",
        "gpu_timing_prove_start",
        "gpu_prove_time",
        "gpu_prove_complete",
        "partition_gpu_complete",
        "fin_timing_finalizer",
        "pinned_fallback",
        "partition_gpu_failed",
        "tracing",
    ]
    assert by[2].fields["gpu_threads"] == 32
    init = by[4].fields
    assert (init["num_gpus"], init["gpu_workers_per_device"], init["total_workers"]) == (2, 2, 4)
    assert init["gpus"] == "[0, 1]"
    ov = by[6].fields
    assert ov["spans"].startswith("gpu_worker{worker_id=1")
    assert (ov["worker_id"], ov["gpu"], ov["partition"], ov["proof_kind"]) == (1, 0, 3, "porep-c2")
    assert ov["target"] == "cuzk_core::engine"
    assert ov["message"] == "GPU_TIMING hot_path pre-prove overhead"
    assert by[7].fields["prove_start_ms"] == 2231 and by[7].fields["partition"] == 3
    assert by[8].fields["gpu_prove_time_ms"] == pytest.approx(5318.412345)
    assert by[8].fields["target"] == "bellperson::groth16::prover::supraseal"
    assert by[8].fields["circuit_id"] == "porep-32g"
    assert by[11].fields["finish_ms"] == 719
    fail = by[13].fields
    assert fail["level"] == "ERROR"
    assert fail["error"] == "CUDA error: out of memory"
    assert fail["job_id"] == "wdpost-t01000-3-[12 34 56]"
    assert fail["partition"] == 2
    assert by[14].fields["level"] == "DEBUG" and by[14].fields["n"] == 5
    assert acc.by_family["tracing"] == 14


def test_bench_output():
    evs, _ = events_of("bench.log")
    f = {e.kind: e.fields for e in evs if e.kind != "bench_proof"}
    proofs = [e.fields for e in evs if e.kind == "bench_proof"]
    assert proofs[0] == {
        "index": 1,
        "total": 20,
        "status": "COMPLETED",
        "wall_s": 61.2,
        "prove_ms": 57400,
        "queue_ms": 0,
    }
    assert proofs[1]["status"] == "FAILED"
    assert f["bench_throughput"] == {"proofs_per_min": 1.635, "s_per_proof": 36.7}
    assert f["bench_total"] == {"total_s": 734.0}
    assert f["bench_wall"] == {"avg_s": 61.0, "min_s": 55.1, "max_s": 70.2}


def test_messy_capture_is_fully_accounted():
    evs, acc = events_of("messy.log")
    # line 9 holds carriage returns: one line (as for sed), read after its last CR
    assert acc.lines_total == 9 and acc.stray_cr_lines == 1
    assert sum(acc.by_family.values()) == 9
    assert acc.ansi_lines == 1 and acc.journald_lines == 1 and acc.decode_errors == 1
    assert acc.journald_sources == {"host cuzk[4242]": 1}  # the stripped prefix is kept
    assert acc.torn_repaired == 1 and acc.torn_unrepaired == 0
    assert acc.malformed == 2 and acc.malformed_examples == [5, 6]
    assert acc.unknown_keys == {"future_key": 1}
    by = {(e.line, e.kind): e for e in evs}
    assert by[(1, "fin_timing_finalizer")].fields["finish_ms"] == 719  # ANSI stripped
    assert by[(2, "prep_msm")].fields == {"prep_msm_ms": 1187}  # journald prefix stripped
    torn = by[(3, "GPU_START")]
    assert torn.fields["job_id"] == "0b1e6c52-7d0f-4b8e-9d51-3f6a2c9e8a41"
    assert torn.fields["partition"] == 3 and torn.fields["torn_line"] == 4
    assert by[(3, "split_vectors")].fields == {"split_vectors_ms": 3, "setup_to_split_ms": 4}
    assert by[(5, "prep_msm")].malformed and by[(5, "prep_msm")].fields == {"prep_msm_ms": None}
    assert by[(9, "async_dealloc")].fields == {"async_dealloc_ms": 211}  # no final newline


def test_torn_line_at_chunk_boundary_is_joined():
    p = LineParser()
    out = p.feed("TIMELINE,7,GPU_END,CUZK_TIMING: prep_msm_ms=9\n")
    out += p.feed("job,worker=0,partition=1,gpu_ms=5\n")
    out += p.close()
    assert [(e.kind, e.line) for e in out] == [("GPU_END", 1), ("prep_msm", 1)]
    assert out[0].fields["gpu_ms"] == 5
    assert p.acc.torn_repaired == 1 and p.acc.lines_total == 2


def test_torn_line_that_cannot_be_joined_is_counted():
    evs, acc = parse_text("TIMELINE,7,GPU_END,\nrandom text\n")
    assert acc.torn_unrepaired == 1 and acc.malformed == 1
    assert [e.kind for e in evs] == ["torn", "other"]


def test_unknown_timing_line_kept():
    evs, acc = parse_text("CUZK_TIMING: new_stage_ms=12 other=3\nCUZK_TIMING: \n")
    assert evs[0].kind == "timing_unknown" and evs[0].fields == {"new_stage_ms": 12, "other": 3}
    assert acc.unknown_timing_lines == 2 and acc.unknown_keys["new_stage_ms"] == 1
    assert evs[1].malformed


@pytest.mark.parametrize(
    "text,ms",
    [("5.318412345s", 5318.412345), ("718.2ms", 718.2), ("12µs", 0.012), ("100ns", 0.0001)],
)
def test_rust_duration(text, ms):
    assert parse_duration_ms(f"GPU prove time: {text}") == pytest.approx(ms)


def test_compressed_inputs(tmp_path):
    raw = (FIX / "timing_main.log").read_bytes()
    gz = tmp_path / "a.log.gz"
    gz.write_bytes(gzip.compress(raw))
    zst = tmp_path / "a.log.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(raw))
    plain = [(e.kind, e.fields) for e in iter_events([str(FIX / "timing_main.log")])]
    assert [(e.kind, e.fields) for e in iter_events([str(gz)])] == plain
    assert [(e.kind, e.fields) for e in iter_events([str(zst)])] == plain


def test_truncated_gzip_counts_what_was_read(tmp_path):
    raw = (FIX / "timing_main.log").read_bytes() * 200
    gz = tmp_path / "t.log.gz"
    gz.write_bytes(gzip.compress(raw)[:-200])
    acc = Accounting()
    for _ in iter_events([str(gz)], acc):
        pass
    assert acc.lines_total > 0
    assert "ends early" in acc.truncated_inputs[str(gz)]


def test_huge_line_is_cut_and_counted(tmp_path):
    p = tmp_path / "huge.log"
    p.write_bytes(
        b"CUZK_TIMING: prep_msm_ms=5\n" + b"x" * (3 << 20) + b"\nCUZK_TIMING: prep_msm_ms=6\n"
    )
    acc = Accounting()
    evs = list(iter_events([str(p)], acc))
    assert acc.oversized_lines == 1 and acc.lines_total == 3
    assert [e.fields.get("prep_msm_ms") for e in evs if e.kind == "prep_msm"] == [5, 6]


#: Pieces of cleaning work: ESC sequences, NULs, CRs, journald prefixes (with and without a pid,
#: at a line start and not), invalid and valid UTF-8 past ASCII, and plain log text.
_CLEANING_PIECES = [
    b"\x1b[31m",
    b"\x1b]0;title\x07",
    b"\x1b",
    b"\x00",
    b"\x00\x00CUZK_TIMING: prep_msm_ms=5",
    b"\r",
    b"\r\n",
    b"Nov 29 10:00:00 host cuzk[4242]: ",
    b"Nov 29 10:00:00 host cuzk: ",
    b"Dec  3 18:00:01.250 h2 curio[7]: ",
    b"Nov 29 1\xd9\xa3:00:00 host cuzk: ",
    b"Got ",
    b"]: ",
    b"\xe2\x80\x94",
    b"\xff",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\xf0\x9f\x98\x80",
    b"\xe2\x80",
    "µs ٣ é".encode(),
    b"CUZK_TIMING: gpu_total_ms=12 pre_destructor_ms=30",
    b"TIMELINE,120,GPU_START,job-1,partition=0",
    b"2026-03-13T15:13:19.952786Z  WARN cuzk_core::config: x",
    b"\n",
    b"\n",
    b"\n",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_CLEANING_PIECES), max_size=40), st.integers(0, 5000))
def test_clean_chunk_hands_on_plain_chunks_as_the_text_cleaning_would(pieces, pad):
    # The chunks ``_plain`` lets through unchanged must be what the text-level cleaning makes of
    # them, and the counts the same: the text path (``_plain`` false) is the reference.
    from unittest import mock

    from cuzk_diag import sources
    from cuzk_diag.sources import SourceStats

    data = b"x" * pad + b"\n" + b"".join(pieces) + b"\n"
    fast, slow = SourceStats("x"), SourceStats("x")
    got = sources.clean_chunk(data, fast)
    with mock.patch.object(sources, "_plain", return_value=False):
        want = sources.clean_chunk(data, slow)
    assert got == want and fast == slow
    got.decode("utf-8")  # (valid UTF-8 either way)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"]", b":", b" ", b"]: ", b"a", b"\n", b"\xff"]), max_size=30))
def test_the_journald_bracket_search_agrees_with_a_search_of_the_bytes(pieces):
    from unittest import mock

    from cuzk_diag import sources

    data = b"".join(pieces)
    # (The brackets found one by one, then by numpy: each way, and every switch between them.)
    for first in (0, 1, 2, 5, 99):
        with mock.patch.object(sources, "BRACKETS_ONE_BY_ONE", first):
            assert sources._bracket_colon(data) is (b"]: " in data), first


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from([b"Nov ", b"N", b"ov", b" ", b"\n", b"x", b"No", b"v "]), max_size=30),
    st.integers(0, 40),
)
def test_the_journald_start_test_agrees_with_a_search_of_every_line_start(pieces, end):
    import re

    from cuzk_diag.sources import _journald_start

    data = b"".join(pieces)
    every_start = re.compile(rb"^[A-Z][a-z]{2} ", re.MULTILINE)
    assert _journald_start(data, end) is (every_start.search(data, 0, end) is not None)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_utf8_valid_agrees_with_decode(data):
    from cuzk_diag.sources import utf8_valid

    try:
        data.decode("utf-8")
        ok = True
    except UnicodeDecodeError:
        ok = False
    assert utf8_valid(data) is ok


def test_memory_does_not_hold_lines(tmp_path):
    # The reader yields bounded chunks: a 40 MB input never becomes one string.
    from cuzk_diag.sources import SourceStats, read_chunks

    p = tmp_path / "big.log"
    p.write_bytes(b"CUZK_TIMING: prep_msm_ms=5\n" * 1_500_000)
    sizes = [len(c) for c in read_chunks(open(p, "rb"), SourceStats("x"), 1 << 20)]
    assert max(sizes) <= (1 << 20) + 64 and sum(sizes) == p.stat().st_size


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise_and_every_line_is_counted(data):
    import io

    from cuzk_diag.sources import SourceStats, read_chunks

    stats = SourceStats("x")
    p = LineParser()
    evs = []
    for chunk in read_chunks(io.BytesIO(data), stats, 64):
        evs += p.feed(chunk)
    evs += p.close()
    # only LF ends a line (as for sed and wc -l), whatever CRs the bytes hold
    expected = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert p.acc.lines_total == expected
    # lines with a CR that is not part of their line end
    body = [ln.rstrip(b"\r") for ln in data.split(b"\n")]
    assert stats.stray_cr_lines == sum(1 for ln in body if b"\r" in ln)
    assert sum(p.acc.by_family.values()) == expected
    physical = {e.line for e in evs}
    assert physical == set(range(1, expected + 1))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "CUZK_TIMING: prep_msm_ms=",
                "CUZK_TIMING: gpu_tid=0 tail_msm_ms=1 gpu_total_ms=",
                "TIMELINE,1,GPU_START,",
                "TIMELINE,x,GPU_END,j,worker=0",
                "CUZK_NTT_H: total=5",
                "2026-03-13T20:41:09.364197Z  INFO a: b c=",
                "=== Batch Summary ===",
                "throughput: x",
                "\x1b[2m",
                "",
            ]
        ),
        max_size=40,
    )
)
def test_near_miss_lines_never_raise(lines):
    text = "".join(line + "\n" for line in lines)
    evs, acc = parse_text(text)
    assert acc.lines_total == len(lines)
    assert sum(acc.by_family.values()) == len(lines)


def test_family_counts_sum_to_lines_on_all_fixtures():
    for path in sorted(FIX.glob("*.log")):
        acc = Accounting()
        list(iter_events([str(path)], acc))
        assert sum(acc.by_family.values()) == acc.lines_total, path.name
        assert acc.lines_total > 0


def test_families_of_fixture_lines():
    evs, _ = events_of("timeline_eras.log")
    assert {e.family for e in evs} == {Family.TIMELINE}


def test_stray_cr_keeps_line_numbers_those_of_sed(tmp_path):
    # A CR inside a line does not start a line: every later line keeps the number sed gives it,
    # and the line reads as the text after its last CR, as a terminal shows it.
    job = "6f1c2a9e-3b7d-4c1e-9a55-0d2b7c8e1f40"
    lines = [
        "2026-03-13T20:41:09.364197Z  INFO cuzk_core::engine: starting cuzk engine",
        f"TIMELINE,100,SYNTH_START,{job},partition=0",
        "CUZK_TIMING: prep_msm_ms=1909\r\r",
        "synthesis 10%\rsynthesis 50%\rCUZK_TIMING: b_g2_msm_ms=484 num_circuits=1",
        f"TIMELINE,2100,GPU_START,{job},partition=0,worker=0",
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=690",
    ]
    path = tmp_path / "cr.log"
    path.write_bytes(("\r\n".join(lines[:2]) + "\r\n" + "\n".join(lines[2:]) + "\n").encode())
    sed = path.read_bytes().split(b"\n")  # what `sed -n Np` prints for line N
    acc = Accounting()
    evs = list(iter_events([str(path)], acc))
    assert acc.lines_total == 6 == len(sed) - 1
    assert acc.stray_cr_lines == 1  # line 4; CRs before an LF end their line
    by_line = {e.line: e for e in evs}
    assert by_line[3].fields == {"prep_msm_ms": 1909}
    assert by_line[4].kind == "b_g2_msm" and by_line[4].fields["b_g2_msm_ms"] == 484
    assert by_line[5].kind == "GPU_START" and sed[4].startswith(b"TIMELINE,2100,GPU_START")
    assert by_line[6].kind == "ntt_msm_h" and sed[5].startswith(b"CUZK_TIMING: gpu_tid=0")
    assert acc.to_dict()["stray_cr_lines"] == 1


def test_cr_only_text_is_one_line():
    # Without LF there is one line (sed -n 1p prints all of it), read after its last CR.
    events, acc = parse_text("CUZK_TIMING: prep_msm_ms=5\rCUZK_TIMING: prep_msm_ms=6\r")
    assert acc.lines_total == 1 and acc.stray_cr_lines == 1
    assert [(e.line, e.fields) for e in events] == [(1, {"prep_msm_ms": 6})]


_FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), _FIELD_VALUES, max_size=6))
def test_line_table_json_is_the_standard_encoding(fields: dict[str, object]) -> None:
    """The line table's ``fields`` text is exactly ``json.dumps(fields, ensure_ascii=False)``
    (quotes, control characters, non-ASCII text, NaN and infinities included)."""
    import json

    from cuzk_diag.linetable import _dumps

    assert _dumps(fields) == json.dumps(fields, ensure_ascii=False)


# -- the line table made from column groups -------------------------------------------------

_TRACING = (
    "2026-03-13T15:19:27.666724Z  INFO cuzk_core::engine: partition synthesis complete, "
    "pushing to GPU queue job_id=j1 partition=6 synth_ms=43221"
)
_JOBS = st.sampled_from(["job-1", "", 'a"b', "a\\b", "tab\there", "bell\x07", "é-ü", "x y"])


@st.composite
def _chunk_lines(draw: st.DrawFn) -> list[str]:
    quoted = st.builds(
        lambda job, kind: f"TIMELINE,7,GPU_START,{job},partition=1,kind={kind}",
        _JOBS,
        st.sampled_from(["porep", 'a"b', "c\\d", "e\x01f"]),
    )
    other = st.sampled_from(
        [
            _TRACING,
            "",
            "garbage \x00 line",
            "CUZK_TIMING: prestage_vram",
            "CUZK_TIMING: prestage_setup=skip_vram",
            "CUZK_TIMING: prestage_setup=ok domain=134217728 lot_of_memory=1",
            "CUZK_TIMING: host_register=fallback err=2",
        ]
    )
    torn = st.just("TIMELINE,9,GPU_END,j2,worker=1,gpu")  # its end is on the next line
    return draw(
        st.lists(
            st.one_of(timing_lines(), ntt_h_lines(), timeline_lines(), quoted, other, torn),
            min_size=1,
            max_size=30,
        )
    )


@settings(max_examples=300, deadline=None)
@given(_chunk_lines(), st.integers(0, 30))
def test_the_line_table_from_columns_equals_the_one_from_events(lines: list[str], cut: int) -> None:
    """``chunk_lines`` (fixed-form lines straight from their columns) gives the rows
    ``_batch`` gives from the events, in the same order, across two chunks (a TIMELINE line
    torn at the cut is joined with the next chunk's first line); the C++ and TIMELINE lines
    read in bulk as in the compiled build (a form whose values are all words among them)."""
    import pyarrow as pa

    from cuzk_diag.ingest.parse import LineParser, columnar
    from cuzk_diag.linetable import _batch, chunk_lines

    cut = min(cut, len(lines))
    texts = ["".join(ln + "\n" for ln in part) for part in (lines[:cut], lines[cut:])]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(columnar, "BULK_SCAN", True)
        parser = LineParser(full=True)
        for text in texts:
            if not text:
                continue
            part = parser.feed_parts(text)
            got = chunk_lines(part)
            events = part.events()
            want = pa.Table.from_batches([_batch(events)]) if events else got.schema.empty_table()
            assert got.equals(want), (got.to_pylist(), want.to_pylist())


@pytest.mark.parametrize("large", [False, True])
def test_the_escape_test_of_a_text_column_reads_only_its_own_texts(large: bool) -> None:
    """``_json_escapes_in``: a quote, a backslash or a control character in any text of the
    column, and only there: not in the bytes of a buffer that lie outside a sliced column,
    nor in non-ASCII text."""
    import pyarrow as pa

    from cuzk_diag.linetable import _json_escapes_in

    typ = pa.large_string() if large else pa.string()
    for odd in ['"', "\\", "\x00", "\x1f", "\n", "\t"]:
        col = pa.array(["plain", "é-ü", f"x{odd}y", "tail"], typ)
        assert _json_escapes_in(col)
        assert not _json_escapes_in(col.slice(0, 2)) and not _json_escapes_in(col.slice(3))
        assert _json_escapes_in(col.slice(2, 1))
        assert not _json_escapes_in(col.filter(pa.array([True, True, False, True])))
    assert not _json_escapes_in(pa.array(["\x7f", "€", ""], typ))
    assert not _json_escapes_in(pa.array([], typ))
    assert not _json_escapes_in(pa.array([None, None], typ))
    assert _json_escapes_in(pa.array([None, 'a"'], typ))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(-1, 12), max_size=12), st.booleans())
def test_the_line_order_is_the_stable_sort(rows, permutation):
    """``linetable._line_order`` gives ``np.argsort(kind="stable")``'s order, by the store
    when the rows are a permutation and by the sort otherwise (repeated rows, a -1)."""
    import numpy as np

    from cuzk_diag.linetable import _line_order

    values = np.array(rows, dtype=np.int64)
    if permutation:
        values = np.random.default_rng(len(rows)).permutation(len(rows)).astype(np.int64)
    assert _line_order(values).tolist() == np.argsort(values, kind="stable").tolist()
