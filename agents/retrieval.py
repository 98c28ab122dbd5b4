"""RAG's retrieval over live telemetry (paper, Appendix G, "RAG"); Keep-agent reuses it unchanged.

Each rule below implements one sentence of the paper:

* "It retrieves from the live telemetry of that invocation and reads the topology, then the logs
  and traces of up to five services named in the alerts, most recently alerting first, within
  45 s." -> `get_topology`, then `get_logs` and `get_traces` (the interface's default window) for
  at most `MAX_SERVICES` workloads named by alert labels, ordered by their latest alert's firing
  time (newest first, ties by name); no read is started once `RETRIEVAL_S` seconds have passed
  (nor past the invocation's deadline). This wall-clock bound only cuts retrieval short on a slow
  backend; it never reorders or changes a read, so with a backend that answers in time the reads
  are a pure function of the alert history.
* "Each tool answer, cut to 1200 characters, is one document." -> `DOC_CHARS`. A read that fails
  is not a document (an error message is not telemetry).
* "Then it ranks the documents against a query made of every alert's rule name and label values,
  and the top five enter the prompt" -> Okapi BM25 (k1 = 1.2, b = 0.75, the usual constants)
  over lower-cased alphanumeric terms, ties broken by retrieval order; `TOP_K` documents.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_marathon.agents.labels import workload_of
from pytest_marathon.agents.protocol import ToolClient
from pytest_marathon.agents.tooling import call_tool

MAX_SERVICES = 5
RETRIEVAL_S = 45.0
DOC_CHARS = 1200
TOP_K = 5
BM25_K1 = 1.2
BM25_B = 0.75
_TERM = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Document:
    source: str  # the read that produced it, e.g. "get_logs service=cartservice"
    text: str


def terms(text: str) -> list[str]:
    return _TERM.findall(text.lower())


def alerting_services(alerts: Sequence[Mapping[str, Any]], limit: int = MAX_SERVICES) -> list[str]:
    """Workloads named by the alerts, the most recently alerting first (ties by name)."""
    latest: dict[str, float] = {}
    for alert in alerts:
        service = workload_of(alert.get("labels") or {})
        if service is None:
            continue
        fired = float(alert.get("fired_at") or 0.0)
        latest[service] = max(fired, latest.get(service, fired))
    ranked = sorted(latest, key=lambda s: (-latest[s], s))
    return ranked[:limit]


def query_of(alerts: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every alert's rule name and label values, as terms."""
    words: list[str] = []
    for alert in alerts:
        words.extend(terms(str(alert.get("alertname", ""))))
        labels = alert.get("labels") or {}
        for key in sorted(labels):
            words.extend(terms(str(labels[key])))
    return words


def retrieve(tools: ToolClient, alerts: Sequence[Mapping[str, Any]], deadline: float) -> list[Document]:
    """The invocation's documents, in reading order."""
    stop = min(time.monotonic() + RETRIEVAL_S, deadline)
    reads: list[tuple[str, dict[str, Any]]] = [("get_topology", {})]
    for service in alerting_services(alerts):
        reads.append(("get_logs", {"service": service}))
        reads.append(("get_traces", {"service": service}))
    documents = []
    for tool, args in reads:
        if time.monotonic() >= stop:
            break
        outcome = call_tool(tools, tool, **args)
        if not outcome.ok:
            continue
        source = " ".join([tool, *(f"{k}={v}" for k, v in sorted(args.items()))])
        text = json.dumps(outcome.result, sort_keys=True, separators=(",", ":"))[:DOC_CHARS]
        documents.append(Document(source, text))
    return documents


def bm25_rank(documents: Sequence[Document], query: Sequence[str], k: int = TOP_K) -> list[Document]:
    """The `k` best documents by Okapi BM25 against `query`, best first; ties keep reading order."""
    if not documents:
        return []
    bags = [Counter(terms(doc.text)) for doc in documents]
    lengths = [sum(bag.values()) for bag in bags]
    average = sum(lengths) / len(lengths) or 1.0
    n = len(documents)
    weights = Counter(query)
    scores = []
    for index, (bag, length) in enumerate(zip(bags, lengths, strict=True)):
        score = 0.0
        for term in sorted(weights):
            frequency = bag.get(term, 0)
            if not frequency:
                continue
            containing = sum(1 for other in bags if term in other)
            idf = math.log(1.0 + (n - containing + 0.5) / (containing + 0.5))
            norm = frequency + BM25_K1 * (1.0 - BM25_B + BM25_B * length / average)
            score += weights[term] * idf * frequency * (BM25_K1 + 1.0) / norm
        scores.append((-score, index))
    return [documents[index] for _, index in sorted(scores)[:k]]


def render_documents(documents: Sequence[Document]) -> str:
    blocks = [f"[{i}] {doc.source}\n{doc.text}" for i, doc in enumerate(documents, start=1)]
    return "\n\n".join(blocks) or "(no telemetry could be read)"
