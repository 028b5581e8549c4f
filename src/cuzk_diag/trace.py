"""A run as a timeline: the Chrome Trace Event JSON format (ui.perfetto.dev, chrome://tracing).

Layout (docs/trace.md):

* one process per GPU; per GPU worker a *GPU thread* track (one slice per call, category
  ``call``, with its stages nested: setup, lock wait, pre-stage setup, NTT+H, barrier wait,
  batch add, tail MSM, epilogue), beside it a *CPU prep* track (``prep_msm``, ``b_g2_msm``) and,
  on split-API code (Phase 12 on), a *finalize* track (unlock to ``GPU_END``);
* a synthesis process with one track per concurrent synthesis slot;
* a proofs process with one band per proof (first ``SYNTH_START`` to last ``GPU_END``) on as many
  tracks as proofs were in flight at once;
* counters: partitions in flight, GPU calls queued, per-GPU busy (0/1).

Every slice is placed by the assembly's clock: TIMELINE offsets (ms since engine start). A call
enters at ``GPU_START``; its setup (``pre_lock_cpu_ms``, else ``setup_to_split_ms``) comes first,
then the lock wait (``mutex_wait_ms``, or the estimate of ``facts.estimate_lock_wait``), so the
lock is taken at entry + setup + wait; the prep thread starts at entry + ``setup_to_split_ms``.

Written as records complete: events wait in a time-ordered buffer until the clock has moved
``horizon_ms`` past them, then go out in time order, so memory holds only the calls of that
window however long the log. Concurrent work never shares a track: a slice goes to the first
track of its group that is free at its start (a new track when none is).
"""

from __future__ import annotations

import errno
import heapq
import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from cuzk_diag import __version__
from cuzk_diag.errors import OutputError
from cuzk_diag.facts import barrier_estimate, estimate_lock_wait, gpu_of_rows
from cuzk_diag.frame import RecordBatches
from cuzk_diag.jsontext import chunk_encoder
from cuzk_diag.pipeline import BATCH, with_wall_clock_text
from cuzk_diag.records import Finding, RunInfo
from cuzk_diag.sinks import Sink, StreamEnd

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis
    from cuzk_diag.config import Config

#: Eras with the split start/finalize API: a worker takes its next call during the finalize.
SPLIT_API_ERAS = frozenset({"phase12", "pool-cache", "main"})
#: How far behind the newest clock reading events are held for ordering (ms).
HORIZON_MS = 600_000.0
#: Gap put between clock segments (the engine restarted, or the next input began), ms.
SEGMENT_GAP_MS = 1000.0
#: The fraction of a log assembled in parts (``--jobs``) that the process writing the trace
#: assembles (``Sink.own_share``): it writes every call's events, which costs about twice the
#: assembly of the call, while the other processes only assemble. (The 250 MB benchmark log,
#: two processes: 13.3-14.0 s at 0.2, 13.8-13.9 s at 0.3, 14.5 s with the even split.)
TRACE_SHARE = 0.2
#: Records whose stages are estimated together (one small frame per batch).
_BATCH = 256

PID_RUN = 1
PID_SYNTH = 2
PID_PROOFS = 3
PID_GPU0 = 10  # GPU g is process PID_GPU0 + g
_LANE = 100_000  # tid stride between the tracks of one group

#: Worker track roles: (tid offset, label).
_ROLES = {"gpu": (1, "GPU thread"), "prep": (2, "CPU prep"), "fin": (3, "finalize")}
_FALLBACKS = ("skip_vram", "fallback", "silent")


@dataclass(slots=True)
class _Slice:
    ts: float  # ms on the trace clock
    dur: float
    name: str
    cat: str
    args: dict[str, Any] | str  # (a str: the args' JSON text already, as a stage's)
    children: list[_Slice] = field(default_factory=list)
    instants: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    # A call's: its first line (the key of its findings, ``TraceWriter.by_line``; None when it
    # has none), and what its args hold after the findings (``estimated``). The args' text ends
    # with both (``TraceWriter._call_args``).
    tag: int | None = None
    after: list[str] | None = None


@dataclass(slots=True)
class _Group:
    """Tracks that show one kind of work; concurrent slices go to separate tracks."""

    pid: int
    tid: int  # tid of the first track
    label: str
    sort: int
    ends: list[float] = field(default_factory=list)  # per track: end of its last slice


def _num(v: Any) -> float | None:
    if type(v) is int:  # (most values: the records' milliseconds)
        return float(v)
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
        return None if math.isnan(f) else f
    return None


class TraceWriter(Sink):
    """The ``trace`` stream format: a Chrome trace on ``out``, written as records complete.

    ``findings`` (optional, known before the records) tag the calls each finding applies to: a
    call whose ``first_line`` is one of a finding's ``calls`` (its ``lines`` when a finding has
    no calls) gets the code in ``args.findings``. With ``tag_later`` they are known only at
    the end (``take_findings``, before ``finish``): each call's text then holds a mark where its
    findings go (``TAG_MARK``, its first line between two NUL characters, which no JSON text
    holds unescaped), and ``copy_tagged`` writes the text with the findings in their place.
    """

    #: Writing a call's events costs more than assembling it: with ``--jobs``, this process
    #: assembles less of the log than its children (``Sink.own_share``).
    own_share = TRACE_SHARE

    def __init__(
        self,
        out: IO[str],
        *,
        findings: Sequence[Finding] = (),
        horizon_ms: float = HORIZON_MS,
        tag_later: bool = False,
    ) -> None:
        self.out = out
        self.horizon = horizon_ms
        self.info = RunInfo()
        self.tag_later = tag_later
        self.by_line: dict[int, list[str]] = {}
        self._findings: list[dict[str, Any]] = []
        self.take_findings(findings)
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self._clock = -math.inf  # newest clock reading (trace ms)
        self._base = 0.0  # offset of the current clock segment on the trace clock
        self._seg_max = 0.0
        self._pending: list[dict[str, Any]] = []
        self._groups: dict[tuple[Any, ...], _Group] = {}
        self._named_pids: set[int] = set()
        self._counters: dict[tuple[int, str], float] = {}
        self._counter_ts: dict[tuple[int, str], float] = {}
        # Per counter: its event's text before its time, and from its time to its value.
        self._counter_parts: dict[tuple[int, str], tuple[str, str]] = {}
        self._busy: dict[int, int] = {}
        self._jobs: dict[str, list[Any]] = {}  # job -> [first, last, calls, failed, kind]
        self._bands: list[tuple[float, int, Any]] = []
        self._cursor: dict[int, float] = {}  # per GPU, for calls without a clock
        self.calls = 0
        self.unclocked = 0
        self.events = 0
        self._texts: list[str] = []  # events' text not yet written (``_put``, ``_flush``)

    def take_findings(self, findings: Sequence[Finding]) -> None:
        """The findings whose codes tag their calls, listed in the trace's metadata."""
        for f in findings:
            self._findings.append(f.to_dict())
            for line in f.calls or f.lines:
                codes = self.by_line.setdefault(int(line), [])
                if f.code not in codes:
                    codes.append(f.code)

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> None:
        self.out.write('{"traceEvents":[\n')
        self._process(PID_RUN, "run", 0)
        self._process(PID_PROOFS, "proofs", 1)
        self._process(PID_SYNTH, "synthesis", 2)

    def segment(self) -> None:
        """TIMELINE offsets restart: later calls go after everything so far."""
        self._estimate()
        self._base = self._seg_max + SEGMENT_GAP_MS

    def record(self, record: dict[str, Any], *, revised: bool = False) -> None:
        self._pending.append(record)
        if len(self._pending) >= _BATCH:
            self._estimate()

    def finding(self, finding: Finding, *, status: str = "new") -> None:
        """A finding known only after calls were written: listed in the trace metadata."""
        if status == "new":
            self._findings.append(finding.to_dict())

    def finish(self, end: StreamEnd) -> None:
        self.drain(end)
        self.close_trace(end)

    def drain(self, end: StreamEnd) -> None:
        """Every event written (the input has ended): what waited for the clock too."""
        self.info = end.info
        self._estimate()
        self._release(math.inf)
        self._close_jobs(math.inf)
        self._release_bands(math.inf)
        self._flush()

    def close_trace(self, end: StreamEnd) -> None:
        """The end of the trace: its metadata (the findings taken so far among them)."""
        info, acc = end.info, end.accounting
        self.out.write("\n],")
        meta = {
            "tool": "cuzk-diag",
            "version": __version__,
            "sources": list(acc.sources),
            "clock": "TIMELINE offsets (ms since engine start); ts in µs on that clock",
            "engine_start_ts": info.engine_start_ts,
            "era": info.era,
            "gpus": list(info.gpus),
            "gw": info.gw,
            "calls": self.calls,
            "calls_without_clock": self.unclocked,
            "lines_total": acc.lines_total,
            "unattributed_lines": acc.unattributed,
            "findings": self._findings,
        }
        self.out.write('"displayTimeUnit":"ms","metadata":')
        self.out.write(json.dumps(meta, ensure_ascii=False, default=str))
        self.out.write("}\n")
        self.out.flush()

    # -- records -> slices -------------------------------------------------------------------

    def _estimate(self) -> None:
        """Stages of the pending records (lock wait and barrier estimated per batch)."""
        recs, self._pending = self._pending, []
        if not recs:
            return
        recs = with_wall_clock_text(recs, self.info)
        df = pd.DataFrame.from_records(recs)
        lock = estimate_lock_wait(df)
        barrier, _, bmethod = barrier_estimate(df, lock)
        gpus = gpu_of_rows(df, self.info, self.info.gw).tolist()
        waits = lock.wait.tolist()
        barriers = barrier.tolist()
        for i, rec in enumerate(recs):
            self._place(
                rec,
                int(gpus[i]),
                _num(waits[i]),
                lock.method,
                lock.total_field,
                _num(barriers[i]),
                bmethod,
            )
        self._release(self._clock - self.horizon)
        self._close_jobs(self._clock - self.horizon)
        self._flush()

    def _t(self, rec: dict[str, Any], key: str) -> float | None:
        v = _num(rec.get(key))
        return None if v is None else self._base + v

    def _place(
        self,
        rec: dict[str, Any],
        gpu: int,
        wait: float | None,
        wait_method: str,
        wait_field: str | None,
        barrier: float | None,
        bmethod: str,
    ) -> None:
        self.calls += 1

        def g(key: str) -> float:
            return _num(rec.get(key)) or 0.0

        worker = rec.get("worker")
        worker = worker if isinstance(worker, int) else -1
        era = rec.get("era") or self.info.era
        split = era in SPLIT_API_ERAS
        t0 = self._t(rec, "start_ms")
        end = self._t(rec, "end_ms")
        estimated: list[str] = []
        if t0 is None:
            # No TIMELINE clock (C++ lines alone): calls of a GPU are serialised by its mutex,
            # so they are laid end to end in lock order.
            self.unclocked += 1
            t0 = self._cursor.get(gpu, self._base)
            end = None
            estimated.append("call start (no TIMELINE clock: calls laid end to end)")
        setup_f = "setup_to_split_ms"
        if rec.get("pre_lock_cpu_ms") is not None:
            setup_f = "pre_lock_cpu_ms"
        setup = g(setup_f)
        measured_wait = rec.get("mutex_wait_ms") is not None
        if measured_wait:
            wait = g("mutex_wait_ms")
        wait = max(0.0, wait or 0.0)
        acquired = t0 + setup + wait
        ps = g("total_ps_ms")
        region = acquired + ps
        gpu_total = g("gpu_total_ms")
        held = _num(rec.get("mutex_held_ms"))
        unlock = acquired + max(held, gpu_total + ps) if held is not None else region + gpu_total
        prep_start = t0 + g("setup_to_split_ms")
        prep_end = prep_start + g("prep_msm_ms")
        bg2_end = prep_end + g("b_g2_msm_ms")
        if split:
            call_end = unlock
        else:
            epi_start = max(unlock, bg2_end)
            call_end = max(epi_start + g("epilogue_ms"), end or 0.0)
            if rec.get("pre_destructor_ms") is not None and end is None:
                call_end = max(call_end, t0 + g("pre_destructor_ms"))
        if end is not None and not split and end < call_end:
            call_end = end  # the GPU_END clock wins over the sum of estimates
        call_end = max(call_end, t0)
        if end is None:
            self._cursor[gpu] = max(self._cursor.get(gpu, 0.0), call_end)

        # (JSON-safe: a NaN, float or numpy's, becomes null.)
        args = {
            k: None if isinstance(v, float) and v != v else v
            for k, v in rec.items()
            if v is not None and k != "extra"
        }
        if rec.get("extra"):
            try:
                args["extra"] = json.loads(rec["extra"])
            except ValueError:
                args["extra"] = rec["extra"]
        for k in ("job_id", "partition", "worker", "record"):
            args[k] = rec.get(k)
        args["gpu"] = gpu
        args["attribution"] = {
            "ids": rec.get("attr_ids"),
            "gpu_region": rec.get("attr_gpu"),
            "cpu": rec.get("attr_cpu"),
        }
        line = rec.get("first_line") or None  # (0 is no line either)
        if isinstance(line, float) and line.is_integer():
            line = int(line)  # (a line number as ``by_line`` finds it: 12.0 is key 12)
        tag = line if type(line) is int else None
        job = rec.get("job_id")
        part = rec.get("partition")
        label = f"{job or 'call'}" + (f" p{part}" if part is not None else "")
        wait_est = not measured_wait
        wait_src = "mutex_wait_ms" if measured_wait else f"estimated from {wait_field or 'n/a'}"
        if wait_est and wait > 0:
            estimated.append("lock wait")
        if bmethod != "measured" and (barrier or 0) > 0:
            estimated.append("barrier wait")
        call = _Slice(t0, call_end - t0, label, "call", args, tag=tag, after=estimated)
        kids = call.children

        def stage(name: str, start: float, dur: float, src: str, est: bool = False) -> float:
            # Stages never reach past their call (estimates are cut at the GPU_END clock).
            stop = min(start + dur, call.ts + call.dur)
            if dur > 0 and stop > start:
                kids.append(
                    _Slice(
                        start,
                        stop - start,
                        f"{name} (estimated)" if est else name,
                        "stage,estimated" if est else "stage",
                        # (``{"ms": dur, "source": src, "estimated": est}``'s text)
                        f'{{"ms":{_number(dur)},"source":{_text(src)},'
                        f'"estimated":{"true" if est else "false"}}}',
                    )
                )
            return start + dur

        stage("setup", t0, setup, setup_f)
        stage("lock wait", t0 + setup, wait, wait_src, wait_est)
        stage("pre-stage setup", acquired, ps, "total_ps_ms")
        t = stage("NTT+H", region, g("ntt_msm_h_ms"), "ntt_msm_h_ms")
        if barrier:
            t = stage(
                "barrier wait",
                t,
                barrier,
                "barrier_wait_ms" if bmethod == "measured" else "gpu_total − ntt − batch − tail",
                bmethod != "measured",
            )
        t = stage("batch add", t, g("batch_add_ms"), "batch_add_ms")
        stage("tail MSM", t, g("tail_msm_ms"), "tail_msm_ms")
        if not split:
            stage("epilogue", max(unlock, bg2_end), g("epilogue_ms"), "epilogue_ms")
        ps_kind = rec.get("prestage_setup")
        if ps_kind in _FALLBACKS or rec.get("host_register") == "fallback":
            kind = ps_kind if ps_kind in _FALLBACKS else "host_register"
            at = min(acquired, call.ts + call.dur)
            call.instants.append(
                (at, f"pre-staging fallback ({kind})", {"job_id": job, "partition": part})
            )
        if rec.get("status") == "failed":
            call.instants.append(
                (call.ts + call.dur, "call failed", {"job_id": job, "partition": part})
            )
        self._push(call.ts, ("slice", ("gpu", gpu, worker), call))

        prep_args = {"job_id": job, "partition": part, "record": rec.get("record")}
        if rec.get("prep_msm_ms") is not None or rec.get("b_g2_msm_ms") is not None:
            prep = _Slice(prep_start, max(0.0, bg2_end - prep_start), label, "prep", prep_args)
            for name, a, b in (("prep_msm", prep_start, prep_end), ("b_g2_msm", prep_end, bg2_end)):
                if b > a:
                    # (``{"ms": b - a, "source": f"{name}_ms"}``'s text)
                    text = f'{{"ms":{_number(b - a)},"source":{_text(name + "_ms")}}}'
                    prep.children.append(_Slice(a, b - a, name, "stage", text))
            self._push(prep.ts, ("slice", ("prep", gpu, worker), prep))
        if split and end is not None and end > unlock:
            fin_args = {**prep_args, "finish_ms": rec.get("finish_ms")}
            fin = _Slice(unlock, end - unlock, f"finalize {label}", "finalize", fin_args)
            self._push(fin.ts, ("slice", ("fin", gpu, worker), fin))

        s0, s1 = self._t(rec, "synth_start_ms"), self._t(rec, "synth_end_ms")
        if s0 is not None and s1 is not None and s1 >= s0:
            syn = _Slice(s0, s1 - s0, f"synthesis {label}", "synthesis", dict(prep_args))
            self._push(s0, ("slice", ("synth",), syn))
        first = min(x for x in (s0, self._t(rec, "queue_ms"), t0) if x is not None)
        last = max(x for x in (end, call_end) if x is not None)
        # counters: partitions in flight, calls queued for a GPU worker, GPU busy
        self._push(first, ("count", (PID_RUN, "partitions in flight"), 1))
        self._push(last, ("count", (PID_RUN, "partitions in flight"), -1))
        q0, q1 = self._t(rec, "queue_ms"), self._t(rec, "pickup_ms")
        if q0 is not None and q1 is not None and q1 >= q0:
            self._push(q0, ("count", (PID_RUN, "GPU calls queued"), 1))
            self._push(q1, ("count", (PID_RUN, "GPU calls queued"), -1))
        if end is not None or not split:
            self._push(t0, ("busy", gpu, 1))
            self._push(end if end is not None else call_end, ("busy", gpu, -1))
        if isinstance(job, str):
            j = self._jobs.get(job)
            if j is None:
                self._jobs[job] = [first, last, 1, rec.get("status") == "failed", rec]
            else:
                j[0], j[1], j[2] = min(j[0], first), max(j[1], last), j[2] + 1
                j[3] = j[3] or rec.get("status") == "failed"
        self._seg_max = max(self._seg_max, last)
        if end is not None:
            self._clock = max(self._clock, end)

    # -- ordering and tracks -----------------------------------------------------------------

    def _push(self, ts: float, item: tuple[Any, ...]) -> None:
        self._seq += 1
        # at one instant: counter decrements, then slices, then increments
        order = 0 if item[0] != "count" and item[0] != "busy" else (1 if item[2] > 0 else -1)
        heapq.heappush(self._heap, (ts, order, self._seq, item))

    def _release(self, upto: float) -> None:
        heap = self._heap
        while heap and heap[0][0] < upto:
            ts, _, _, item = heapq.heappop(heap)
            kind = item[0]
            if kind == "slice":
                self._slice(item[1], item[2])
            elif kind == "count":
                key = item[1]
                self._counters[key] = self._counters.get(key, 0) + item[2]
                self._counter(key, ts, self._counters[key])
            else:
                gpu, delta = item[1], item[2]
                before = self._busy.get(gpu, 0)
                self._busy[gpu] = before + delta
                if (before > 0) != (before + delta > 0):
                    self._gpu_process(gpu)
                    self._counter((PID_GPU0 + gpu, f"GPU {gpu} busy"), ts, int(before + delta > 0))

    def _close_jobs(self, upto: float) -> None:
        for job in [j for j, v in self._jobs.items() if v[1] < upto]:
            first, last, n, failed, rec = self._jobs.pop(job)
            args = {
                "job_id": job,
                "calls": n,
                "failed": bool(failed),
                "proof_kind": rec.get("proof_kind"),
            }
            band = _Slice(first, last - first, f"proof {job}", "proof", args)
            if failed:
                band.instants.append((last, "proof failed", {"job_id": job}))
            self._seq += 1
            heapq.heappush(self._bands, (first, self._seq, band))
        self._release_bands(upto)

    def _release_bands(self, upto: float) -> None:
        # A band goes out once no open proof started before it: tracks are filled in start order.
        open_first = min((v[0] for v in self._jobs.values()), default=math.inf)
        limit = min(upto, open_first)
        while self._bands and (self._bands[0][0] < limit or upto == math.inf):
            _, _, band = heapq.heappop(self._bands)
            self._slice(("proofs",), band)

    def _group(self, key: tuple[Any, ...]) -> _Group:
        grp = self._groups.get(key)
        if grp is None:
            if key[0] == "synth":
                grp = _Group(PID_SYNTH, 1, "synthesis slot", 0)
            elif key[0] == "proofs":
                grp = _Group(PID_PROOFS, 1, "proofs", 0)
            else:
                role, gpu, worker = key
                off, text = _ROLES[role]
                self._gpu_process(gpu)
                wname = "?" if worker < 0 else str(worker)
                grp = _Group(
                    PID_GPU0 + gpu, 10 + (worker + 1) * 4 + off, f"worker {wname} · {text}", 0
                )
                grp.sort = (worker + 1) * 4 + off
            self._groups[key] = grp
        return grp

    def _lane(self, grp: _Group, sl: _Slice) -> int:
        end = sl.ts + sl.dur
        for i, last in enumerate(grp.ends):
            if last <= sl.ts:
                grp.ends[i] = end
                return grp.tid + i * _LANE
        grp.ends.append(end)
        i = len(grp.ends) - 1
        tid = grp.tid + i * _LANE
        if grp.label in ("synthesis slot", "proofs"):
            name = f"{grp.label} {i + 1}" if grp.label != "proofs" else f"in flight {i + 1}"
        else:
            name = grp.label if i == 0 else f"{grp.label} #{i + 1}"
        self._emit(
            {"name": "thread_name", "ph": "M", "pid": grp.pid, "tid": tid, "args": {"name": name}}
        )
        self._emit(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": grp.pid,
                "tid": tid,
                "args": {"sort_index": grp.sort * 10 + i if grp.sort else i},
            }
        )
        return tid

    def _slice(self, key: tuple[Any, ...], sl: _Slice) -> None:
        grp = self._group(key)
        tid = self._lane(grp, sl)
        self._write_slice(grp.pid, tid, sl)

    def _write_slice(self, pid: int, tid: int, sl: _Slice) -> None:
        # (Each event's text made here, with its keys in this order: the text the encoder
        # makes of the event's dict, ``{"name": ..., "cat": ..., "ph": "X", ...}``.)
        where = f',"pid":{pid},"tid":{tid},"args":'
        # (A stage's name is one of a few; a call's, a proof's, ... its own.)
        name = _text(sl.name) if sl.cat in _STAGE_CATS else _encode(sl.name)
        args = sl.args if type(sl.args) is str else _encode(sl.args)
        if sl.after is not None:
            args = self._call_args(args, sl.tag, sl.after)
        self._put(
            f'{{"name":{name},"cat":{_text(sl.cat)},"ph":"X",'
            f'"ts":{_us_text(sl.ts)},"dur":{_us_text(sl.dur)}{where}{args}}}'
        )
        if not sl.children and not sl.instants:
            return
        # children and instants in time order, so a track's timestamps never go back
        items: list[tuple[float, int, Any]] = [(c.ts, 0, c) for c in sl.children]
        items += [(ts, 1, (ts, name, args)) for ts, name, args in sl.instants]
        for _, kind, item in sorted(items, key=lambda x: (x[0], x[1])):
            if kind == 0:
                self._write_slice(pid, tid, item)
                continue
            at, what, details = item
            cat = "failure" if "fail" in what else "prestage"
            self._put(
                f'{{"name":{_encode(what)},"cat":"{cat}","ph":"i","s":"t",'
                f'"ts":{_us_text(at)}{where}{_encode(details)}}}'
            )

    def _call_args(self, args: str, tag: int | None, estimated: list[str]) -> str:
        """A call's args' text (``args``: the others, never ``{}``: they hold ``job_id`` and
        more) with its ``findings`` and then its ``estimated`` at the end: the findings' text
        (``_findings_text``), or with ``tag_later`` the mark ``copy_tagged`` replaces by it."""
        if tag is None:
            found = ""
        elif self.tag_later:
            found = f"{TAG_MARK}{tag}{TAG_MARK}"
        else:
            found = _findings_text(self.by_line.get(tag))
        after = f',"estimated":{_encode(estimated)}' if estimated else ""
        return f"{args[:-1]}{found}{after}}}"

    def _counter(self, key: tuple[int, str], ts: float, value: float) -> None:
        # A counter moved back in time by a late call stays on its track's last time.
        ts = max(ts, self._counter_ts.get(key, -math.inf))
        self._counter_ts[key] = ts
        parts = self._counter_parts.get(key)
        if parts is None:
            pid, name = key
            series = "busy" if name.endswith("busy") else "n"
            parts = self._counter_parts[key] = (
                f'{{"name":{_encode(name)},"ph":"C","ts":',
                f',"pid":{pid},"args":{{"{series}":',
            )
        self._put(f"{parts[0]}{_us_text(ts)}{parts[1]}{_number(value)}}}}}")

    def _process(self, pid: int, name: str, sort: int) -> None:
        if pid in self._named_pids:
            return
        self._named_pids.add(pid)
        self._emit({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self._emit(
            {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": sort}}
        )

    def _gpu_process(self, gpu: int) -> None:
        self._process(PID_GPU0 + gpu, f"GPU {gpu}", 10 + gpu)

    def _emit(self, ev: dict[str, Any]) -> None:
        self._put(_encode(ev))

    def _put(self, text: str) -> None:
        """One event's JSON text, written with the next ``_flush``."""
        self._texts.append(text)
        self.events += 1
        if len(self._texts) >= _FLUSH_EVENTS:
            self._flush()

    def _flush(self) -> None:
        """The events put so far, written (one write: a write per event cost as much as its
        text)."""
        if not self._texts:
            return
        head = "" if self.events == len(self._texts) else ",\n"
        self.out.write(head + ",\n".join(self._texts))
        self._texts.clear()


#: The categories of stage slices (whose names are few).
_STAGE_CATS = frozenset({"stage", "stage,estimated"})
#: Around a call's first line where its findings go (``TraceWriter`` with ``tag_later``).
TAG_MARK = "\x00"
_MARK_BYTES = TAG_MARK.encode()
#: A write that failed for want of room (the disk full, a quota, a file size limit).
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: Bytes of the spooled trace read at a time by ``copy_tagged``.
_COPY_BYTES = 1 << 20
#: Events held for one write.
_FLUSH_EVENTS = 4096
#: The pieces of one trace event's JSON (the C encoder made once: ``JSONEncoder.encode`` makes
#: it for every call, half the cost of an event's few keys; the same text).
_encode_pieces = chunk_encoder(separators=(",", ":"), default=str)


def _encode(obj: object) -> str:
    """The JSON text of a trace event or of a value in it. (``jsontext.encoder``'s text, joined
    here: compiled, without the interpreted frame of its wrapper per call.)"""
    return "".join(_encode_pieces(obj, 0))


#: Whole milliseconds below this are written as ``int(ms) * 1000`` µs (exact in a float too).
_EXACT_MS = 2**43


def _us(ms: float) -> int | float:
    """Trace time in µs (an integer for the whole ms of the TIMELINE clock: those, most times,
    without ``round``, whose decimal rounding is a tenth of a trace's time)."""
    if type(ms) is int or (type(ms) is float and ms.is_integer()):
        if -_EXACT_MS < ms < _EXACT_MS:
            return int(ms) * 1000
    us = round(ms * 1000.0, 3)
    return int(us) if us == int(us) else us


def _findings_text(codes: list[str] | None) -> str:
    """A call's ``findings`` as its args' text holds them (nothing without any)."""
    return f',"findings":{_encode(codes)}' if codes else ""


def _number(v: Any) -> str:
    """A number's JSON text (the encoder's: ``int.__repr__``, ``float.__repr__`` or NaN and
    the infinities by name)."""
    if type(v) is int:
        return int.__repr__(v)
    if type(v) is float and -math.inf < v < math.inf:
        return float.__repr__(v)
    return _encode(v)


def _us_text(ms: float) -> str:
    """``_us(ms)``'s JSON text (its fast path inline: the trace writes some 1.7 of these per
    event)."""
    if -_EXACT_MS < ms < _EXACT_MS:  # (not NaN)
        whole = int(ms)
        if whole == ms:
            return int.__repr__(whole * 1000)
    return _number(_us(ms))


#: The JSON text of texts the trace writes again and again (categories, stage names and the
#: fields their times come from): made once each. Emptied when it holds ``_TEXTS_HELD`` (a
#: call's own label never comes here).
_texts: dict[str, str] = {}
_TEXTS_HELD = 4096


def _text(s: str) -> str:
    """``_encode(s)`` of a text the trace writes many times."""
    t = _texts.get(s)
    if t is None:
        if len(_texts) >= _TEXTS_HELD:
            _texts.clear()
        t = _texts[s] = _encode(s)
    return t


def write_trace(
    inputs: Sequence[str],
    out: IO[str],
    *,
    findings: Iterable[Finding] = (),
    progress: Callable[[int], None] | None = None,
    horizon_ms: float = HORIZON_MS,
    jobs: int | None = 1,
) -> tuple[TraceWriter, StreamEnd]:
    """Parse, assemble and write the trace of ``inputs`` to ``out`` in one streaming pass
    (``jobs`` as ``pipeline.stream_records`` takes it: the records, and so the trace, are the
    same)."""
    from cuzk_diag.pipeline import stream_records

    info = RunInfo()
    writer = TraceWriter(out, findings=list(findings), horizon_ms=horizon_ms)
    writer.info = info
    end = stream_records(inputs, writer, info=info, progress=progress, jobs=jobs)
    return writer, end


def write_trace_with_findings(
    inputs: Sequence[str],
    out: IO[str],
    config: Config | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    horizon_ms: float = HORIZON_MS,
    jobs: int | None = 1,
    spool_dir: str | None = None,
) -> tuple[TraceWriter, StreamEnd, Analysis]:
    """``write_trace`` with the calls tagged by the run's findings, in the same pass: the
    records go to the trace and into the frame the rules read (as ``analyze`` makes it); the
    trace is written to a temporary file in ``spool_dir`` (None: the system's) meanwhile, and
    copied to ``out`` with each call's findings once the rules have run (``copy_tagged``)."""
    import tempfile

    from cuzk_diag.pipeline import stream_records

    paths = list(inputs)
    info = RunInfo()
    try:
        made = tempfile.TemporaryFile("w+b", dir=spool_dir)
    except OSError:
        try:  # (a directory whose files can be written but not made: the system's)
            made = tempfile.TemporaryFile("w+b")
        except OSError as exc:
            raise OutputError(
                f"cannot make a temporary file for the trace: {exc.strerror or exc}"
            ) from None
    with made as raw:
        spool = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        try:
            writer = TraceWriter(spool, horizon_ms=horizon_ms, tag_later=True)
            writer.info = info
            sink = _Analyzing(writer, config, paths)
            end = stream_records(paths, sink, info=info, progress=progress, jobs=jobs)
            spool.flush()
        except OSError as exc:
            if exc.errno not in _FULL:
                raise
            where = spool_dir or tempfile.gettempdir()
            raise OutputError(
                f"cannot write the trace's temporary file in {where}: {exc.strerror or exc} "
                "(it holds the trace until the findings are known; --no-findings writes "
                "without one)"
            ) from None
        finally:
            try:
                spool.detach()  # (its text flushed; ``raw`` stays open, and is closed once)
            except OSError:
                pass  # (the disk was full: the error above says so)
        raw.seek(0)
        copy_tagged(raw, out, writer.by_line)
    assert sink.analysis is not None  # (set by ``finish``, which the end of the stream calls)
    return writer, end, sink.analysis


class _Analyzing(Sink):
    """The records of one pass to a trace (``TraceWriter`` with ``tag_later``) and to the
    frame of their analysis: made as ``analyze`` makes it (record batches, then
    ``frame_of_batches``), so that the findings are ``analyze``'s. At the end the rules run
    and their findings go to the trace before its end is written."""

    own_share = TRACE_SHARE

    def __init__(self, writer: TraceWriter, config: Config | None, inputs: list[str]) -> None:
        self.writer = writer
        self.config = config
        self.inputs = inputs
        self.batches = RecordBatches(BATCH)
        self.tables: list[pa.Table] = []
        self.analysis: Analysis | None = None

    def start(self) -> None:
        self.writer.start()

    def record(self, record: dict[str, Any], *, revised: bool = False) -> None:
        self.tables.extend(self.batches.add(record))
        self.writer.record(record, revised=revised)

    def segment(self) -> None:
        self.writer.segment()

    def finish(self, end: StreamEnd) -> None:
        from cuzk_diag.analysis import analyze_run
        from cuzk_diag.pipeline import Run, frame_of_batches

        # (The events first: the writer then holds nothing while the frame is made and read.)
        self.writer.drain(end)
        self.tables.extend(self.batches.rest())
        end.accounting.add(self.batches.counts)
        run = Run(frame_of_batches(self.tables, end.info), end.info, end.accounting, self.inputs)
        self.analysis = analyze_run(run, self.config, inputs=self.inputs)
        self.writer.take_findings(self.analysis.findings)
        self.writer.close_trace(end)


def copy_tagged(spool: IO[bytes], out: IO[str], by_line: dict[int, list[str]]) -> None:
    """The trace text of ``spool`` (a ``TraceWriter``'s with ``tag_later``) to ``out``, each
    mark (``TAG_MARK``, a first line, ``TAG_MARK``) replaced by the findings of that line, as
    the writer writes a call's ``findings`` when it knows them, or by nothing. Read
    ``_COPY_BYTES`` at a time, cut after a line's end: a mark lies within one event's line."""
    rest = b""
    while True:
        chunk = spool.read(_COPY_BYTES)
        text = rest + chunk
        cut = len(text) if not chunk else text.rfind(b"\n") + 1
        if not chunk and not text:
            return
        rest = text[cut:]
        parts = text[:cut].split(_MARK_BYTES)
        for i in range(1, len(parts), 2):
            parts[i] = _findings_text(by_line.get(int(parts[i]))).encode()
        out.write(b"".join(parts).decode("utf-8"))
        if not chunk:
            return
