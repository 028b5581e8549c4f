"""Coverage rules: how much of the log the analysis could read and place."""

from __future__ import annotations

from collections.abc import Iterator

from cuzk_diag.facts import is_value, num
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, calls_of, lines_of, register


def pct(x: float) -> str:
    """Shares of lines are often tiny: one decimal."""
    return f"{100 * x:.1f}%"


TRUNCATED_ADVICE = (
    "Take the complete file: a truncated compressed log was cut while being written or copied. "
)


@register
class LogCoverage(Rule):
    """
    ## What it flags
    Parts of the log the analysis could not use: recognised lines with unparsable tokens
    (`malformed`), TIMELINE lines torn by another writer (repaired or not), `CUZK_TIMING` lines
    of no known form and keys no version prints, C++ timing lines that could not be attributed
    to a call (`unattributed`), undecodable or oversized lines, completed calls without
    GPU-region timing lines, calls left incomplete (a start without an end), and inputs that
    end early (a truncated `.gz` or `.zst`: read as far as the data goes). Error when an input
    ends early, so that `cuzk-diag check` fails on a damaged capture by default; warning when
    no GPU call was found at all, or when more than `max_unattributed_share` of the timing
    lines, `max_missing_share` of the calls or `max_malformed_share` of all lines are affected;
    info when anything at all is.

    ## Why it matters
    Every figure in the report is computed from the lines that were placed. If a large share
    is missing the medians describe a subset (often the easy, uncontended calls, since
    attribution is hardest under contention), and a log cut short leaves incomplete calls.

    ## Example log lines
    ```
    TIMELINE,412903,GPU_START,CUZK_TIMING: gpu_tid=0 batch_add_ms=402
    CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=45x3
    CUZK_TIMING: some_new_field_ms=12
    ```

    ## What to do
    Capture stdout and stderr of the daemon into one file (`> log 2>&1`) without other writers;
    set `NO_COLOR=1` or let the tool strip ANSI; for unknown keys check whether the log comes
    from a newer code version than this tool knows. Incomplete calls at the end of the log mean
    the capture stopped before the run did. A truncated compressed file was cut while being
    written or copied: take the complete file; to accept a partial one in `check`, lower the
    rule's severity (`[tool.cuzk-diag.rules.log-coverage] severity = "warning"`).

    ## Known false positives
    A handful of torn lines is normal when C++ and Rust write to the same stream. Calls whose
    proof failed legitimately lack later lines (they are reported by `proving-failures`).
    """

    code = "CZ701"
    name = "log-coverage"
    area = "coverage"
    severity = Severity.WARNING
    title = "Log lines not parsed or not attributed"
    options = (
        Option(
            "max_unattributed_share",
            0.05,
            "unattributed / timing lines above which the rule warns",
            maximum=1.0,
        ),
        Option(
            "max_missing_share",
            0.05,
            "calls without GPU-region timing or left incomplete, "
            "as a share of all calls, above which the rule warns",
            maximum=1.0,
        ),
        Option(
            "max_malformed_share",
            0.01,
            "malformed / all lines above which the rule warns",
            maximum=1.0,
        ),
    )
    evidence = {
        "lines_total": "input lines",
        "timing_lines": "CUZK_TIMING + CUZK_NTT_H lines",
        "malformed": "recognised lines with unparsable tokens (torn pieces included)",
        "malformed_share": "malformed / lines_total",
        "unattributed": "timing lines not placed in any call",
        "unattributed_share": "unattributed / timing_lines",
        "invalid_values": (
            "values their column cannot hold (an integer beyond int64, say): the column left "
            "null, the value kept in the record's extra as invalid_<column>"
        ),
        "unknown_keys": "keys no code version prints, with counts",
        "unknown_timing_lines": "CUZK_TIMING lines of no known form",
        "torn_repaired": "TIMELINE lines torn by another writer and joined again",
        "torn_unrepaired": "torn pieces that could not be joined",
        "decode_errors": "lines with bytes that were not UTF-8",
        "oversized_lines": "lines truncated at the reader's limit",
        "missing_timing": "completed calls without GPU-region timing lines (no gpu_total_ms)",
        "incomplete": "calls with status incomplete",
        "missing_share": "(missing_timing + incomplete) / calls",
        "truncated_inputs": "inputs that end early (source -> why): read as far as the data goes",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        acc = ctx.accounting
        df = ctx.partitions
        o = ctx.options
        timing_lines = int(acc.by_family.get("timing", 0) + acc.by_family.get("ntt_h", 0))
        missing = is_value(df, "status", "ok") & num(df, "gpu_total_ms").isna()
        incomplete = is_value(df, "status", "incomplete")
        n_missing, n_incomplete = int(missing.sum()), int(incomplete.sum())
        total = len(df)
        mal_share = acc.malformed / acc.lines_total if acc.lines_total else 0.0
        un_share = acc.unattributed / timing_lines if timing_lines else 0.0
        miss_share = (n_missing + n_incomplete) / total if total else 0.0
        unknown = dict(acc.unknown_keys)
        problems = {
            "malformed": acc.malformed,
            "unattributed": acc.unattributed,
            "values their column cannot hold": acc.invalid_values,
            "unknown keys": len(unknown),
            "unknown timing lines": acc.unknown_timing_lines,
            "torn lines repaired": acc.torn_repaired,
            "torn pieces unrepaired": acc.torn_unrepaired,
            "undecodable lines": acc.decode_errors,
            "oversized lines": acc.oversized_lines,
            "calls without timing lines": n_missing,
            "incomplete calls": n_incomplete,
            "truncated inputs": len(acc.truncated_inputs),
        }
        no_calls = total == 0 and acc.lines_total > 0
        if not no_calls and not any(problems.values()):
            return
        warn = (
            no_calls
            or un_share > o["max_unattributed_share"]
            or miss_share > o["max_missing_share"]
            or mal_share > o["max_malformed_share"]
        )
        truncated = dict(acc.truncated_inputs)
        if truncated:
            msg = (
                "Input ends early: "
                + "; ".join(f"{name}: {why}" for name, why in truncated.items())
                + ". The report covers only what was read before the cut."
            )
        else:
            msg = ""
        listed = ", ".join(
            f"{n:,} {k}" for k, n in problems.items() if n and k != "truncated inputs"
        )
        if no_calls:
            msg += (
                (" " if msg else "")
                + f"No GPU call found in {acc.lines_total:,} lines: nothing to diagnose "
                "(no CUZK_TIMING or TIMELINE GPU lines)."
            )
        elif listed:
            msg += (
                (" " if msg else "") + f"Not everything was read or placed: {listed} "
                f"(unattributed {pct(un_share)} of {timing_lines:,} timing lines, "
                f"{pct(miss_share)} of {total:,} calls lack timing or an end, "
                f"malformed {pct(mal_share)} of {acc.lines_total:,} lines)."
            )
        if unknown:
            top = sorted(unknown.items(), key=lambda kv: -kv[1])[:5]
            msg += " Unknown keys: " + ", ".join(f"{k} ×{n}" for k, n in top) + "."
        yield self.finding(
            Severity.ERROR if truncated else Severity.WARNING if warn else Severity.INFO,
            msg,
            {
                "affected": n_missing + n_incomplete,
                "total": total,
                "lines_total": acc.lines_total,
                "timing_lines": timing_lines,
                "malformed": acc.malformed,
                "malformed_share": mal_share,
                "unattributed": acc.unattributed,
                "unattributed_share": un_share,
                "invalid_values": acc.invalid_values,
                "unknown_keys": unknown,
                "unknown_timing_lines": acc.unknown_timing_lines,
                "torn_repaired": acc.torn_repaired,
                "torn_unrepaired": acc.torn_unrepaired,
                "decode_errors": acc.decode_errors,
                "oversized_lines": acc.oversized_lines,
                "missing_timing": n_missing,
                "incomplete": n_incomplete,
                "missing_share": miss_share,
                "truncated_inputs": truncated,
            },
            lines=[
                *acc.malformed_examples,
                *acc.unattributed_examples,
                *acc.invalid_values_examples,
                *lines_of(df, missing | incomplete),
            ],
            calls=calls_of(df, missing | incomplete),
            advice=(TRUNCATED_ADVICE if truncated else "")
            + "Capture the daemon's stdout and stderr into one file with no other writers "
            "(> log 2>&1); unknown keys suggest a newer code version than this tool knows.",
        )
