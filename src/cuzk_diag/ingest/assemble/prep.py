# (Compiled, ``PrepSearch`` is the extension type of prep.pxd: its attributes are struct fields
# and its methods C functions there; prep.pxd declares their types, not the annotations here.)
"""The joint placement of the prep thread's T2/T3 lines: which open call each line of one clock
bracket goes to (``Assembler._solve_prep_lines`` builds the search and applies its result)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuzk_diag.ingest.assemble.blocks import TOL_MS
from cuzk_diag.ingest.assemble.calls import Call, _int0
from cuzk_diag.records import Event


class PrepSearch:
    """The depth-first search of ``Assembler._solve_prep_lines`` over assignments of T2/T3
    lines to calls. (An object rather than nested functions: a nested function that calls
    itself is a reference cycle, which only the garbage collector frees.)"""

    def __init__(
        self,
        lines: list[Event],
        los: list[float | None],
        his: list[float | None],
        candidates: Callable[[Event, dict[int, dict[str, int]]], list[Call]],
        margin: float,
    ) -> None:
        self.lines, self.n, self.los, self.his = lines, len(lines), los, his
        self.candidates, self.margin = candidates, margin
        self.best: list[Any] = [None, None, 0]  # cost, choice, ties
        self.temp: dict[int, dict[str, int]] = {}  # call seq -> fields assigned in this search
        self.choice: list[Call | None] = []
        self.budget = 20000
        self.ends: list[tuple[float, tuple[int, ...]]] = []  # every complete assignment's cost

    def predict(self, ev: Event, c: Call) -> float | None:
        if c.start is None:
            return None
        t = self.temp.get(c.seq, {})
        setup = _int0(c.fields.get("setup_to_split_ms"))
        if ev.kind == "prep_msm":
            return c.start + setup + _int0(ev.fields.get("prep_msm_ms"))
        prep = t.get("prep_msm", _int0(c.fields.get("prep_msm_ms")))
        return c.start + setup + prep + _int0(ev.fields.get("b_g2_msm_ms"))

    def dfs(self, i: int, cost: float, last: float) -> None:
        if self.budget <= 0:
            return
        self.budget -= 1
        best, choice = self.best, self.choice
        if best[0] is not None and cost > best[0] + self.margin:
            return
        if i == self.n:
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
            return
        ev = self.lines[i]
        cs = self.candidates(ev, self.temp)
        if not cs:
            choice.append(None)
            self.dfs(i + 1, cost, last)
            choice.pop()
            return
        temp = self.temp
        # (The line's kind and value, read once for all its candidates.)
        kind = ev.kind
        value = _int0(ev.fields.get("prep_msm_ms" if kind == "prep_msm" else "b_g2_msm_ms"))
        for c in cs:
            p = self.predict(ev, c)
            extra = 0.0
            nxt = last
            if p is not None:
                lo_i, hi_i = self.los[i], self.his[i]
                if lo_i is not None and p < lo_i - TOL_MS:
                    extra += lo_i - TOL_MS - p
                if hi_i is not None and p > hi_i + TOL_MS:
                    extra += p - hi_i - TOL_MS
                if p < last - TOL_MS:
                    extra += last - TOL_MS - p
                nxt = max(last, p)
            temp.setdefault(c.seq, {})[kind] = value
            choice.append(c)
            self.dfs(i + 1, cost + extra, nxt)
            choice.pop()
            del temp[c.seq][kind]
