"""The legacy `mongo` shell of the 4.4.6 image (and `mongosh` invoked the same way), run by
`kubectl exec <mongo pod> -- mongo ... --eval "<js>"`: what AIOpsLab's fault and mitigation scripts
do (microsoft/AIOpsLab `aiopslab/generators/fault/script/revoke-admin-rate-mongo.sh`: `mongo admin
-u $ADMIN_USER -p $ADMIN_PWD --authenticationDatabase admin --eval "db.revokeRolesFromUser(
'$ADMIN_USER', [{role: 'readWrite', db: '$TARGET_DB'}]);"`; the mitigation runs
`db.grantRolesToUser(...)` as root, `remove-*` scripts `db.dropUser(...)` / `db.createUser(...)`).

Only a small command language is parsed: statements separated by `;`, each `db[.getSiblingDB(
'x')].<helper>(args)`, `db = db.getSiblingDB('x')`, `printjson(<expr>)`, with
JavaScript literals (objects with bare or quoted keys, arrays, strings, numbers, true/false/null)
as arguments. Helpers: createUser, dropUser, grantRolesToUser, revokeRolesFromUser, getUsers,
getUser. Anything else fails with exit code 2 and a `twin:` message on stderr saying what the twin
models, never with a made-up shell output.

Outputs are mongodb/mongo r4.4 `src/mongo/shell`: the banner (`dbshell.cpp`/`mongo_main.cpp`:
`MongoDB shell version v4.4.6`, `connecting to: <uri>?...compressors=disabled&gssapiServiceName=
mongodb`, `Implicit session: session { "id" : UUID("...") }`, `MongoDB server version: 4.4.6`;
all but the result suppressed by `--quiet`); the value of the last statement printed by
`shellPrintHelper` (nothing for undefined, `tojson` for objects/arrays); helpers from `db.js`
(createUser prints `Successfully added user: <tojson of the user without pwd>`, dropUser returns
true/false (false for UserNotFound), grant/revoke return nothing and throw
`_getErrorWithCode(res, res.errmsg)`); an uncaught exception prints `uncaught exception: Error:
<message> :` and the JS stack, then `exiting with code -4` (process status 252); a failed
authentication prints `Error: Authentication failed. :` with the connect stack, `exception: connect
failed`, `exiting with code 1` (seen verbatim from a 4.4.26 shell). The stack frames' line numbers
are 4.4's for createUser (`db.js:1386:11`, seen from a 4.4.11 shell); those of the other helpers
are estimated from the file's layout (fidelity.md).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_marathon.twin.errors import MongoError
from pytest_marathon.twin.mongostore import MONGO_VERSION, MongoServer, Principal, Uuid

EVAL_ERROR_STATUS = 252  # kEvalError = -4 as a process exit status
UNSUPPORTED_STATUS = 2
# db.js frames of the 4.4 shell (see the module docstring for which are estimates)
_FRAMES = {
    "createUser": "DB.prototype.createUser@src/mongo/shell/db.js:1386:11",
    "grantRolesToUser": "DB.prototype.grantRolesToUser@src/mongo/shell/db.js:1565:15",
    "revokeRolesFromUser": "DB.prototype.revokeRolesFromUser@src/mongo/shell/db.js:1577:15",
    "dropUser": "DB.prototype.dropUser@src/mongo/shell/db.js:1446:11",
    "getUsers": "DB.prototype.getUsers@src/mongo/shell/db.js:1638:15",
    "getUser": "DB.prototype.getUser@src/mongo/shell/db.js:1606:15",
}
_WRITE_CONCERN = {"w": "majority", "wtimeout": 600000.0}  # db.js `_defaultWriteConcern` in 4.4 (10 min)


UNDEFINED = object()  # a helper that returns nothing: shellPrintHelper prints nothing for it


class ShellUnsupported(Exception):  # noqa: N818 - a refusal, not an error of the modelled shell
    """The eval text is outside the language the twin's shell models."""


# --- a tiny JavaScript literal/call parser ------------------------------------------------------------
_TOKEN = re.compile(r"""\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?P<num>-?\d+(?:\.\d+)?)|"""
                    r"""(?P<name>[A-Za-z_$][\w$]*)|(?P<punct>[{}\[\](),:.;=]))""")


def _tokens(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        found = _TOKEN.match(text, pos)
        if not found:
            raise ShellUnsupported(f"cannot read {text[pos:pos + 20]!r}")
        pos = found.end()
        if found.group("str") is not None:
            raw = found.group("str")
            out.append(("str", json.loads('"' + raw[1:-1].replace('\\"', '"').replace('"', '\\"') + '"')))
        elif found.group("num") is not None:
            num = found.group("num")
            out.append(("num", float(num) if "." in num else int(num)))
        elif found.group("name") is not None:
            out.append(("name", found.group("name")))
        else:
            out.append(("punct", found.group("punct")))
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]]) -> None:
        self.toks = tokens
        self.i = 0

    def peek(self) -> tuple[str, Any] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, Any]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise ShellUnsupported(f"expected {value!r}, got {tok[1] if tok else 'end of input'!r}")
        self.i += 1
        return tok

    def literal(self) -> Any:
        kind, value = self.take()
        if kind in ("str", "num"):
            return value
        if kind == "name" and value in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[value]
        if value == "{":
            obj: dict[str, Any] = {}
            while self.peek() and self.peek()[1] != "}":
                key_kind, key = self.take()
                if key_kind not in ("name", "str", "num"):
                    raise ShellUnsupported(f"bad object key {key!r}")
                self.take(":")
                obj[str(key)] = self.literal()
                if self.peek() and self.peek()[1] == ",":
                    self.take(",")
            self.take("}")
            return obj
        if value == "[":
            arr: list[Any] = []
            while self.peek() and self.peek()[1] != "]":
                arr.append(self.literal())
                if self.peek() and self.peek()[1] == ",":
                    self.take(",")
            self.take("]")
            return arr
        raise ShellUnsupported(f"unsupported value {value!r}")

    def args(self) -> list[Any]:
        self.take("(")
        out = []
        while self.peek() and self.peek()[1] != ")":
            out.append(self.literal())
            if self.peek() and self.peek()[1] == ",":
                self.take(",")
        self.take(")")
        return out


def parse_statements(script: str) -> list[tuple[str, Any]]:
    """The eval text as a list of (kind, parts): `("use", db)`, `("call", (db|None, helper, args,
    wrapper))` where wrapper is "" or "printjson"."""
    parser = _Parser(_tokens(script))
    out: list[tuple[str, Any]] = []
    while parser.peek() is not None:
        if parser.peek()[1] == ";":
            parser.take(";")
            continue
        wrapper = ""
        kind, name = parser.take()
        if kind == "name" and name == "printjson":
            wrapper = name
            parser.take("(")
            kind, name = parser.take()
        if kind != "name" or name != "db":
            raise ShellUnsupported(f"statement must start with db, got {name!r}")
        if parser.peek() and parser.peek()[1] == "=" and not wrapper:
            parser.take("=")
            parser.take("db") if parser.peek() and parser.peek()[1] == "db" else None
            target = _sibling(parser)
            out.append(("use", target))
            continue
        db: str | None = None
        parser.take(".")
        _, helper = parser.take()
        if helper == "getSiblingDB":
            (db,) = parser.args() or [None]
            parser.take(".")
            _, helper = parser.take()
        if helper not in _FRAMES:
            raise ShellUnsupported(f"db.{helper}() is not one of the helpers the twin models ({', '.join(_FRAMES)})")
        args = parser.args()
        if wrapper:
            parser.take(")")
        out.append(("call", (None if db is None else str(db), helper, args, wrapper)))
    return out


def _sibling(parser: _Parser) -> str:
    parser.take(".")
    _, helper = parser.take()
    if helper != "getSiblingDB":
        raise ShellUnsupported("only `db = db.getSiblingDB('<name>')` may assign db")
    (db,) = parser.args()
    return str(db)


# --- printing ---------------------------------------------------------------------------------------------
def tojson(value: Any, indent: int = 0) -> str:
    """The legacy shell's `tojson`: objects and arrays one member per line, tab-indented,
    `"key" : value`, empty ones `{ }` / `[ ]`, UUIDs `UUID("...")`."""
    pad, inner = "\t" * indent, "\t" * (indent + 1)
    if isinstance(value, Uuid):
        return f'UUID("{value.text}")'
    if isinstance(value, dict):
        if not value:
            return "{ }"
        body = ",\n".join(f"{inner}{json.dumps(str(k))} : {tojson(v, indent + 1)}" for k, v in value.items())
        return "{\n" + body + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[\n" + ",\n".join(inner + tojson(v, indent + 1) for v in value) + "\n" + pad + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


# --- the shell --------------------------------------------------------------------------------------------
def _options(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {"db": "test", "user": "", "pwd": None, "auth_db": "", "eval": None, "quiet": False}
    args = list(argv[1:])
    takes = {"-u": "user", "--username": "user", "-p": "pwd", "--password": "pwd",
             "--authenticationDatabase": "auth_db", "--eval": "eval", "--host": "host", "--port": "port"}
    while args:
        arg = args.pop(0)
        name, eq, inline = arg.partition("=")
        if name in takes:
            if eq:
                opts[takes[name]] = inline
            elif args:
                opts[takes[name]] = args.pop(0)
            else:
                raise ShellUnsupported(f"{name} needs a value")
        elif arg == "--quiet":
            opts["quiet"] = True
        elif arg.startswith("mongodb://"):
            tail = arg.split("/", 3)[3] if arg.count("/") >= 3 else ""
            opts["db"] = tail.split("?", 1)[0] or "test"
        elif arg.startswith("-"):
            raise ShellUnsupported(f"option {arg} is not modelled")
        else:
            opts["db"] = arg
    if opts["eval"] is None:
        raise ShellUnsupported("only `--eval` runs are modelled (no interactive shell, no script files)")
    return opts


def run_shell(server: MongoServer, argv: list[str], session_seed: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one shell run inside the server's pod (localhost)."""
    try:
        opts = _options(argv)
        statements = parse_statements(str(opts["eval"]))
    except ShellUnsupported as exc:
        return UNSUPPORTED_STATUS, "", f"twin: {argv[0] if argv else 'mongo'}: {exc}\n"
    out: list[str] = []
    query = "compressors=disabled&gssapiServiceName=mongodb"
    if opts["user"]:
        query = f"authSource={opts['auth_db'] or opts['db']}&{query}"
    if not opts["quiet"]:
        out += [f"MongoDB shell version v{MONGO_VERSION}",
                f"connecting to: mongodb://127.0.0.1:{27017}/{opts['db']}?{query}"]
    principal: Principal = None
    if opts["user"]:
        try:
            principal = server.authenticate(opts["user"], opts["pwd"] or "", opts["auth_db"] or opts["db"])
        except MongoError as exc:
            out += [f"Error: {exc.message} :", "connect@src/mongo/shell/mongo.js:374:17", "@(connect):2:6",
                    "exception: connect failed", "exiting with code 1"]
            return 1, "\n".join(out) + "\n", ""
    if not opts["quiet"]:
        out += [f'Implicit session: session {{ "id" : UUID("{Uuid.of(session_seed).text}") }}',
                f"MongoDB server version: {MONGO_VERSION}"]
    db = str(opts["db"])
    lsid = {"id": Uuid.of(session_seed)}
    last: Any = UNDEFINED
    for kind, parts in statements:
        if kind == "use":
            db, last = parts, UNDEFINED
            continue
        target, helper, args, wrapper = parts
        try:
            value = _helper(server, principal, target or db, helper, args, lsid, out)
        except MongoError as exc:
            prefix = "couldn't add user: " if helper == "createUser" else ""
            out += [f"uncaught exception: Error: {prefix}{exc.message} :",
                    "_getErrorWithCode@src/mongo/shell/utils.js:25:13", _FRAMES[helper], "@(shell eval):1:1",
                    "exiting with code -4"]
            return EVAL_ERROR_STATUS, "\n".join(out) + "\n", ""
        if wrapper == "printjson":
            out.append(tojson(None if value is UNDEFINED else value))
            value = UNDEFINED
        last = value
    if last is not UNDEFINED:
        out.append(tojson(last))
    return 0, ("\n".join(out) + "\n") if out else "", ""


def _helper(server: MongoServer, principal: Principal, db: str, helper: str, args: list[Any],
            lsid: dict[str, Any], out: list[str]) -> Any:
    """One db.js helper: the command it sends, and what it returns or prints."""
    if helper == "createUser":
        if not args or not isinstance(args[0], dict) or "user" not in args[0]:
            raise ShellUnsupported("createUser takes a user document")
        doc = dict(args[0])
        command = {"createUser": doc["user"], **{k: v for k, v in doc.items() if k != "user"},
                   "digestPassword": True, "writeConcern": _WRITE_CONCERN, "lsid": lsid}
        if "pwd" in command:
            command["pwd"] = "xxx"  # the server redacts the password in what it prints
        server.check(principal, db, command)
        server.run(principal, db, {"createUser": doc["user"], "pwd": doc.get("pwd", ""),
                                   "roles": doc.get("roles", [])})
        shown = {k: v for k, v in doc.items() if k != "pwd"}
        out.append("Successfully added user: " + tojson(shown))
        return UNDEFINED
    if helper in ("grantRolesToUser", "revokeRolesFromUser"):
        if len(args) < 2:
            raise MongoError(2, f"{helper} needs a user name and roles", "server", "BadValue")
        command = {helper: args[0], "roles": args[1], "writeConcern": _WRITE_CONCERN, "lsid": lsid}
        server.run(principal, db, command)
        return UNDEFINED
    if helper == "dropUser":
        command = {"dropUser": args[0] if args else "", "writeConcern": _WRITE_CONCERN, "lsid": lsid}
        try:
            server.run(principal, db, command)
        except MongoError as exc:
            if exc.code == 11:
                return False
            raise
        return True
    result = server.run(principal, db, {"usersInfo": args[0] if helper == "getUser" and args else 1, "lsid": lsid})
    users = result["users"]
    if helper == "getUser":
        wanted = [u for u in users if u["user"] == (args[0] if args else "")]
        return wanted[0] if wanted else None
    return users


def refused_output(argv: list[str]) -> tuple[int, str, str]:
    """The shell when nothing listens on 127.0.0.1:27017 (mongod stopped): the 4.4 connect error,
    `exception: connect failed`, status 1."""
    try:
        opts = _options([str(a) for a in argv])
    except ShellUnsupported as exc:
        return UNSUPPORTED_STATUS, "", f"twin: {argv[0] if argv else 'mongo'}: {exc}\n"
    query = "compressors=disabled&gssapiServiceName=mongodb"
    if opts["user"]:
        query = f"authSource={opts['auth_db'] or opts['db']}&{query}"
    lines = [] if opts["quiet"] else [f"MongoDB shell version v{MONGO_VERSION}",
                                      f"connecting to: mongodb://127.0.0.1:27017/{opts['db']}?{query}"]
    lines += ["Error: couldn't connect to server 127.0.0.1:27017, connection attempt failed: SocketException: "
              "Error connecting to 127.0.0.1:27017 :: caused by :: Connection refused :",
              "connect@src/mongo/shell/mongo.js:374:17", "@(connect):2:6", "exception: connect failed",
              "exiting with code 1"]
    return 1, "\n".join(lines) + "\n", ""
