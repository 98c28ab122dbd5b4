"""A memcached server per pod of a `kind: memcached` deployment (memcached 1.6, memcached/memcached).

Why a model of its own: the apps AIOpsLab runs (DeathStarBench hotelReservation's
memcached-profile/-rate/-reserve, socialNetwork's *-memcached) put memcached in front of MongoDB,
and what an SRE sees of it is cache behaviour: misses after a restart (memcached keeps nothing),
evictions under a small `-m`, refused stores of items over `-I`.

Modelled from memcached 1.6.45:

* settings from the container's args (`memcached.c` main: `-m`/`--memory-limit` megabytes through
  atoi, default 64 MB; `-I`/`--max-item-size` with a k/m suffix, default 1 MB); the start-up
  checks it exits on with EX_USAGE (`Item max size cannot be less than 1024 bytes.`, `Cannot set
  item size limit higher than 1/2 of memory max.`). The official image's entrypoint hands args
  that start with `-` to memcached; DeathStarBench's manifests pass none (their
  `MEMCACHED_CACHE_SIZE` env is read by no program in the `memcached` image), so 64 MB applies.
* an item's size is `ITEM_ntotal` (`memcached.h`, `items.c` item_make_header): the 48-byte item
  header, the key and its NUL, 4 bytes of client flags when they are non-zero, the value with its
  `\\r\\n`, and the 8-byte CAS (`use_cas` is on by default). An item over `-I` is refused with
  `SERVER_ERROR object too large for cache` and counted in `store_too_large`; a refused SET also
  unlinks the key's old item (`proto_parser.c` process_update_cmd_start: stale data must not
  persist).
* memory: the item is allocated before the old one is replaced; while the items' bytes plus the
  new one exceed `-m`, the least recently used item goes: an expired one is `reclaimed`, a live
  one `evicted` (`items.c` lru_pull_tail). One LRU for all sizes: slab classes, their chunk
  rounding and the hot/warm/cold segments are not modelled (docs/fidelity.md).
* expiry in virtual seconds (`memcached.h` REALTIME_MAXDELTA: an exptime over 30 days is an
  absolute time, a negative one is already expired); expired items are dropped when touched
  (`get_expired` and `get_misses`).
* the `stats` counters memcached_exporter reads (`memcached.c` server_stats): cmd_get, get_hits,
  get_misses, get_expired, cmd_set (every storage command that allocated, `set_cmds`),
  delete_hits/misses, incr/decr hits/misses, curr_items, total_items, bytes, limit_maxbytes,
  evictions, reclaimed, store_too_large, curr_connections.
"""

from __future__ import annotations

import re
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_MAXBYTES = 64 * 1024 * 1024  # memcached.c settings_init: "default is 64MB"
DEFAULT_ITEM_SIZE_MAX = 1024 * 1024  # "The famous 1MB upper limit."
ITEM_SIZE_MAX_LOWER_LIMIT = 1024
EX_USAGE = 64  # sysexits.h, what memcached exits with on a bad option
ITEM_HEADER = 48  # sizeof(item) on 64-bit Linux
CAS_BYTES = 8
REALTIME_MAXDELTA = 60 * 60 * 24 * 30
KEY_MAX_LENGTH = 250
INCR_MAX = 2**64


class MemcachedUsageError(ValueError):
    """memcached refuses its command line: it prints the line to stderr and exits EX_USAGE."""


@dataclass(frozen=True)
class Settings:
    maxbytes: int = DEFAULT_MAXBYTES
    item_size_max: int = DEFAULT_ITEM_SIZE_MAX


def _atoi(text: str) -> int:
    """C's atoi: optional sign and leading digits, 0 when there are none."""
    found = re.match(r"\s*([+-]?)(\d+)", text)
    if found is None:
        return 0
    return -int(found.group(2)) if found.group(1) == "-" else int(found.group(2))


def _option_values(args: Sequence[str], short: str, long: str) -> list[str]:
    """Values of `-x v`, `-xv`, `--long=v` and `--long v` (getopt_long), in order."""
    values: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if arg in (short, long):
            if nxt is not None:
                values.append(nxt)
                i += 1
        elif arg.startswith(long + "="):
            values.append(arg[len(long) + 1:])
        elif arg.startswith(short) and not arg.startswith("--") and len(arg) > len(short):
            values.append(arg[len(short):])
        i += 1
    return values


def parse_settings(args: Sequence[str]) -> Settings:
    """The memory limit and item size limit memcached starts with; the last option wins."""
    maxbytes, item_size_max = DEFAULT_MAXBYTES, DEFAULT_ITEM_SIZE_MAX
    for value in _option_values(args, "-m", "--memory-limit"):
        maxbytes = _atoi(value) * 1024 * 1024
    for value in _option_values(args, "-I", "--max-item-size"):
        unit = value[-1:]
        if unit in ("k", "K", "m", "M"):
            item_size_max = _atoi(value[:-1]) * (1024 if unit in "kK" else 1024 * 1024)
        else:
            item_size_max = _atoi(value)
    if item_size_max < ITEM_SIZE_MAX_LOWER_LIMIT:
        raise MemcachedUsageError("Item max size cannot be less than 1024 bytes.")
    if item_size_max > maxbytes // 2:
        raise MemcachedUsageError("Cannot set item size limit higher than 1/2 of memory max.")
    return Settings(maxbytes, item_size_max)


def item_size(key: str, value: str, flags: int = 0) -> int:
    """ITEM_ntotal of an item holding `value` under `key` (UTF-8 bytes)."""
    return (ITEM_HEADER + len(key.encode()) + 1 + (4 if flags else 0) + len(value.encode()) + 2 + CAS_BYTES)


@dataclass
class Item:
    value: str
    flags: int
    exptime: float  # 0: never; otherwise the virtual time it expires at
    size: int


class MemcachedServer:
    """One memcached process: its items in LRU order (oldest first) and its `stats`."""

    STAT_NAMES = ("cmd_get", "get_hits", "get_misses", "get_expired", "cmd_set", "delete_hits", "delete_misses",
                  "incr_hits", "incr_misses", "decr_hits", "decr_misses", "total_items", "evictions", "reclaimed",
                  "store_too_large")

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.items: OrderedDict[str, Item] = OrderedDict()
        self.bytes = 0
        self.peak_bytes = 0
        self.stats: dict[str, int] = dict.fromkeys(self.STAT_NAMES, 0)
        self.clients: set[str] = set()  # pods holding a connection (curr_connections)

    @property
    def used_bytes(self) -> int:
        """What the process holds: slab pages once taken are kept, so the high-water mark."""
        return self.peak_bytes

    @property
    def curr_items(self) -> int:
        return len(self.items)

    # --- item life -----------------------------------------------------------------------------
    @staticmethod
    def _exptime(ttl: float, now: float) -> float:
        if ttl == 0:
            return 0.0
        if ttl < 0:
            return now - 1.0  # already expired
        return float(ttl) if ttl > REALTIME_MAXDELTA else now + float(ttl)

    @staticmethod
    def _expired(item: Item, now: float) -> bool:
        return item.exptime != 0.0 and item.exptime <= now

    def _unlink(self, key: str) -> None:
        item = self.items.pop(key)
        self.bytes -= item.size

    def _live(self, key: str, now: float) -> Item | None:
        """The key's item, dropping it when it has expired (memcached's lazy expiry on access)."""
        item = self.items.get(key)
        if item is not None and self._expired(item, now):
            self._unlink(key)
            return None
        return item

    def _make_room(self, size: int, now: float) -> bool:
        """Pull from the LRU tail until `size` more bytes fit under -m (False: nothing left)."""
        while self.bytes + size > self.settings.maxbytes:
            if not self.items:
                return False
            key, item = next(iter(self.items.items()))
            self._unlink(key)
            self.stats["reclaimed" if self._expired(item, now) else "evictions"] += 1
        return True

    def _link(self, key: str, item: Item) -> None:
        if key in self.items:
            self._unlink(key)
        self.items[key] = item
        self.bytes += item.size
        self.peak_bytes = max(self.peak_bytes, self.bytes)
        self.stats["total_items"] += 1

    # --- commands (the text protocol's answers) ------------------------------------------------
    def get(self, keys: Sequence[str], now: float) -> dict[str, str]:
        """`get k1 k2 ...`: the hits; each key is one cmd_get, a hit moves the item to the head."""
        found: dict[str, str] = {}
        for key in keys:
            self.stats["cmd_get"] += 1
            expired = key in self.items and self._expired(self.items[key], now)
            item = self._live(key, now)
            if item is None:
                self.stats["get_misses"] += 1
                self.stats["get_expired"] += 1 if expired else 0
                continue
            self.stats["get_hits"] += 1
            self.items.move_to_end(key)
            found[key] = item.value
        return found

    def store(self, command: str, key: str, value: str, ttl: float, now: float, flags: int = 0) -> str:
        """`set`/`add`: STORED, NOT_STORED (add of a live key) or a SERVER_ERROR line."""
        size = item_size(key, value, flags)
        if size > self.settings.item_size_max:
            self.stats["store_too_large"] += 1
            if command == "set" and key in self.items:
                self._unlink(key)
            return "SERVER_ERROR object too large for cache"
        if not self._make_room(size, now):
            return "SERVER_ERROR out of memory storing object"
        self.stats["cmd_set"] += 1
        if command == "add" and self._live(key, now) is not None:
            self.items.move_to_end(key)  # do_store_item: a failed add still bumps the item
            return "NOT_STORED"
        self._link(key, Item(value, flags, self._exptime(ttl, now), size))
        return "STORED"

    def delete(self, key: str, now: float) -> str:
        if self._live(key, now) is None:
            self.stats["delete_misses"] += 1
            return "NOT_FOUND"
        self._unlink(key)
        self.stats["delete_hits"] += 1
        return "DELETED"

    def arithmetic(self, incr: bool, key: str, delta: int, now: float) -> str:
        """`incr`/`decr`: the new value, NOT_FOUND, or the CLIENT_ERROR for a non-number; incr wraps
        at 2^64, decr stops at 0 (`memcached.c` do_add_delta)."""
        verb = "incr" if incr else "decr"
        item = self._live(key, now)
        if item is None:
            self.stats[f"{verb}_misses"] += 1
            return "NOT_FOUND"
        text = item.value.strip()
        if not text.isdigit() or int(text) >= INCR_MAX:
            return "CLIENT_ERROR cannot increment or decrement non-numeric value"
        number = (int(text) + delta) % INCR_MAX if incr else max(0, int(text) - delta)
        self.stats[f"{verb}_hits"] += 1
        value = str(number)
        self.bytes -= item.size
        item.value, item.size = value, item_size(key, value, item.flags)
        self.bytes += item.size
        self.peak_bytes = max(self.peak_bytes, self.bytes)
        self.items.move_to_end(key)
        return value


# --- key distribution, as each client library spreads keys over its server list ------------------
def gomemcache_pick(key: str, servers: int) -> int:
    """bradfitz/gomemcache `memcache/selector.go` ServerList.PickServer: one server takes every
    key; otherwise crc32 (IEEE) of the key, modulo the number of servers."""
    if servers <= 1:
        return 0
    return zlib.crc32(key.encode()) % servers


def one_at_a_time(key: str) -> int:
    """libhashkit's default hash (awesomized/libmemcached `src/libhashkit/one_at_a_time.cc`); the
    key's bytes are C `char`s, so bytes over 127 enter sign-extended."""
    value = 0
    for byte in key.encode():
        value = (value + (byte if byte < 128 else byte - 256 + 2**32)) & 0xFFFFFFFF
        value = (value + (value << 10)) & 0xFFFFFFFF
        value ^= value >> 6
    value = (value + (value << 3)) & 0xFFFFFFFF
    value ^= value >> 11
    return (value + (value << 15)) & 0xFFFFFFFF


def libmemcached_pick(key: str, servers: int) -> int:
    """libmemcached's default MEMCACHED_DISTRIBUTION_MODULA (`src/libmemcached/hash.cc`
    dispatch_host): the hash modulo the number of servers."""
    if servers <= 1:
        return 0
    return one_at_a_time(key) % servers
