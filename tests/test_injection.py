"""Log text cannot act on what displays a report: no GitHub workflow command, no control
character, no HTML or link in Markdown, whatever the output format and the terminal width.

The hostile text sits in realistic lines of a real capture: an ERROR tracing line of a failed
partition (its message and its job id), and a CUZK_TIMING line with keys no code version prints.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag import cli as cli_mod
from cuzk_diag.analysis import analyze
from cuzk_diag.jsontext import indented_parts
from cuzk_diag.report import render
from cuzk_diag.sanitize import (
    ZWSP,
    json_text_is_clean,
    md_code,
    md_text,
    neutralise,
    neutralise_value,
    write_neutralised_json,
)

ROOT = Path(__file__).resolve().parent.parent
INCIDENT = ROOT / "fixtures" / "sim" / "incident.log"

#: Within the 200 characters the failures rule quotes.
PAYLOAD = (
    "`code` @octo/t \x07bell \x08bs \x9b31mcsi \u202eevil | ::error::owned1 ::warning::owned2 "
    "##[error]owned3 <script>alert(1)</script> </details> ![x](//e.vil/x) [c](javascript:x) "
    "::add-mask::owned4"
)
ERROR_LINE = (
    "2026-03-13T20:45:02.118034Z ERROR cuzk_core::engine: partition GPU proving failed "
    f"{PAYLOAD} error=CUDA error: out of memory ::error::owned5 "
    "job_id=::error::owned6-##[group]job partition=4"
)
UNKNOWN_KEYS = "CUZK_TIMING: gpu_tid=0 ::error::owned7=1 ##[group]x=3 <img_src=x"
#: Every word of the payload that would act if printed raw.
#: (A narrow terminal cuts long words short; the visible BEL escape still shows.)
MARKERS = [f"owned{i}" for i in range(1, 8)] + ["\\x07bell"]


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = INCIDENT.read_text(encoding="utf-8").split("\n")
    mid = len(lines) // 2
    lines[mid:mid] = [ERROR_LINE, UNKNOWN_KEYS]
    path = tmp_path_factory.mktemp("hostile") / "daemon.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def analysis(hostile_log: Path):
    return analyze([str(hostile_log)])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _cli(args: list[str], env: dict[str, str] | None = None) -> str:
    from click.testing import CliRunner

    env = {"GITHUB_STEP_SUMMARY": "", "NO_COLOR": "1", **(env or {})}
    return CliRunner().invoke(cli_mod.cli, args, env=env, catch_exceptions=False).stdout


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def assert_inert(text: str, *, commands_allowed: bool = False) -> None:
    """No line a runner would execute, no ``##[``, no control character."""
    assert "##[" not in text
    assert not _CONTROLS.search(text), repr(_CONTROLS.search(text))
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):
            # only our own annotations, and the log text inside them holds no ``::``
            assert commands_allowed, line
            m = re.match(r"::(error|warning|notice) title=[^:]*::(.*)", line)
            assert m and "::" not in m.group(2), line


def assert_payload_shown(text: str) -> None:
    """The hostile text is neutralised, not dropped: the reader still sees it (across the line
    breaks and borders of a narrow terminal)."""
    joined = re.sub(r"[\s│]+", "", text)
    assert any(marker in joined for marker in MARKERS)


@pytest.mark.parametrize("width", [24, 30, 40, 55, 60, 80, 100, 160])
def test_console_at_every_width(analysis, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("NO_COLOR", "1")
    out = _Terminal()
    render("console", analysis, out)
    text = out.getvalue()
    assert len(text.split("\n")[0]) == width  # the facts panel spans the terminal
    assert_inert(text)
    assert_payload_shown(text)


def test_markdown_report(analysis):
    out = io.StringIO()
    render("markdown", analysis, out)
    text = out.getvalue()
    assert_inert(text)
    assert_payload_shown(text)
    assert_markdown_inert(text)


def assert_markdown_inert(text: str) -> None:
    # HTML, images, links and code spans of the log come out as escaped text
    for raw in (r"<script", r"</details", r"<img", r"!\[x\]", r"\]\(//", r"`code`"):
        assert not re.search(r"(?<!\\)" + raw, text), raw
    assert "\\<script\\>" in text and "\\[c\\]\\(javascript" in text
    assert "\\`code\\`" in text and "\\@octo/t" in text


def test_json_report(analysis):
    out = io.StringIO()
    render("json", analysis, out)
    text = out.getvalue()
    assert_inert(text)
    assert_payload_shown(text)
    data = json.loads(text)
    failure = data["info"]["failures"][0]
    assert "##[" not in failure["job_id"] and "owned6" in failure["job_id"]
    assert "\\x07bell" in failure["message"]  # a BEL is shown, not rung


def test_github_annotations_of_an_analysis(analysis):
    from cuzk_diag.report import github

    out = io.StringIO()
    github.render(analysis, out)
    text = out.getvalue()
    assert_inert(text, commands_allowed=True)
    assert_payload_shown(text)


def test_check_github_junit_and_step_summary(hostile_log, tmp_path):
    summary = tmp_path / "summary.md"
    junit = tmp_path / "junit.xml"
    text = _cli(
        ["check", str(hostile_log), "--format", "github", "--junit", str(junit)],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert_inert(text, commands_allowed=True)
    assert_payload_shown(text)
    # an annotation's data is one line: newlines and % of the text are escaped
    assert any(line.startswith("::error title=CZ601") for line in text.split("\n"))
    md = summary.read_text(encoding="utf-8")
    assert_inert(md)
    assert_payload_shown(md)
    assert_markdown_inert(md)
    xml = junit.read_text(encoding="utf-8")
    assert_inert(xml)
    assert "&lt;script&gt;" in xml or "owned" in xml


@pytest.mark.parametrize("fmt", ["console", "markdown", "json"])
def test_check_other_formats(hostile_log, fmt):
    text = _cli(["check", str(hostile_log), "--format", fmt])
    assert_inert(text)
    if fmt != "console":  # the console lists gates only
        assert_payload_shown(text)


@pytest.mark.parametrize("fmt", ["console", "markdown", "json"])
def test_compare_formats(hostile_log, fmt):
    text = _cli(["compare", str(INCIDENT), str(hostile_log), "--format", fmt])
    assert_inert(text)


# -- the functions ---------------------------------------------------------------------------


def test_neutralise_breaks_commands_and_shows_controls():
    out = neutralise("::error::x ##[group] a\x07b\x9bc\u202ed\te")
    assert "::" not in out and "##[" not in out
    assert out == f":{ZWSP}:error:{ZWSP}:x #{ZWSP}#[group] a\\x07b\\x9bc\\u202ed e"
    assert neutralise(out) == out  # idempotent
    assert neutralise("cuzk ran 10 partitions") == "cuzk ran 10 partitions"
    # runs of colons or hashes: no two adjacent colons, no ``##[`` left
    assert "::" not in neutralise(":::::") and "##[" not in neutralise("####[")


def test_markdown_helpers():
    assert md_text("<b>x</b> [a](b) `c` | d") == r"\<b\>x\</b\> \[a\]\(b\) \`c\` \| d"
    assert md_code("a`b") == "`` a`b ``"
    assert md_code("a|b", cell=True) == r"`a\|b`"
    assert md_code("plain") == "`plain`"


def test_live_dashboard_shows_log_text_as_text(analysis):
    # rich markup in a finding's message is text, not markup (``[/]`` would raise, ``[link=``
    # would make a link)
    from rich.console import Console

    from cuzk_diag.live import LiveSnapshot
    from cuzk_diag.report.live_console import render_snapshot

    finding = analysis.findings[0]
    hostile = type(finding)(**{**finding.to_dict(), "severity": finding.severity})
    # as a rule makes it: neutralised where it enters the finding
    message = neutralise("[/] [link=javascript:x]click[/link] " + PAYLOAD)
    object.__setattr__(hostile, "message", message)
    snap = LiveSnapshot(
        inputs=["::error::owned8.log"],
        elapsed_s=1.0,
        lines=10,
        bytes_read=100,
        malformed=0,
        unattributed=0,
        era="main",
        partitions=1,
        partitions_failed=0,
        partitions_in_flight=0,
        revised=0,
        proofs_done=0,
        proofs_failed=0,
        proofs_open=1,
        window_partitions=1,
        s_per_proof=None,
        s_per_proof_source=None,
        gpu_util=None,
        kernel_util=None,
        stages=[],
        findings=[hostile],
        records_kept=1,
        records_dropped=0,
    )
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_snapshot(snap))
    text = out.getvalue()
    assert "[/] [link=javascript:x]click[/link]" in text
    assert "owned8" in text
    assert_inert(text)


def test_export_summary_on_stderr(hostile_log, tmp_path):
    from click.testing import CliRunner

    out = tmp_path / "x.parquet"
    res = CliRunner().invoke(
        cli_mod.cli, ["export", str(hostile_log), "-o", str(out)], catch_exceptions=False
    )
    assert "unknown keys" in res.stderr and "owned7" in res.stderr
    assert_inert(res.stderr)


def _neutralised_copy(value: object) -> object:
    """What ``neutralise_value`` gives, built as a full copy."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, dict):
        return {_neutralised_copy(k): _neutralised_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_neutralised_copy(v) for v in value]
    return value


_TEXT = st.text(alphabet=st.sampled_from(list("ab:#[ \x07\u202e")), max_size=6)
_JSONISH = st.recursive(
    st.none() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(_TEXT, inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSONISH)
def test_neutralised_values_copy_only_what_changes(value: object) -> None:
    """``neutralise_value`` equals the neutralised full copy, key order included, leaves its
    input as it was, and gives back every dict and list in which nothing changed itself."""
    import copy

    before = copy.deepcopy(value)
    got = neutralise_value(value)
    want = _neutralised_copy(value)
    assert got == want and json.dumps(got) == json.dumps(want)
    assert value == before  # (untouched)
    if json.dumps(want) == json.dumps(value) and not _has_tuple(value):
        assert got is value


def _has_tuple(value: object) -> bool:
    if isinstance(value, tuple):
        return True
    if isinstance(value, dict):
        return any(_has_tuple(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_tuple(v) for v in value)
    return False


def test_a_clean_report_document_is_not_copied_where_it_is_clean() -> None:
    """The run facts of a report (clean job ids) stay the objects they are; a job whose id
    carries a workflow command is copied, with its path, and only that."""
    jobs = {f"job-{i}": {"gpu_ms": i, "lines": [i, i + 1]} for i in range(1000)}
    doc = {"info": {"jobs": jobs, "era": "main"}, "findings": []}
    assert neutralise_value(doc) is doc
    jobs["::error::x"] = {"gpu_ms": 1}
    got = neutralise_value(doc)
    assert got is not doc and got["info"] is not doc["info"]
    assert got["findings"] is doc["findings"]
    assert got["info"]["jobs"]["job-7"] is jobs["job-7"]
    assert list(got["info"]["jobs"])[-1] == f":{ZWSP}:error:{ZWSP}:x"
    assert "::error::x" in jobs  # the input is left as it was


_ANY_TEXT = st.text(
    alphabet=st.sampled_from(list('ab:#["\\ é\x07\x1b\n\t\x7f\x85\x9f\u2028\u202e\u2066'))
)
_DOCS = st.recursive(
    st.none() | st.integers() | st.floats(allow_nan=False) | _ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_DOCS)
def test_json_text_shown_clean_holds_nothing_to_neutralise(value: object) -> None:
    """A document whose JSON text ``json_text_is_clean`` passes is one ``neutralise_value``
    leaves as it is; ``write_neutralised_json`` writes the text of the neutralised document
    either way."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    if json_text_is_clean(text):
        assert json.dumps(neutralise_value(value)) == json.dumps(value)
    # (Looked at in parts, down to single pieces, the text tells the same.)
    parts = list(indented_parts(value, size=1))
    assert "".join(parts) == text
    assert all(map(json_text_is_clean, parts)) == json_text_is_clean(text)
    want = json.dumps(neutralise_value(value), indent=2, ensure_ascii=False)
    assert _written(value) == want


def _written(doc: object) -> str:
    out = io.StringIO()
    write_neutralised_json(doc, out)
    return out.getvalue()


def test_json_text_with_anything_to_neutralise_is_not_clean() -> None:
    for payload in (
        "::error::x",
        "a##[group]",
        "\x07",
        "\x1b[31m",
        "\x7f",
        "\x85",
        "\u2028",
        "\u202e",
    ):
        doc = {"info": {"jobs": {"j": {"message": payload}}}}
        assert not json_text_is_clean(json.dumps(doc, indent=2, ensure_ascii=False)), payload
        assert payload not in _written(doc)

    # Keys that are one once neutralised: the document is the neutralised dict's (the last
    # value), nested or not; a value of a str subclass is neutralised too.
    class Text(str):
        pass

    for doc in (
        {"a\x07": 1, "a\\x07": 2, "n": {"x": [1]}},
        {"jobs": {"a\x07": 1, "a\\x07": 2}},
        [Text("::x"), ("##[y", {"k": Text("::")})],
    ):
        assert _written(doc) == json.dumps(neutralise_value(doc), indent=2, ensure_ascii=False)
    clean = {"info": {"jobs": {"j-1": {"gpu_ms": 1, "note": "é: ok # [1]"}}}}
    assert json_text_is_clean(json.dumps(clean, indent=2, ensure_ascii=False))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.dictionaries(_ANY_TEXT, _ANY_TEXT | st.integers(), min_size=1, max_size=3), max_size=5
    )
    | st.dictionaries(
        _ANY_TEXT,
        st.dictionaries(_ANY_TEXT, _ANY_TEXT | st.none(), min_size=1, max_size=3),
        max_size=5,
    )
)
def test_runs_of_records_are_neutralised_as_every_other_value(run: object) -> None:
    """Jobs and proofs: a run of them whose text shows anything to neutralise (in a key of a
    job, of its fields, or in a value) is written neutralised."""
    doc = {"info": {"jobs": run}}
    assert _written(doc) == json.dumps(neutralise_value(doc), indent=2, ensure_ascii=False)
