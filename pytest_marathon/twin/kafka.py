"""A Kafka broker per kafka pod, and the producer service code gets from `ctx.kafka`.

What is modelled (docs/design/astronomy-facts.md §4.15, §6):

* The demo's broker is a single KRaft node (upstream 2.2.0 `src/kafka/Dockerfile`) with
  `KAFKA_AUTO_CREATE_TOPICS_ENABLE=true`, so a topic exists once something produces to it or a
  group subscribes, with the broker default of one partition (`num.partitions=1`, Kafka's
  `server.properties` default).
* The chart gives the Deployment no volume (opentelemetry-helm-charts `charts/opentelemetry-demo/
  values.yaml`, component `kafka`): topics, records and committed offsets live in the container's
  filesystem, so every container start begins empty. The engine makes a new `Broker` each start.
* Consumer groups commit offsets (auto-commit: accounting's `EnableAutoCommit=true`,
  `src/accounting/Consumer.cs`; kafka-clients' default `enable.auto.commit=true` for
  fraud-detection). A group with no committed offset starts where `auto.offset.reset` says:
  `earliest` (accounting) at the log start, `latest` (fraud-detection: no reset set, client default)
  at the log end. The position is committed at once when the group first joins, as the clients'
  first auto-commit after their first poll does.
* Lag per group/topic/partition is the log end offset less the committed offset (what the
  collector's kafkametrics receiver reports, `receiver/kafkametricsreceiver/consumer_scraper.go`).

Retention is the twin's: a partition keeps at most `retention_cap` records; beyond that, records
every group has already committed past are dropped (the log start offset moves), so a long run
stays small. Records no group has read yet are kept, so lag is always exact.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RETENTION_CAP = 2_000
OFFSET_RESETS = ("earliest", "latest")


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: str | None
    value: Any
    headers: dict[str, str]
    timestamp: float

    def as_dict(self) -> dict[str, Any]:
        """What a consumer's `consume(ctx, record)` gets (the contract's record)."""
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset, "key": self.key,
                "value": self.value, "headers": dict(self.headers)}


@dataclass
class _Partition:
    start: int = 0  # log start offset (the oldest record kept)
    records: deque[Record] = field(default_factory=deque)

    @property
    def end(self) -> int:
        return self.start + len(self.records)


@dataclass
class Group:
    name: str
    offset_reset: str = "latest"
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    members: set[str] = field(default_factory=set)


class Broker:
    """One broker (a one-node cluster): topics of partitions, consumer groups."""

    def __init__(self, retention_cap: int = RETENTION_CAP, partitions: int = 1) -> None:
        self.retention_cap = retention_cap
        self.default_partitions = partitions
        self.topics: dict[str, list[_Partition]] = {}
        self.groups: dict[str, Group] = {}
        self.produced = 0

    # --- topics -----------------------------------------------------------------------------------
    def _topic(self, topic: str) -> list[_Partition]:
        parts = self.topics.get(topic)
        if parts is None:  # auto.create.topics.enable
            parts = self.topics[topic] = [_Partition() for _ in range(self.default_partitions)]
        return parts

    def produce(self, topic: str, value: Any, key: str | None = None, headers: dict[str, str] | None = None,
                timestamp: float = 0.0) -> tuple[int, int]:
        """Append a record; (partition, offset). One partition: every key lands in 0."""
        parts = self._topic(topic)
        partition = 0 if len(parts) == 1 or key is None else sum(key.encode()) % len(parts)
        log = parts[partition]
        offset = log.end
        log.records.append(Record(topic, partition, offset, key, value, dict(headers or {}), timestamp))
        self.produced += 1
        self._trim(topic, partition)
        return partition, offset

    def end_offset(self, topic: str, partition: int = 0) -> int:
        return self._topic(topic)[partition].end

    def start_offset(self, topic: str, partition: int = 0) -> int:
        return self._topic(topic)[partition].start

    def partitions(self, topic: str) -> int:
        return len(self._topic(topic))

    def _trim(self, topic: str, partition: int) -> None:
        log = self.topics[topic][partition]
        if len(log.records) <= self.retention_cap:
            return
        readers = [g.committed[(topic, partition)] for g in self.groups.values() if (topic, partition) in g.committed]
        floor = min(readers, default=log.end)
        while len(log.records) > self.retention_cap and log.start < floor:
            log.records.popleft()
            log.start += 1

    # --- groups ------------------------------------------------------------------------------------
    def join(self, group: str, topic: str, offset_reset: str = "latest") -> Group:
        """A consumer of `group` subscribes to `topic`; a partition without a committed offset is
        committed at the reset position."""
        if offset_reset not in OFFSET_RESETS:
            raise ValueError(f"offset_reset must be one of {', '.join(OFFSET_RESETS)}, got {offset_reset!r}")
        state = self.groups.get(group)
        if state is None:
            state = self.groups[group] = Group(group, offset_reset)
        for partition, log in enumerate(self._topic(topic)):
            if (topic, partition) not in state.committed:
                state.committed[(topic, partition)] = log.start if offset_reset == "earliest" else log.end
        return state

    def set_members(self, group: str, members: set[str]) -> None:
        if group in self.groups:
            self.groups[group].members = set(members)

    def position(self, group: str, topic: str, partition: int = 0) -> int:
        """The next offset the group reads (never below the log start: retention moved it)."""
        log = self._topic(topic)[partition]
        return max(self.groups[group].committed.get((topic, partition), log.end), log.start)

    def fetch(self, group: str, topic: str, partition: int = 0, max_records: int = 500) -> list[Record]:
        """Records from the group's position on (a poll; `max.poll.records` default 500)."""
        log = self._topic(topic)[partition]
        first = self.position(group, topic, partition) - log.start
        return [log.records[i] for i in range(first, min(len(log.records), first + max_records))]

    def commit(self, group: str, topic: str, partition: int, next_offset: int) -> None:
        self.groups[group].committed[(topic, partition)] = next_offset
        self._trim(topic, partition)

    def lag(self, group: str, topic: str, partition: int = 0) -> int:
        return max(0, self.end_offset(topic, partition) - self.position(group, topic, partition))

    def lag_table(self) -> list[tuple[str, str, int, int]]:
        """(group, topic, partition, lag) for every committed partition, sorted."""
        return [(g.name, topic, partition, self.lag(g.name, topic, partition))
                for g in sorted(self.groups.values(), key=lambda g: g.name)
                for (topic, partition) in sorted(g.committed)]

    @property
    def used_bytes(self) -> int:
        """A rough footprint of the kept records (the JVM heap is the deployment's base memory)."""
        return sum(256 * len(p.records) for parts in self.topics.values() for p in parts)


class KafkaProducer:
    """What `ctx.kafka(addr)` returns. `send` dials the broker each time (sarama reconnects); an
    unreachable broker raises the caller's `RpcError`. Internals are underscore names so
    sandboxed code cannot reach past `send`."""

    __slots__ = ("_send",)

    def __init__(self, send: Callable[[str, Any, str | None, dict[str, str] | None], int]) -> None:
        self._send = send

    def send(self, topic: str, value: Any, key: str | None = None, headers: dict[str, str] | None = None) -> int:
        return self._send(str(topic), value, None if key is None else str(key),
                          {str(k): str(v) for k, v in (headers or {}).items()})
