"""Correlated: match faults to incidents one-to-one (ARCHITECTURE.md section 7).

Among maximum matchings we take one that (1) locates the most faults; then (2) going through
the faults in injection order, gives each the best credit still compatible with the choices
before it (located > matched > unmatched); then (3) again in injection order, pairs each fault
with the lowest incident id still compatible. Steps (1) and (2) fix every fault's credit
without looking at incident names, so relabelling incidents can change which id a fault is
paired with only in exact ties, never a number.

Each step is a feasibility question "is the optimum still reachable with this fault fixed?",
answered by an assignment problem (scipy's linear_sum_assignment) on small exact integer
weights: cardinality dominates located count, which dominates a +1 bonus per fault that must
stay matched. Connected components of the fault-incident graph are solved separately.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment

from .evidence import Fault

NO_EDGE, EDGE, LOCATED_EDGE = 0, 1, 2


def incident_sort_key(incident_id: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order of incident ids: `INC-2` before `INC-10`."""
    return tuple(
        (0, int(chunk), "") if chunk.isdigit() else (1, 0, chunk)
        for chunk in re.split(r"(\d+)", incident_id)
        if chunk
    )


def match(
    faults: list[Fault],
    edges: dict[str, set[str]],
    is_located: Callable[[Fault, str], bool],
) -> dict[str, str]:
    """Fault id -> incident id. `edges[fault_id]` are the incidents holding an alert
    attributable to the fault; `is_located(fault, incident)` reads the incident's final
    diagnosis."""
    graph = nx.Graph()
    by_id = {f.fault_id: f for f in faults}
    for fault in faults:
        for incident in edges.get(fault.fault_id, ()):
            graph.add_edge(("f", fault.fault_id), ("i", incident))
    result: dict[str, str] = {}
    for nodes in nx.connected_components(graph):
        component_faults = sorted(
            (by_id[name] for kind, name in nodes if kind == "f"), key=lambda f: f.rank
        )
        incidents = sorted((name for kind, name in nodes if kind == "i"), key=incident_sort_key)
        levels = np.zeros((len(component_faults), len(incidents)), dtype=np.int64)
        column = {incident: k for k, incident in enumerate(incidents)}
        for row, fault in enumerate(component_faults):
            for incident in edges[fault.fault_id]:
                located = is_located(fault, incident)
                levels[row, column[incident]] = LOCATED_EDGE if located else EDGE
        for row, col in _LexicographicMatching(levels).solve().items():
            result[component_faults[row].fault_id] = incidents[col]
    return result


class _LexicographicMatching:
    """Rows = faults in injection order, columns = incidents in id order, cells = edge level."""

    def __init__(self, levels: np.ndarray) -> None:
        self.levels = levels
        rows = levels.shape[0]
        # cardinality first (each edge worth more than all located bonuses), then located
        self.base = np.where(levels > NO_EDGE, rows + 1 + (levels == LOCATED_EDGE), 0)
        self.scale = rows + 2  # above the total "must stay matched" bonus
        self.allowed = levels > NO_EDGE
        self.required = np.zeros(rows, dtype=bool)
        self.optimum = 0
        self.optimum, self.current = self._solve(self.allowed, self.required)

    def _solve(self, allowed: np.ndarray, required: np.ndarray) -> tuple[int, dict[int, int]]:
        weights = np.where(allowed, self.scale * self.base + required[:, None], 0)
        rows, cols = linear_sum_assignment(weights, maximize=True)
        pairs = {int(r): int(c) for r, c in zip(rows, cols) if weights[r, c] > 0}
        return int(weights[rows, cols].sum()) // self.scale, pairs

    def _feasible(self, allowed: np.ndarray, required: np.ndarray) -> dict[int, int] | None:
        """A matching with the optimal value that matches every required row, or None."""
        weights = np.where(allowed, self.scale * self.base + required[:, None], 0)
        rows, cols = linear_sum_assignment(weights, maximize=True)
        target = self.scale * self.optimum + int(required.sum())
        if int(weights[rows, cols].sum()) != target:
            return None
        return {int(r): int(c) for r, c in zip(rows, cols) if weights[r, c] > 0}

    def solve(self) -> dict[int, int]:
        for row in range(self.levels.shape[0]):
            self._fix_credit(row)
        for row in range(self.levels.shape[0]):
            if self.required[row]:
                self._fix_incident(row)
        return self.current

    def _fix_credit(self, row: int) -> None:
        required = self.required.copy()
        required[row] = True
        for wanted in (LOCATED_EDGE, EDGE):
            allowed = self.allowed.copy()
            allowed[row] &= self.levels[row] == wanted
            if row in self.current and self.levels[row, self.current[row]] == wanted:
                solution: dict[int, int] | None = self.current
            else:
                solution = self._feasible(allowed, required)
            if solution is not None:
                self.allowed, self.required, self.current = allowed, required, solution
                return
        self.allowed[row] = False

    def _fix_incident(self, row: int) -> None:
        for col in np.flatnonzero(self.allowed[row]):
            if col >= self.current[row]:
                break
            allowed = self.allowed.copy()
            allowed[row] = False
            allowed[row, col] = True
            solution = self._feasible(allowed, self.required)
            if solution is not None:
                self.allowed, self.current = allowed, solution
                return
        chosen = self.current[row]
        self.allowed[row] = False
        self.allowed[row, chosen] = True
