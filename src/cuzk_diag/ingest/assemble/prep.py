# (Compiled, ``PrepSearch`` is the extension type of prep.pxd: its attributes are struct fields
# and its methods C functions there; prep.pxd declares their types, not the annotations here.
# ``solve_prep_lines`` and ``prep_candidates`` are C functions there too.)
"""The joint placement of the prep thread's T2/T3 lines: which open call each line of one clock
bracket goes to (``solve_prep_lines`` builds the search and applies its result)."""

from __future__ import annotations

from typing import Any

from cuzk_diag.event import Event
from cuzk_diag.ingest.assemble.blocks import TOL_MS
from cuzk_diag.ingest.assemble.calls import KIND_BIT, Call, _int0
from cuzk_diag.ingest.assemble.cpu import cpu_line, prep_print_ms, put_cpu
from cuzk_diag.ingest.assemble.identity import _bracket_miss
from cuzk_diag.ingest.assemble.state import State

#: The bits in ``Call.kinds`` of the kinds tested here (compiled, C integers of this module).
_SPLIT_VECTORS = KIND_BIT["split_vectors"]
_PREP_MSM = KIND_BIT["prep_msm"]
_EPILOGUE = KIND_BIT["epilogue"]
#: The lines assigned meanwhile when there are none, for ``prep_candidates`` (read, never
#: written to: an empty dict made per call and per candidate cost more than the lookups).
_NO_TEMP: dict[Any, Any] = {}


def solve_prep_lines(
    self: State,
    indexed: list[tuple[int, Event]],
    anchors: list[tuple[int, float, float]],
    lo: float | None,
    hi: float | None,
) -> None:
    """Place the prep thread's T2/T3 lines of one clock bracket jointly (``drain`` calls
    it).

    Each line's print time is predicted from its call's TIMELINE start and the call's own
    values (T2 at start + setup_to_split + prep_msm, T3 that plus b_g2_msm). An assignment
    must keep the predicted times in file order (lines print in time order) and inside the
    bracket; of the assignments that do best, the first-in-first-out one is taken.
    """
    lines = [ev for _, ev in indexed]
    n = len(lines)
    only: list[Call] = []
    if n == 1:
        only = prep_candidates(self, lines[0], _NO_TEMP)
        if len(only) == 1:
            # One line that only one call can take: no assignment to weigh.
            put_cpu(self, only[0], lines[0], lines[0].kind)
            return
    los: list[float | None] = []
    his: list[float | None] = []
    for idx, _ in indexed:
        # The bracket, narrowed by the anchors before and after the line (the latest reading
        # before it, the earliest after; a loop, not ``max`` and ``min`` of lists).
        line_lo, line_hi = lo, hi
        for i, t_lo, t_hi in anchors:
            if i < idx:
                if line_lo is None or t_lo > line_lo:
                    line_lo = t_lo
            elif i > idx and (line_hi is None or t_hi < line_hi):
                line_hi = t_hi
        los.append(line_lo)
        his.append(line_hi)
    search = PrepSearch(lines, los, his, self, self.CPU_MARGIN)
    if n == 1:
        search.settle_one(only)  # (the usual case: no search over assignments)
    else:
        search.dfs(0, 0.0, -1e18)
    best, ends = search.best, search.ends
    if best[0] is None:
        for ev in lines:
            cpu_line(self, ev, ev.kind, lo, hi)
        return
    # Another assignment fitting the clock nearly as well leaves the choice a guess. (A loop:
    # compiled, a function with a generator expression could be no C function.)
    ambiguous = best[2] > 1
    if not ambiguous:
        for c, k in ends:
            if c <= best[0] + self.CPU_MARGIN and k != best[1][0]:
                ambiguous = True
                break
    choice: list[Call | None] = best[1][1]  # (a call per line)
    for i, ev in enumerate(lines):
        call = choice[i]
        if call is None:
            self._note_unattributed(ev)
            continue
        put_cpu(self, call, ev, ev.kind)
        if ambiguous:
            call.cpu_weak = True


def prep_candidates(self: State, ev: Event, temp: dict[int, dict[str, int]]) -> list[Call]:
    """Open calls that can take a T2/T3 line next (``temp``: lines assigned meanwhile)."""
    c: Call
    k = ev.kind
    bit = KIND_BIT[k]
    out = []
    for c in self.calls:
        t = temp.get(c.seq, _NO_TEMP)
        if c.closed_out or c.kinds & bit or k in t:
            continue
        if k == "prep_msm":
            if not c.kinds & _SPLIT_VECTORS:
                continue
        elif not c.kinds & _PREP_MSM and "prep_msm" not in t or c.kinds & _EPILOGUE:
            continue
        out.append(c)
    if not out and k == "b_g2_msm":
        # No call waits for its T3 after a T2: a T2 line was lost or damaged.
        out = [c for c in self._lost_t2_calls() if not temp.get(c.seq)]
    return out


class PrepSearch:
    """The depth-first search of ``solve_prep_lines`` over assignments of T2/T3 lines to calls
    (the candidates of a line are ``prep_candidates`` of ``state``). (An object rather than
    nested functions: a nested function that calls itself is a reference cycle, which only the
    garbage collector frees.)"""

    def __init__(
        self,
        lines: list[Event],
        los: list[float | None],
        his: list[float | None],
        state: State,
        margin: float,
    ) -> None:
        self.lines, self.n, self.los, self.his = lines, len(lines), los, his
        self.state, self.margin = state, margin
        self.best: list[Any] = [None, None, 0]  # cost, choice, ties
        self.temp: dict[int, dict[str, int]] = {}  # call seq -> fields assigned in this search
        self.choice: list[Call | None] = []
        self.budget = 20000
        self.ends: list[tuple[float, tuple[int, ...]]] = []  # every complete assignment's cost

    def predict(self, kind: str, value: int, c: Call) -> float | None:
        """When a line of ``kind`` with value ``value`` prints were ``c`` its call (``dfs``
        reads the line's kind and value once for all its candidates)."""
        if c.start is None:
            return None
        if kind == "prep_msm":
            return prep_print_ms(c, kind, value, None)
        # (The T2 this search gave the call, if it did, else the call's own.)
        t: dict[str, int] = self.temp.get(c.seq, _NO_TEMP)
        return prep_print_ms(c, kind, value, t.get("prep_msm"))

    def dfs(self, i: int, cost: float, last: float) -> None:
        if not self._enter(cost):
            return
        choice = self.choice
        if i == self.n:
            self._leaf(cost)
            return
        ev = self.lines[i]
        cs = prep_candidates(self.state, ev, self.temp)
        if not cs:
            choice.append(None)
            self.dfs(i + 1, cost, last)
            choice.pop()
            return
        temp = self.temp
        # (The line's kind and value, read once for all its candidates.)
        kind = ev.kind
        value = _int0(ev.get("prep_msm_ms" if kind == "prep_msm" else "b_g2_msm_ms"))
        for c in cs:
            p = self.predict(kind, value, c)
            extra = 0.0
            nxt = last
            if p is not None:
                extra = _miss(p, self.los[i], self.his[i], last)
                nxt = max(last, p)
            temp.setdefault(c.seq, {})[kind] = value
            choice.append(c)
            self.dfs(i + 1, cost + extra, nxt)
            choice.pop()
            del temp[c.seq][kind]

    def _leaf(self, cost: float) -> None:
        """A complete assignment (``choice``) of ``cost``: kept among the ends, and the best
        (ties counted, the first-in-first-out one kept) when it is."""
        best, choice = self.best, self.choice
        # (a list first: Cython compiles no generator inside a C method)
        key = tuple([c.seq if c is not None else 1 << 60 for c in choice])
        self.ends.append((cost, key))
        if best[0] is not None and cost > best[0] + 1e-9:
            return
        if best[0] is None or cost < best[0] - 1e-9:
            best[0], best[1], best[2] = cost, (key, list(choice)), 1
        elif key < best[1][0]:
            best[1] = (key, list(choice))
            best[2] += 1
        else:
            best[2] += 1

    def _enter(self, cost: float) -> bool:
        """A step of the search into an assignment that costs ``cost`` so far: False once the
        budget is spent, or when the assignment misses the best by more than the margin."""
        if self.budget <= 0:
            return False
        self.budget -= 1
        best = self.best[0]
        return best is None or not cost > best + self.margin

    def settle_one(self, cs: list[Call]) -> None:
        """``dfs(0, 0.0, -1e18)`` for a single line whose candidates are ``cs`` (as
        ``prep_candidates`` gives them): each candidate's assignment is complete, so each is
        weighed in turn as the search weighs its leaves (the same steps, budget, pruning and
        ties), without the search's recursion and the lines it assigns meanwhile."""
        if not self._enter(0.0):
            return
        choice = self.choice
        if not cs:
            choice.append(None)
            if self._enter(0.0):
                self._leaf(0.0)
            choice.pop()
            return
        ev = self.lines[0]
        kind = ev.kind
        value = _int0(ev.get("prep_msm_ms" if kind == "prep_msm" else "b_g2_msm_ms"))
        for c in cs:
            p = self.predict(kind, value, c)
            cost = 0.0 if p is None else _miss(p, self.los[0], self.his[0], -1e18)
            if self._enter(cost):
                choice.append(c)
                self._leaf(cost)
                choice.pop()


def _miss(p: float, lo: float | None, hi: float | None, last: float) -> float:
    """How far a prep line's predicted print time ``p`` misses its clock bracket ``lo``-``hi``
    (``identity._bracket_miss``) and the print time of the line before it, ``last`` (lines
    print in time order), each within ``TOL_MS``."""
    extra = _bracket_miss(p, lo, hi)
    if p < last - TOL_MS:
        extra += last - TOL_MS - p
    return extra
