"""Declared schemas of the fleet dataset's three tables (documented in docs/fleet.md)."""

from __future__ import annotations

import pyarrow as pa

from cuzk_diag.records import PARTITION_SCHEMA

#: Bump on incompatible changes; stored in every file's metadata under ``SCHEMA_KEY``.
FLEET_SCHEMA_VERSION = 1
SCHEMA_KEY = b"cuzk_diag.fleet_schema_version"

_TS = pa.timestamp("ms", tz="UTC")

RUN_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("host", pa.string()),
        ("files", pa.string()),  # JSON list of the input paths, oldest first
        ("era", pa.string()),
        ("n_gpus", pa.int64()),
        ("gw", pa.int64()),
        ("gpu_threads", pa.int64()),
        ("proofs", pa.int64()),
        ("proofs_completed", pa.int64()),
        ("proofs_failed", pa.int64()),
        ("partitions", pa.int64()),
        ("s_per_proof", pa.float64()),
        ("gpu_util", pa.float64()),
        ("held_util", pa.float64()),
        ("kernel_util", pa.float64()),
        ("gpu_total_ms_p50", pa.float64()),
        ("kernel_ms_p50", pa.float64()),  # median of ntt_msm_h_ms + batch_add_ms + tail_msm_ms
        ("first_ts", _TS),
        ("last_ts", _TS),
        ("errors", pa.int64()),
        ("warnings", pa.int64()),
        ("infos", pa.int64()),
    ]
)

FINDING_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("host", pa.string()),
        ("code", pa.string()),
        ("name", pa.string()),
        ("severity", pa.string()),
        ("message", pa.string()),
        ("evidence", pa.string()),  # JSON object
        ("lines", pa.string()),  # JSON list of log line numbers
    ]
)


def partition_schema() -> pa.Schema:
    """Partition records plus the call's kernel time (``facts.kernel_time``), the run it
    belongs to and the UTC date of the call."""
    return pa.schema(
        [
            *PARTITION_SCHEMA,
            pa.field("kernel_ms", pa.float64()),
            pa.field("run_id", pa.string()),
            pa.field("date", pa.string()),
        ]
    )
