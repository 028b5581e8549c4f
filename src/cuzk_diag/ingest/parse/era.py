"""The code era of a log, from the first occurrences of era-specific lines (section 8.2)."""

from __future__ import annotations

from cuzk_diag.event import Event
from cuzk_diag.records import Family, RunInfo

ERAS = ("phase4-8", "phase9-11", "phase12", "pool-cache", "main")
ERA_LABELS = {
    "phase4-8": "Phases 4-8 (V1-V3, Feb 18-19)",
    "phase9-11": "Phases 9-11, pre-staging (V4-V7, Feb 19)",
    "phase12": "Phase 12, split start/finalize with pre-staging (V8, Feb 20)",
    "pool-cache": "pool caching (V9-V10, Feb 27 - Mar 6)",
    "main": "main: pinned pool, mutex timing (V11, Mar 13 on)",
    "unknown": "unknown (no era-specific lines)",
}

_TIMING, _NTT_H, _TIMELINE = Family.TIMING, Family.NTT_H, Family.TIMELINE  # (see records.Family)
#: TIMELINE kinds that are era markers themselves.
_TIMELINE_MARKERS = {"GPU_QUEUE": "gpu_queue", "CHAN_SEND": "chan_send"}


class EraDetector:
    """Collects era markers from events and names the code era (and TIMELINE era)."""

    _MARKERS = {
        "mutex_wait": "mutex_wait",
        "mutex_held": "mutex_wait",
        "barrier_wait": "mutex_wait",
        "pool_threshold": "ntt_h",
        "d_a_cache": "ntt_h",
        "prestage_vram": "prestage",
        "prestage_setup": "prestage",
        "host_register": "prestage",
        "epilogue": "epilogue",
        "split_vectors": "timing",
    }

    def __init__(self) -> None:
        self.markers: dict[str, int] = {}

    def observe(self, ev: Event) -> None:
        fam = ev.family
        m = self.markers
        if fam is _TIMING:
            key = self._MARKERS.get(ev.kind)
            if key is not None and key not in m:
                m[key] = ev.line
        elif fam is _NTT_H:
            if "ntt_h" not in m:
                m["ntt_h"] = ev.line
        elif fam is _TIMELINE:
            self.observe_timeline(ev.kind, ev)

    def observe_timeline(self, kind: str, ev: Event) -> None:
        """``observe`` for a TIMELINE line whose kind the caller has read."""
        # (Every TIMELINE line comes here: a few lookups, no more; a table, not a chain of
        # string comparisons; its fields asked for by ``Event.has``, its dict not made.)
        m = self.markers
        key = _TIMELINE_MARKERS.get(kind)
        if key is not None and key not in m:
            m[key] = ev.line
        if "snap_partition" not in m and ev.has("snap_partition"):
            m["snap_partition"] = ev.line
        # (The marker first for these two: once a log has shown it, one lookup a line.)
        if "timeline_partition" not in m and ev.has("partition"):
            m["timeline_partition"] = ev.line
        if "timeline_monolithic" not in m and (ev.has("kind") or ev.has("monolithic")):
            m["timeline_monolithic"] = ev.line

    @property
    def era(self) -> str:
        m = self.markers
        if "mutex_wait" in m:
            return "main"
        if "ntt_h" in m:
            return "pool-cache"
        if "prestage" in m:
            return "phase9-11" if "epilogue" in m else "phase12"
        if "epilogue" in m:
            return "phase4-8"
        return "unknown"

    @property
    def timeline_era(self) -> str:
        m = self.markers
        if "gpu_queue" in m:
            return "T4"
        if "snap_partition" in m:
            return "T2"
        if "timeline_partition" in m:
            return "T1-T3"
        if "timeline_monolithic" in m or "chan_send" in m:
            return "T0"
        return "none"

    def apply(self, info: RunInfo) -> None:
        info.era = self.era
        info.timeline_era = self.timeline_era
        info.era_evidence = dict(self.markers)
