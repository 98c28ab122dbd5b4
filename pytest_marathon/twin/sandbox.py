"""The sandbox that runs service code: compile once per image, one module instance per pod.

Service code is real code an agent (or a fault) may have written, so it is never executed
unchecked: :func:`compile_service` refuses what the policy forbids before anything runs, and every
call runs under a step, recursion and allocation budget (see ``sandbox_guards``). Requests and
responses are copied as plain data at the boundary, the way gRPC serialises them, so no pod can
reach another pod's state through a shared object.
"""

from __future__ import annotations

import functools
import hashlib
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from RestrictedPython import compile_restricted_exec

from pytest_marathon.twin.sandbox_errors import (
    SandboxError,
    SandboxLimit,
    SandboxRefusal,
    UnknownMethod,
)
from pytest_marathon.twin.sandbox_guards import Budget, Guards, build_builtins, build_std_modules
from pytest_marathon.twin.sandbox_lint import lint_sources
from pytest_marathon.twin.sandbox_policy import ALLOWED_MODULES, policy_for
from pytest_marathon.twin.sandbox_testing import (
    TestContext,
    TestHttpError,
    TestRpcError,
    TestSqlError,
    raises,
)

__all__ = [
    "ALLOWED_MODULES", "CompiledService", "SandboxError", "SandboxLimit", "SandboxRefusal",
    "ServiceInstance", "TestContext", "TestReport", "UnknownMethod", "compile_service", "lint",
    "run_unit_tests",
]

HANDLER_MODULE = "service"
TEST_MODULE = "test_service"
TESTING_MODULE = "testing"  # what test files import TestContext / raises from
CALL_STEPS = 200_000
STARTUP_STEPS = 2_000_000
MAX_DEPTH = 100
MAX_PLAIN_DEPTH = 64


def _split_files(service: str, files: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    sources: dict[str, str] = {}
    data: dict[str, str] = {}
    for name, text in files.items():
        if "/" in name or "\\" in name or name.startswith("."):
            raise SandboxRefusal(f"{service}: file name {name!r} must be a plain name in the "
                                 "service folder")
        if not isinstance(text, str):
            raise SandboxRefusal(f"{service}/{name}: content must be text")
        if name.endswith(".py"):
            module = name[:-3]
            if not module.isidentifier() or module.startswith("_"):
                raise SandboxRefusal(f"{service}/{name}: not an importable module name")
            sources[module] = text
        else:
            data[name] = text
    if HANDLER_MODULE not in sources:
        raise SandboxRefusal(f"{service}: no {HANDLER_MODULE}.py")
    return sources, data


@functools.lru_cache(maxsize=1024)
def _compile_module(service: str, module: str, source: str,
                    importable: frozenset[str]) -> types.CodeType:
    """Checked and compiled once per process: every twin of a run, its noop baseline and every
    admission trial build the same services, and a code object is immutable (each pod still
    executes it into a namespace of its own)."""
    result = compile_restricted_exec(source, filename=f"{service}/{module}.py",
                                     policy=policy_for(importable))
    if result.errors or result.code is None:
        details = "; ".join(result.errors) or "could not compile"
        raise SandboxRefusal(f"{service}/{module}.py: {details}")
    return result.code


@dataclass(frozen=True)
class CompiledService:
    """The checked, compiled code of one service revision (an "image")."""

    service: str
    codes: dict[str, types.CodeType]
    data: dict[str, str]
    digest: str

    def instantiate(self, ctx_factory: Callable[[], Any] | None = None, *,
                    call_steps: int = CALL_STEPS, max_depth: int = MAX_DEPTH) -> ServiceInstance:
        """Start one pod's module instance: run ``service.py``'s top level (and its imports).

        If ``service.py`` defines ``init(ctx)`` and a ``ctx_factory`` is given, ``init`` runs once
        with a fresh ctx (startup logging, warming caches), like a container's main() would.
        """
        instance = ServiceInstance(self, call_steps=call_steps, max_depth=max_depth)
        instance.start(ctx_factory)
        return instance


def compile_service(service: str, files: dict[str, str]) -> CompiledService:
    """Check and compile every module of a service; raises ``SandboxRefusal`` naming file and line."""
    sources, data = _split_files(service, files)
    siblings = frozenset(sources)
    codes: dict[str, types.CodeType] = {}
    for module in sorted(sources):
        importable = siblings | {TESTING_MODULE} if module.startswith("test_") else siblings
        codes[module] = _compile_module(service, module, sources[module], importable)
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return CompiledService(service, codes, data, digest.hexdigest())


class _ModuleView:
    """What ``import sibling`` returns: live read access to the sibling's public globals."""

    __slots__ = ("_namespace", "_name")

    def __init__(self, name: str, namespace: dict[str, Any]) -> None:
        self._name = name
        self._namespace = namespace

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_") or attr not in self._namespace:
            raise AttributeError(f"module {self._name!r} has no attribute {attr!r}")
        return self._namespace[attr]


class ServiceInstance:
    """One pod's running copy of a service: its module globals are the pod's memory."""

    def __init__(self, compiled: CompiledService, *, call_steps: int, max_depth: int) -> None:
        self.compiled = compiled
        self.call_steps = call_steps
        self.max_depth = max_depth
        self.budget = Budget()
        guards = Guards(self.budget)
        self._std = build_std_modules(guards)
        self._builtins = build_builtins(guards, self._resource, self._import)
        self._metaclass = guards.metaclass
        self._namespaces: dict[str, dict[str, Any]] = {}
        self._handlers: dict[str, Callable[[Any, Any], Any]] = {}
        # Module state changes only while the pod's code runs, so the estimate is redone then.
        self._memory: int | None = None

    # -- module loading ------------------------------------------------------------------------

    def _resource(self, name: str) -> str:
        try:
            return self.compiled.data[name]
        except KeyError:
            raise FileNotFoundError(f"no data file {name!r} in {self.compiled.service}") from None

    def _import(self, name: str, globals_: Any = None, locals_: Any = None,
                fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name in self._std:
            return self._std[name]
        if level == 0 and name == TESTING_MODULE:
            return types.SimpleNamespace(TestContext=TestContext, raises=raises, TestHttpError=TestHttpError,
                                         TestSqlError=TestSqlError, TestRpcError=TestRpcError)
        if level == 0 and name in self.compiled.codes:
            return _ModuleView(name, self._load(name))
        self.budget.refuse(f'import of "{name}" is not allowed')
        return None  # pragma: no cover - refuse() raises

    def _load(self, module: str) -> dict[str, Any]:
        namespace = self._namespaces.get(module)
        if namespace is not None:
            return namespace
        namespace = {"__builtins__": self._builtins, "__name__": module,
                     "__metaclass__": self._metaclass}
        self._namespaces[module] = namespace
        exec(self.compiled.codes[module], namespace)
        return namespace

    def start(self, ctx_factory: Callable[[], Any] | None) -> None:
        self._run_bounded(STARTUP_STEPS, lambda: self._load(HANDLER_MODULE))
        namespace = self._namespaces[HANDLER_MODULE]
        for name in sorted(namespace):
            value = namespace[name]
            if isinstance(value, types.FunctionType) and value.__globals__ is namespace \
                    and value.__code__.co_varnames[:2] in (("ctx", "request"), ("ctx", "record")) \
                    and value.__code__.co_argcount == 2:
                self._handlers[name] = value
        init = namespace.get("init")
        if ctx_factory is not None and isinstance(init, types.FunctionType):
            ctx = ctx_factory()
            self._run_bounded(STARTUP_STEPS, lambda: init(ctx))

    def load_test_module(self) -> dict[str, Any]:
        return self._run_bounded(STARTUP_STEPS, lambda: self._load(TEST_MODULE))

    # -- calls ---------------------------------------------------------------------------------

    def methods(self) -> list[str]:
        """Handlers: module-level functions of ``service.py`` with the signature (ctx, request)."""
        return list(self._handlers)

    def handle(self, method: str, ctx: Any, request: Any) -> Any:
        """Run one handler call under the call budget; request and response are copied as data."""
        handler = self._handlers.get(method)
        if handler is None:
            raise UnknownMethod(f"unknown method {self.compiled.service}.{method}")
        payload = plain_copy(request, "request")
        result = self._run_bounded(self.call_steps, lambda: handler(ctx, payload))
        return plain_copy(result, f"response of {method}")

    def _run_bounded(self, steps: int, body: Callable[[], Any]) -> Any:
        self._memory = None
        budget = self.budget
        saved = budget.save()
        budget.reset(steps, self.max_depth)
        try:
            result = body()
        except RecursionError:
            tripped = budget.tripped
            budget.restore(saved)
            raise tripped or SandboxLimit("recursion", "recursion too deep") from None
        except BaseException as exc:
            tripped = budget.tripped
            budget.restore(saved)
            if tripped is not None and tripped is not exc:
                raise tripped from None
            raise
        tripped = budget.tripped
        budget.restore(saved)
        if tripped is not None:
            raise tripped
        return result

    def memory_estimate(self) -> int:
        """Deterministic bytes held by module-level data (a leaking cache makes this grow)."""
        if self._memory is None:
            roots = [value for namespace in self._namespaces.values()
                     for name, value in namespace.items() if not name.startswith("__")]
            self._memory = 4096 * len(self._namespaces) + estimate_bytes(roots)
        return self._memory


_SCALARS = frozenset((str, int, float, bool, type(None)))
_FUNCTION = types.FunctionType


def plain_copy(value: Any, what: str, depth: int = 0) -> Any:
    """Copy a request/response as protobuf-like plain data, refusing anything else.

    Scalars are the leaves of nearly every message, so containers copy them inline and recurse
    only into nested containers: one Python call per container instead of one per value."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth > MAX_PLAIN_DEPTH:
        raise TypeError(f"{what} is nested more than {MAX_PLAIN_DEPTH} levels deep")
    scalars = _SCALARS
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(f"{what} has a non-string key {key!r}")
            out[key] = item if type(item) in scalars else plain_copy(item, what, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [item if type(item) in scalars else plain_copy(item, what, depth + 1)
                for item in value]
    raise TypeError(f"{what} contains a {kind.__name__}, which is not serialisable "
                    "(use dicts, lists, str, int, float, bool)")


def estimate_bytes(roots: list[Any]) -> int:
    """Rough CPython-like sizes with fixed constants, so the figure is identical across runs."""
    total = 0
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        kind = type(obj)
        if kind is str:
            total += 49 + len(obj)
            continue
        if kind is int or kind is bool:
            total += 28 + 4 * (obj.bit_length() // 30)
            continue
        if kind is float or obj is None:
            total += 24
            continue
        ident = id(obj)
        if ident in seen:
            continue
        seen.add(ident)
        # The exact built-in kinds first (the bulk of any namespace), each as its branch below
        # sizes it; a plain function is a flat 64 unless it carries a `cache_info` of its own.
        if kind is dict:
            # string keys and string or number items (most of any namespace's data) are sized
            # here rather than pushed: the total is a sum, so the order of visits does not
            # change it
            total += 64 + 48 * len(obj)
            for item in obj:
                if type(item) is str:
                    total += 49 + len(item)
                else:
                    stack.append(item)
            items: Any = obj.values()
        elif kind is list or kind is tuple:
            total += 56 + 8 * len(obj)
            items = obj
        else:
            items = None
        if items is not None:
            for item in items:
                leaf = type(item)
                if leaf is str:
                    total += 49 + len(item)
                elif leaf is int:
                    total += 28 + 4 * (item.bit_length() // 30)
                elif leaf is float:
                    total += 24
                else:
                    stack.append(item)
            continue
        if kind is _FUNCTION and "cache_info" not in obj.__dict__:
            total += 64
            continue
        if isinstance(obj, dict):
            total += 64 + 48 * len(obj)
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)) or kind.__name__ == "deque":
            total += 56 + 8 * len(obj)
            stack.extend(obj)
        elif isinstance(obj, (set, frozenset)):
            total += 216 + 32 * len(obj)
            stack.extend(obj)
        elif hasattr(obj, "cache_info"):
            total += 100 + 200 * obj.cache_info().currsize
        elif getattr(kind, "_sandbox_class_", False):
            total += 56
            stack.append(vars(obj))
        else:
            total += 64
    return total


def lint(service: str, files: dict[str, str]) -> list[str]:
    """Problems a build should reject: syntax, undefined names, unused imports, sandbox refusals."""
    sources, _data = _split_files(service, files)
    problems = lint_sources(service, sources)
    if not problems:
        try:
            compile_service(service, files)
        except SandboxRefusal as refusal:
            problems.append(refusal.reason)
    return problems


def _where(service: str, exc: BaseException) -> str:
    """The innermost service-code line of a traceback, e.g. ``cartservice/service.py:42``."""
    where = f"{service}/?"
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith(f"{service}/"):
            where = f"{code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


@dataclass
class TestReport:
    """Outcome of a service's unit tests (``failures`` holds "test_name: reason" lines)."""

    passed: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)

    __test__ = False  # not a pytest test class

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.passed > 0


def run_unit_tests(service: str, files: dict[str, str]) -> TestReport:
    """Run ``test_service.py``'s ``test_*`` functions in the sandbox, each on a fresh instance."""
    compiled = compile_service(service, files)
    report = TestReport()
    if TEST_MODULE not in compiled.codes:
        report.failed = 1
        report.failures.append(f"{service}: no {TEST_MODULE}.py")
        return report
    names = sorted(name for name, value in compiled.instantiate().load_test_module().items()
                   if name.startswith("test_") and isinstance(value, types.FunctionType))
    for name in names:
        instance = compiled.instantiate()
        try:
            test = instance.load_test_module()[name]
            instance._run_bounded(STARTUP_STEPS, test)
        except Exception as exc:  # a failing test, whatever it raised
            report.failed += 1
            what = "assertion failed" if isinstance(exc, AssertionError) else type(exc).__name__
            detail = f": {exc}" if str(exc) else ""
            report.failures.append(f"{name} ({_where(service, exc)}): {what}{detail}")
        else:
            report.passed += 1
    return report
