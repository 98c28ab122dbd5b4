"""A MongoDB server per pod of a `kind: mongodb` deployment: databases of collections of documents,
users with roles, and the server's own error texts.

The modelled server is MongoDB 4.4.6, the `mongo:4.4.6` image DeathStarBench's hotelReservation
deploys (`hotelReservation/kubernetes/mongodb-*/` manifests). Documents are plain dicts; an
insert without `_id` gets one from a per-server counter (a real server's ObjectId is time- and
process-dependent; the twin's is a deterministic 24-hex string). Commands are the ones service
code needs: find (equality, `$in`, `$nin`, `$gt/$gte/$lt/$lte`, `$ne`, `$exists`, dotted paths;
sort, limit), insert, update (`$set`, `$inc`, `$unset`, upsert), delete, count, and the user
management commands the shell drives (`twin/mongoshell.py`).

Error texts (mongodb/mongo r4.4.6):
* AuthenticationFailed (18) `Authentication failed.` for an unknown user and a wrong password
  alike (`src/mongo/db/auth/sasl_commands.cpp`, the SCRAM conversation's failure);
* Unauthorized (13) `not authorized on <db> to execute command <command as BSON text>`
  (`src/mongo/db/commands.cpp` `CommandHelpers::uassertCommandRunWithMajority`/
  `checkAuthorization`; the command is printed with `BSONObj::toString`, seen in 4.4 shells as
  `{ createUser: "x", pwd: "xxx", roles: [ ... ], writeConcern: { w: "majority", wtimeout:
  600000.0 }, lsid: { id: UUID("...") }, $db: "admin" }`), and `command <name> requires
  authentication` for a connection that has not authenticated;
* DuplicateKey (11000) `E11000 duplicate key error collection: <db>.<coll> index: _id_ dup key:
  { _id: <value> }` (`src/mongo/db/storage/duplicate_key_error_info.cpp`);
* UserNotFound (11) `Could not find user "<user>" for db "<db>"`
  (`src/mongo/db/auth/authz_manager_external_state_local.cpp` getUserDescription);
* DuplicateKey (51003) `User "<user>@<db>" already exists` (`src/mongo/db/commands/
  user_management_commands.cpp` createUser; the shell prefixes `couldn't add user: `);
* RoleNotFound (31) `Could not find role: <role>@<db>` (user_management_commands.cpp).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon import yamlio
from pytest_marathon.twin.errors import MongoError

MONGO_VERSION = "4.4.6"
DEFAULT_PORT = 27017

# built-in roles (docs "Built-In Roles", src/mongo/db/auth/builtin_roles.cpp): what each grants on
# its own database, and the *AnyDatabase / root roles on `admin` that grant on every database
_READ = frozenset({"find", "count", "usersInfo-self"})
_WRITE = _READ | {"insert", "update", "delete"}
_USER_ADMIN = frozenset({"createUser", "dropUser", "grantRolesToUser", "revokeRolesFromUser", "usersInfo"})
DB_ROLES: dict[str, frozenset[str]] = {
    "read": _READ,
    "readWrite": _WRITE,
    "dbAdmin": frozenset({"count"}),
    "userAdmin": _USER_ADMIN,
    "dbOwner": _WRITE | _USER_ADMIN,
}
ANY_DB_ROLES: dict[str, frozenset[str]] = {
    "readAnyDatabase": _READ,
    "readWriteAnyDatabase": _WRITE,
    "userAdminAnyDatabase": _USER_ADMIN,
    "dbAdminAnyDatabase": frozenset({"count"}),
    "root": _WRITE | _USER_ADMIN,
}
BUILTIN_ROLES = frozenset(DB_ROLES) | frozenset(ANY_DB_ROLES) | {"clusterMonitor", "clusterAdmin", "backup", "restore"}
COMMAND_ACTION = {"find": "find", "count": "count", "insert": "insert", "update": "update", "delete": "delete"}
OPCOUNTER_OF = {"find": "query", "count": "command", "insert": "insert", "update": "update", "delete": "delete"}


# --- BSON text --------------------------------------------------------------------------------------
def bson_text(value: Any) -> str:
    """A value as the server prints a BSONObj in messages (`BSONObj::toString`): `{ a: "x", n: 1 }`,
    doubles with a decimal point, arrays `[ 1, 2 ]`, empty `{}` / `[]`."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {bson_text(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[ " + ", ".join(bson_text(v) for v in value) + " ]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, Uuid):
        return f'UUID("{value.text}")'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e16 else f"{value:.1f}"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)


@dataclass(frozen=True)
class Uuid:
    """A BSON UUID (printed `UUID("...")`), made from a seed string so runs repeat."""

    text: str

    @classmethod
    @functools.lru_cache(maxsize=4096)  # noqa: B019 (the class lives as long as the process)
    def of(cls, seed: str) -> Uuid:
        h = hashlib.sha256(seed.encode()).hexdigest()
        return cls(f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}")


# --- copies ---------------------------------------------------------------------------------------------
_IMMUTABLE = frozenset((str, int, float, bool, type(None), bytes, Uuid))


def clone(value: Any) -> Any:
    """A deep copy of a document: dicts and lists are rebuilt, immutable leaves (the scalars and
    `Uuid`) are shared, anything else goes through `copy.deepcopy`. Documents are nearly all dicts,
    lists and scalars, which `deepcopy`'s memo and dispatch make several times slower to copy."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: item if type(item) in _IMMUTABLE else clone(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _IMMUTABLE else clone(item) for item in value]
    return copy.deepcopy(value)


# --- query matching ---------------------------------------------------------------------------------
_MISSING = object()


def _path(doc: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return _MISSING
    return doc


def _order_key(value: Any) -> tuple[int, Any]:
    """MongoDB's comparison order across types (null < numbers < strings < objects < arrays < bool),
    enough for sort and range operators on the values documents hold."""
    if value is _MISSING or value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (5, value)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, dict):
        return (3, json.dumps(value, sort_keys=True, default=str))
    return (4, json.dumps(value, sort_keys=True, default=str))


def _equal(actual: Any, wanted: Any) -> bool:
    if isinstance(actual, list) and not isinstance(wanted, list):
        return any(_equal(a, wanted) for a in actual)  # an array field matches any of its elements
    if actual is _MISSING:
        return wanted is None
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return type(actual) is type(wanted) and actual == wanted
    return bool(actual == wanted)


def _compare(actual: Any, op: str, wanted: Any) -> bool:
    values = actual if isinstance(actual, list) else [actual]
    for value in values:
        if value is _MISSING:
            continue
        a, b = _order_key(value), _order_key(wanted)
        if a[0] != b[0]:
            continue  # range operators only compare within a type bracket
        if (op == "$gt" and a > b) or (op == "$gte" and a >= b) or (op == "$lt" and a < b) or (op == "$lte" and a <= b):
            return True
    return False


_PLAIN_EQUALITY = frozenset((str, int, float))


def _plain_equalities(query: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """The filter as (field, value) pairs when every condition is a top-level field equal to a
    string or a number (what repositories' `findBy<Field>` send), else None."""
    pairs = []
    for key, wanted in query.items():
        if type(wanted) not in _PLAIN_EQUALITY or "." in key or key.startswith("$"):
            return None
        pairs.append((key, wanted))
    return pairs


#: Operators a filter's other conditions may use beside indexed equalities: none of them can
#: raise (`$in`/`$nin` only with an array), so checking them on the index's candidates alone
#: answers, and fails, exactly as the scan over every document does.
_NEVER_RAISING = frozenset(("$eq", "$ne", "$in", "$nin", "$exists"))


def _indexable_split(query: dict[str, Any]) -> tuple[list[tuple[str, Any]], dict[str, Any]] | None:
    """(equalities an index serves, the other conditions) of a filter: the equalities are
    top-level fields equal to a string or an integer; every other condition must be one that
    cannot raise (see `_NEVER_RAISING`). None when there is no such equality or a condition
    might raise, or names a top-level operator (`$or`, `$and`): those filters are scanned."""
    pairs: list[tuple[str, Any]] = []
    rest: dict[str, Any] = {}
    for key, wanted in query.items():
        if key.startswith("$"):
            return None
        if type(wanted) in _INDEXABLE and "." not in key:
            pairs.append((key, wanted))
            continue
        if isinstance(wanted, dict) and wanted and all(str(op).startswith("$") for op in wanted):
            for op, argument in wanted.items():
                if op not in _NEVER_RAISING or (op in ("$in", "$nin") and not isinstance(argument, list)):
                    return None
        rest[key] = wanted
    return (pairs, rest) if pairs else None


#: Commands that only read documents. Any other command may change them, so it ends the validity
#: of every equality index of its data directory (a new command is safe by default).
_READ_ONLY = frozenset(("find", "count"))
#: A collection this small is scanned: an index would save less than it costs to build.
_INDEX_MIN_DOCS = 8
_INDEXABLE = (str, int)


def _equality_index(docs: list[dict[str, Any]], fields: tuple[str, ...]) -> dict[tuple[Any, ...], list[int]] | None:
    """value tuple -> positions (ascending) of the documents holding exactly those values, or None
    when some document holds a value of another type in one of the fields (an array matches by
    element, a bool or float by MongoDB's cross-type rules: those collections are scanned). A
    document missing a field never equals a string or a number, so it is left out."""
    index: dict[tuple[Any, ...], list[int]] = {}
    for i, doc in enumerate(docs):
        values = []
        for name in fields:
            value = doc.get(name, _MISSING)
            if value is _MISSING:
                break
            if type(value) not in _INDEXABLE:
                return None
            values.append(value)
        else:
            index.setdefault(tuple(values), []).append(i)
    return index


def matching(docs: list[dict[str, Any]], query: dict[str, Any], limit: int = 0) -> list[dict[str, Any]]:
    """The documents of `docs` that satisfy `query`, in order (the first `limit`, if given)."""
    return [docs[i] for i in matching_indexes(docs, query, limit)]


def matching_indexes(docs: list[dict[str, Any]], query: dict[str, Any], limit: int = 0) -> list[int]:
    """The positions in `docs` of the documents that satisfy `query`, in order; with a `limit`,
    the scan ends at that many (a `findOne` stops at its first match, as a collection scan does).
    A filter of plain equalities compares each field directly; a field whose value is not of the
    wanted's type (an array, a bool, a missing field) is left to `_equal`, which knows MongoDB's
    rules for it."""
    pairs = _plain_equalities(query)
    if pairs is None:
        if not limit:
            return [i for i, doc in enumerate(docs) if matches(doc, query)]
        hits = []
        for i, doc in enumerate(docs):
            if matches(doc, query):
                hits.append(i)
                if len(hits) == limit:
                    break
        return hits
    found = []
    for i, doc in enumerate(docs):
        for key, wanted in pairs:
            actual = doc.get(key, _MISSING)
            if type(actual) is type(wanted):
                if actual != wanted:
                    break
            elif not _equal(actual, wanted):
                break
        else:
            found.append(i)
            if len(found) == limit:
                break
    return found


def matches(doc: dict[str, Any], query: dict[str, Any]) -> bool:
    """Whether `doc` satisfies a find filter. Raises MongoError(2, BadValue) for an operator the
    twin does not know, as the server does for an unknown one (`unknown operator: $foo`)."""
    for key, cond in query.items():
        if key == "$and":
            if not all(matches(doc, q) for q in cond):
                return False
            continue
        if key == "$or":
            if not any(matches(doc, q) for q in cond):
                return False
            continue
        if key.startswith("$"):
            raise MongoError(2, f"unknown top level operator: {key}", "server", "BadValue")
        actual = _path(doc, key)
        if isinstance(cond, dict) and cond and all(str(k).startswith("$") for k in cond):
            for op, wanted in cond.items():
                if not _operator(actual, op, wanted):
                    return False
        elif not _equal(actual, cond):
            return False
    return True


def _operator(actual: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return _equal(actual, wanted)
    if op == "$ne":
        return not _equal(actual, wanted)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return _compare(actual, op, wanted)
    if op == "$in":
        if not isinstance(wanted, list):
            raise MongoError(2, "$in needs an array", "server", "BadValue")
        return any(_equal(actual, w) for w in wanted)
    if op == "$nin":
        if not isinstance(wanted, list):
            raise MongoError(2, "$nin needs an array", "server", "BadValue")
        return not any(_equal(actual, w) for w in wanted)
    if op == "$exists":
        return (actual is not _MISSING) == bool(wanted)
    raise MongoError(2, f"unknown operator: {op}", "server", "BadValue")


def _set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        doc = doc.setdefault(part, {})
    doc[parts[-1]] = value


def _unset_path(doc: dict[str, Any], dotted: str) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        doc = doc.get(part, {})
        if not isinstance(doc, dict):
            return
    doc.pop(parts[-1], None)


def apply_update(doc: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The document after an update: `$set`, `$inc`, `$unset`, or a replacement document."""
    if not any(str(k).startswith("$") for k in update):
        return {"_id": doc.get("_id"), **clone(update)} if "_id" in doc else clone(update)
    new = clone(doc)
    for op, fields in update.items():
        if op == "$set":
            for k, v in fields.items():
                _set_path(new, k, clone(v))
        elif op == "$inc":
            for k, v in fields.items():
                current = _path(new, k)
                if current is _MISSING:
                    current = 0
                if not isinstance(current, (int, float)) or isinstance(current, bool):
                    raise MongoError(14, f"Cannot apply $inc to a value of non-numeric type. {{_id: "
                                         f"{_scalar(doc.get('_id'))}}} has the field '{k}' of non-numeric type "
                                         f"{type(current).__name__}", "server", "TypeMismatch")
                _set_path(new, k, current + v)
        elif op == "$unset":
            for k in fields:
                _unset_path(new, k)
        else:
            raise MongoError(9, f"Unknown modifier: {op}. Expected a valid update modifier or pipeline-style "
                                "update specified as an array", "server", "FailedToParse")
    return new


# --- data and users ------------------------------------------------------------------------------------
@dataclass
class User:
    user: str
    db: str
    pwd: str
    roles: list[tuple[str, str]]  # (role, db)
    user_id: Uuid


@dataclass
class MongoData:
    """What lives in the data directory (`/data/db`): databases and users. A deployment with a
    volume keeps one across container starts; without one each start begins from the init."""

    dbs: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    users: dict[tuple[str, str], User] = field(default_factory=dict)  # (db, user)
    next_id: int = 0
    # Equality indexes of the reads (`MongoServer._matching`): positions only, valid while no command
    # that may write has run since they were built (`generation` counts those commands).
    generation: int = field(default=0, compare=False)
    indexes: dict[tuple[str, str, tuple[str, ...]], tuple[int, dict[tuple[Any, ...], list[int]] | None]] = field(
        default_factory=dict, repr=False, compare=False)

    def new_id(self, seed: str) -> str:
        self.next_id += 1
        return hashlib.sha256(f"{seed}/{self.next_id}".encode()).hexdigest()[:24]

    def add_user(self, user: str, db: str, pwd: str, roles: Iterable[Any]) -> User:
        parsed = [_role(r, db) for r in roles]
        for role, role_db in parsed:
            if role not in BUILTIN_ROLES:
                raise MongoError(31, f"Could not find role: {role}@{role_db}", "server", "RoleNotFound")
        if (db, user) in self.users:
            raise MongoError(51003, f'User "{user}@{db}" already exists', "server", "Location51003")
        made = User(user, db, pwd, parsed, Uuid.of(f"user/{db}/{user}"))
        self.users[(db, user)] = made
        return made


def _role(value: Any, db: str) -> tuple[str, str]:
    """A role as `createUser` takes it: `"read"` (on the command's database) or `{role, db}`."""
    if isinstance(value, str):
        return (value, db)
    if isinstance(value, dict) and "role" in value:
        return (str(value["role"]), str(value.get("db", db)))
    raise MongoError(2, "Role names must be either strings or objects", "server", "BadValue")


def load_init(app_path: Path, relative: str | None) -> dict[str, Any]:
    """The init file app.yaml names (`datastore.init`, YAML or JSON, relative to the app folder):
    `users: [{user, pwd, db, roles}]`, `data: {<db>: {<collection>: [documents]}}`. It stands for
    the scripts an image's /docker-entrypoint-initdb.d runs on an empty data directory."""
    if not relative:
        return {}
    loaded = _parsed_init((app_path.parent / relative).read_text())
    if not isinstance(loaded, dict):
        raise ValueError(f"{relative}: expected a mapping with users and data")
    return loaded


@functools.lru_cache(maxsize=256)
def _parsed_init(text: str) -> Any:
    """An init file parsed once per process: every mongod start of every twin reads the same file
    (Train Ticket starts 40 at once), and `initial_data` only reads the result, copying the
    documents it stores."""
    return yamlio.safe_load(text) or {}


def initial_data(init: dict[str, Any], root_user: str = "", root_pwd: str = "") -> MongoData:
    """A fresh data directory: the image's root user (MONGO_INITDB_ROOT_USERNAME/PASSWORD, created
    by docker-library/mongo `docker-entrypoint.sh` in `admin` with role root), then the init's users
    and documents."""
    data = MongoData()
    if root_user:
        data.add_user(root_user, "admin", root_pwd, [{"role": "root", "db": "admin"}])
    for entry in init.get("users", []) or []:
        data.add_user(str(entry["user"]), str(entry.get("db", "admin")), str(entry.get("pwd", "")),
                      entry.get("roles", []))
    for db, colls in sorted((init.get("data") or {}).items()):
        for coll, docs in sorted((colls or {}).items()):
            target = data.dbs.setdefault(str(db), {}).setdefault(str(coll), [])
            for doc in docs or []:
                doc = clone(doc)
                doc.setdefault("_id", data.new_id(f"{db}.{coll}"))
                target.append(doc)
    return data


# --- the server --------------------------------------------------------------------------------------
Principal = tuple[str, str] | None  # (authentication db, user) or unauthenticated


class MongoServer:
    """One mongod process. Counters (opcounters, asserts, connections) are the process's and start
    at zero with it; `data` may outlive it (a volume)."""

    def __init__(self, data: MongoData, auth: bool, tls_mode: str = "disabled") -> None:
        self.data = data
        self.auth = auth
        # net.tls.mode: under requireTLS the server ends every plaintext connection before
        # reading a command (src/mongo/transport/session_workflow.cpp via the TLS layer,
        # "The server is configured to only allow SSL connections", SSLHandshakeFailed)
        self.tls_mode = tls_mode
        self.tls_refusals = 0  # plaintext connections ended (the drivers number their attempts)
        self.opcounters = {"insert": 0, "query": 0, "update": 0, "delete": 0, "getmore": 0, "command": 0}
        self.asserts = {"regular": 0, "warning": 0, "msg": 0, "user": 0, "rollovers": 0}
        self.clients: set[str] = set()  # pods holding a pooled connection
        self.shell_runs = 0

    # --- authentication ------------------------------------------------------------------------------
    def mechanism(self, user: str, source: str) -> str:
        """The SCRAM mechanism a driver negotiates: the server lists `saslSupportedMechs` for a user
        it knows (users created on 4.x have both, the driver takes SCRAM-SHA-256); for an unknown user
        the list is empty and drivers fall back to SCRAM-SHA-1 (specifications `auth.rst`,
        "Default Authentication Mechanism")."""
        return "SCRAM-SHA-256" if (source, user) in self.data.users else "SCRAM-SHA-1"

    def authenticate(self, user: str, pwd: str, source: str) -> Principal:
        found = self.data.users.get((source, user))
        if found is None or found.pwd != pwd:
            self.asserts["user"] += 1
            raise MongoError(18, "Authentication failed.", "auth", "AuthenticationFailed")
        return (source, user)

    # --- authorization ------------------------------------------------------------------------------
    def allowed(self, principal: Principal, db: str, action: str) -> bool:
        if not self.auth:
            return True
        if principal is None:
            # the localhost exception: with no user at all, a local connection may create the first
            # one in admin (docs "Localhost Exception")
            return action == "createUser" and db == "admin" and not self.data.users
        user = self.data.users.get(principal)
        if user is None:
            return False  # dropped while the connection stayed authenticated
        for role, role_db in user.roles:
            if role_db == db and action in DB_ROLES.get(role, ()):
                return True
            if role_db == "admin" and action in ANY_DB_ROLES.get(role, ()):
                return True
        return False

    def check(self, principal: Principal, db: str, command: dict[str, Any]) -> None:
        name = next(iter(command))
        action = COMMAND_ACTION.get(name, name)
        if self.allowed(principal, db, action):
            return
        self.asserts["user"] += 1
        if principal is None:
            raise MongoError(13, f"command {name} requires authentication", "server", "Unauthorized")
        raise MongoError(13, f"not authorized on {db} to execute command {bson_text({**command, '$db': db})}",
                         "server", "Unauthorized")

    # --- commands -------------------------------------------------------------------------------------
    def run(self, principal: Principal, db: str, command: dict[str, Any]) -> dict[str, Any]:
        """One command (`{find: coll, filter: ...}`, `{insert: coll, documents: [...]}`, ...). The
        command as passed is what an Unauthorized message prints, so callers add `lsid` etc."""
        name = next(iter(command))
        self.opcounters[OPCOUNTER_OF.get(name, "command")] += 1
        self.check(principal, db, command)
        if name not in _READ_ONLY:
            self.data.generation += 1
        body = {k: v for k, v in command.items() if k not in ("lsid", "$db", "writeConcern")}
        try:
            return getattr(self, f"_cmd_{name}")(db, body)
        except MongoError:
            self.asserts["user"] += 1
            raise

    def _coll(self, db: str, name: str, create: bool = False) -> list[dict[str, Any]]:
        if create:
            return self.data.dbs.setdefault(db, {}).setdefault(name, [])
        return self.data.dbs.get(db, {}).get(name, [])

    def _cmd_find(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        sort = cmd.get("sort") or {}
        limit = int(cmd.get("limit") or 0)
        # without a sort the first matches in natural order are the result: stop the scan there
        docs = self._matching(db, cmd["find"], cmd.get("filter") or {}, 0 if sort else abs(limit))
        for key, direction in reversed(list(sort.items())):
            docs.sort(key=lambda d, k=key: _order_key(_path(d, k)), reverse=direction < 0)
        if limit:
            docs = docs[:abs(limit)]
        return {"cursor": {"firstBatch": clone(docs), "id": 0, "ns": f"{db}.{cmd['find']}"}, "ok": 1.0}

    def _cmd_count(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"n": len(self._matching(db, cmd["count"], cmd.get("query") or {})), "ok": 1.0}

    def _matching(self, db: str, name: str, query: dict[str, Any], limit: int = 0) -> list[dict[str, Any]]:
        """`matching` over a collection, through an equality index when the filter's equalities
        are to strings or integers (what Spring Data's `findBy<Field>And<Field>` sends, and the
        count with an `$in` over statuses beside them by which ts-order-service's security check
        counts an account's valid orders): the same documents in the same order as the scan,
        which every other filter still takes. The index's candidates are checked against the
        filter's other conditions."""
        docs = self._coll(db, name)
        split = _indexable_split(query) if len(docs) >= _INDEX_MIN_DOCS else None
        if split is None:
            return matching(docs, query, limit)
        pairs, rest = split
        wanted = dict(pairs)
        fields = tuple(sorted(wanted))
        data = self.data
        key = (db, name, fields)
        built = data.indexes.get(key)
        if built is None or built[0] != data.generation:
            built = data.indexes[key] = (data.generation, _equality_index(docs, fields))
        index = built[1]
        if index is None:
            return matching(docs, query, limit)
        hits = index.get(tuple(wanted[f] for f in fields), ())
        if rest:
            return matching([docs[i] for i in hits], rest, limit)
        if limit:
            hits = hits[:limit]
        return [docs[i] for i in hits]

    def _cmd_insert(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = self._coll(db, cmd["insert"], create=True)
        n = 0
        for doc in cmd.get("documents", []):
            doc = clone(doc)
            doc.setdefault("_id", self.data.new_id(f"{db}.{cmd['insert']}"))
            self._unique(db, cmd["insert"], coll, doc["_id"])
            coll.append(doc)
            n += 1
        return {"n": n, "ok": 1.0, "inserted_ids": [d.get("_id") for d in coll[len(coll) - n:]]}

    def _unique(self, db: str, name: str, coll: list[dict[str, Any]], _id: Any) -> None:
        if any(_equal(d.get("_id", _MISSING), _id) and type(d.get("_id")) is type(_id) for d in coll):
            raise MongoError(11000, f"E11000 duplicate key error collection: {db}.{name} index: _id_ dup key: "
                                    f"{{ _id: {_scalar(_id)} }}", "server", "DuplicateKey")

    def _cmd_update(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        name = cmd["update"]
        coll = self._coll(db, name, create=True)
        matched = modified = 0
        upserted: list[Any] = []
        for spec in cmd.get("updates", []):
            query, update = spec.get("q") or {}, spec.get("u") or {}
            hits = matching_indexes(coll, query, 0 if spec.get("multi") else 1)
            for i in hits:
                new = apply_update(coll[i], update)
                matched += 1
                if new != coll[i]:
                    coll[i] = new
                    modified += 1
            if not hits and spec.get("upsert"):
                # the new document: the query's equality fields, then the update applied
                seed = {k: v for k, v in query.items() if not k.startswith("$") and not isinstance(v, dict)}
                doc = apply_update(seed, update) if any(str(k).startswith("$") for k in update) else {**update}
                doc.setdefault("_id", seed.get("_id", self.data.new_id(f"{db}.{name}")))
                self._unique(db, name, coll, doc["_id"])
                coll.append(doc)
                upserted.append(doc["_id"])
        return {"n": matched + len(upserted), "nModified": modified, "upserted": upserted, "ok": 1.0}

    def _cmd_delete(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = self._coll(db, cmd["delete"])
        n = 0
        for spec in cmd.get("deletes", []):
            hits = matching_indexes(coll, spec.get("q") or {}, 1 if int(spec.get("limit", 0)) == 1 else 0)
            for i in reversed(hits):
                del coll[i]
                n += 1
        return {"n": n, "ok": 1.0}

    # --- user management (the shell's helpers send these) -----------------------------------------------
    def _user(self, db: str, name: str) -> User:
        found = self.data.users.get((db, name))
        if found is None:
            raise MongoError(11, f'Could not find user "{name}" for db "{db}"', "server", "UserNotFound")
        return found

    def _cmd_createUser(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:  # noqa: N802 - command name
        self.data.add_user(str(cmd["createUser"]), db, str(cmd.get("pwd", "")), cmd.get("roles", []))
        return {"ok": 1.0}

    def _cmd_dropUser(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        self._user(db, str(cmd["dropUser"]))
        del self.data.users[(db, str(cmd["dropUser"]))]
        return {"ok": 1.0}

    def _cmd_grantRolesToUser(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        user = self._user(db, str(cmd["grantRolesToUser"]))
        for role in [_role(r, db) for r in cmd.get("roles", [])]:
            if role[0] not in BUILTIN_ROLES:
                raise MongoError(31, f"Could not find role: {role[0]}@{role[1]}", "server", "RoleNotFound")
            if role not in user.roles:
                user.roles.append(role)
        return {"ok": 1.0}

    def _cmd_revokeRolesFromUser(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        user = self._user(db, str(cmd["revokeRolesFromUser"]))
        for role in [_role(r, db) for r in cmd.get("roles", [])]:
            if role[0] not in BUILTIN_ROLES:
                raise MongoError(31, f"Could not find role: {role[0]}@{role[1]}", "server", "RoleNotFound")
            if role in user.roles:
                user.roles.remove(role)
        return {"ok": 1.0}

    def _cmd_usersInfo(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        users = [u for (udb, _name), u in sorted(self.data.users.items()) if udb == db]
        return {"users": [{"_id": f"{u.db}.{u.user}", "userId": u.user_id, "user": u.user, "db": u.db,
                           "roles": [{"role": r, "db": d} for r, d in u.roles],
                           "mechanisms": ["SCRAM-SHA-1", "SCRAM-SHA-256"]} for u in users], "ok": 1.0}

    # --- the shell in the pod ------------------------------------------------------------------------------
    def shell(self, argv: list[str]) -> tuple[int, str, str]:
        """`mongo`/`mongosh` run in this server's pod (`kubectl exec ... -- mongo ... --eval ...`):
        (exit status, stdout, stderr), see `twin/mongoshell.py`."""
        from pytest_marathon.twin.mongoshell import run_shell

        self.shell_runs += 1
        return run_shell(self, [str(a) for a in argv], f"shell/{self.shell_runs}")


def auth_enabled(args: Iterable[str], env: dict[str, str], conf: dict[str, Any]) -> bool:
    """mongod enforces access control with `--auth` (or app.yaml `datastore.auth`); the mongo
    image's entrypoint adds `--auth` itself when MONGO_INITDB_ROOT_USERNAME and _PASSWORD are set
    (docker-library/mongo `docker-entrypoint.sh`)."""
    if "--auth" in list(args) or bool(conf.get("auth")):
        return True
    return bool(env.get("MONGO_INITDB_ROOT_USERNAME") and env.get("MONGO_INITDB_ROOT_PASSWORD"))


#: mongod's `--tlsMode` values (docs "mongod" reference, net.tls.mode; src/mongo/util/net/
#: ssl_options_server.idl); the 4.0-era `--sslMode` spells them allowSSL/preferSSL/requireSSL
TLS_MODES = ("disabled", "allowTLS", "preferTLS", "requireTLS")


def tls_mode(args: Iterable[str]) -> str:
    """The TLS mode mongod's command line sets (`--tlsMode X`, `--tlsMode=X`, `--sslMode X`);
    `disabled`, mongod's default, when none is given. The last occurrence wins."""
    words = list(args)
    mode = "disabled"
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag not in ("--tlsMode", "--sslMode"):
            continue
        if not eq:
            value = words[i + 1] if i + 1 < len(words) else ""
        mode = value.replace("SSL", "TLS")
    return mode


def start_server(env: dict[str, str], args: Iterable[str], conf: dict[str, Any], init: dict[str, Any],
                 kept: MongoData | None) -> MongoServer:
    """A mongod process starting on `kept` (a volume's data directory) or on a fresh one the init
    fills (the entrypoint runs the init scripts only on an empty data directory)."""
    data = kept if kept is not None else initial_data(init, env.get("MONGO_INITDB_ROOT_USERNAME", ""),
                                                      env.get("MONGO_INITDB_ROOT_PASSWORD", ""))
    args = list(args)
    return MongoServer(data, auth_enabled(args, env, conf), tls_mode(args))
