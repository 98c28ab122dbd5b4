"""Correlated: match faults to incidents one-to-one (ARCHITECTURE.md section 7).

The matching has maximum cardinality. Among maximum matchings, the faults choose in injection
order: each takes the incident that first held an attributable alert of it (then the lower
incident id in natural order, then the raw id) among those still compatible with a maximum
matching and with the choices before it. The matching never looks at diagnoses: were it to
prefer located pairs, filing many incidents with different guesses would let the scorer pick
the right guess for the agent.

Each choice is a feasibility question, "does a maximum matching remain with this pair fixed?",
answered by Hopcroft-Karp on what is left of the fault's connected component.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping

import networkx as nx

from .evidence import Fault

#: Where an incident first held an attributable alert of a fault: (t, invocation, seq, item).
Position = tuple[float, int, float, int]


def incident_sort_key(incident_id: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order of incident ids: `INC-2` before `INC-10`."""
    return tuple(
        (0, int(chunk), "") if chunk.isdigit() else (1, 0, chunk)
        for chunk in re.split(r"(\d+)", incident_id)
        if chunk
    )


def preference(incident_id: str, first_held: Position) -> tuple[object, ...]:
    """A fault's order over its candidate incidents; the raw id is the final key, so two ids
    equal in natural order (`INC-02`, `INC-2`) never leave the choice to set order."""
    return (first_held, incident_sort_key(incident_id), incident_id)


def match(faults: list[Fault], candidates: Mapping[str, Mapping[str, Position]]) -> dict[str, str]:
    """Fault id -> incident id. `candidates[fault_id]` maps each incident holding an alert
    attributable to the fault at its evidence horizon to where it first held one."""
    graph = nx.Graph()
    by_id = {f.fault_id: f for f in faults}
    for fault in faults:
        for incident in candidates.get(fault.fault_id, {}):
            graph.add_edge(("f", fault.fault_id), ("i", incident))
    result: dict[str, str] = {}
    for nodes in sorted(nx.connected_components(graph), key=lambda c: min(sorted(c))):
        component = sorted((by_id[name] for kind, name in nodes if kind == "f"), key=lambda f: f.rank)
        result.update(_match_component(graph.subgraph(nodes).copy(), component, candidates))
    return result


def _match_component(
    graph: nx.Graph, faults: list[Fault], candidates: Mapping[str, Mapping[str, Position]]
) -> dict[str, str]:
    target = _size(graph)
    chosen: dict[str, str] = {}
    for fault in faults:
        node = ("f", fault.fault_id)
        options = sorted(
            (incident for incident in candidates[fault.fault_id] if graph.has_node(("i", incident))),
            key=lambda incident: preference(incident, candidates[fault.fault_id][incident]),
        )
        for incident in options:
            rest = graph.copy()
            rest.remove_nodes_from([node, ("i", incident)])
            if 1 + _size(rest) == target:
                chosen[fault.fault_id] = incident
                graph.remove_nodes_from([node, ("i", incident)])
                target -= 1
                break
        else:
            graph.remove_node(node)
    return chosen


def _size(graph: nx.Graph) -> int:
    faults: list[Hashable] = [n for n in graph if n[0] == "f"]
    if not faults or graph.number_of_edges() == 0:
        return 0
    size = 0
    for nodes in nx.connected_components(graph):
        part = graph.subgraph(nodes)
        tops = [n for n in part if n[0] == "f"]
        if part.number_of_edges():
            size += len(nx.bipartite.hopcroft_karp_matching(part, top_nodes=tops)) // 2
    return size
