"""Run-time guards for service code: the budget, the guarded operators, builtins and module views.

One :class:`Budget` and one :class:`Guards` exist per pod instance; handler calls reset the
budget. A guard that stops a call records the exception in the budget ("tripped"), so service code
that catches it (``except Exception``) gains nothing: the sandbox re-raises it when the call ends.

What is bounded: Python-level work (every loop iteration, comprehension item, function entry and
every item a builtin pulls from a lazy iterator costs a step), recursion depth, the size of any one
sequence/int/string built by an operator, builtin or watched method, and the total of those per
call. A regular-expression match, which runs in C where no step is counted, is bounded by its
engine instead: service code's `re` is RE2, linear in its input (`sandbox_regex`).
"""

from __future__ import annotations

import builtins
import collections
import datetime
import decimal
import functools
import hashlib
import itertools
import json
import math
import operator
import re
import string
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from pytest_marathon.twin import sandbox_regex
from pytest_marathon.twin.sandbox_errors import SandboxLimit, SandboxRefusal

MAX_ITEMS = 2_000_000          # largest sequence / string / range one operation may build
MAX_CALL_ALLOCATION = 20_000_000  # items built by guarded operations during one call
MAX_INT_BITS = 16_384          # ~4900 decimal digits; beyond that int arithmetic turns slow
MAX_DECIMAL_DIGITS = 4_300     # Python's own int-string conversion limit
MAX_FORMAT_WIDTH = 100_000

_SIZED = (list, tuple, dict, set, frozenset, str, bytes, range, collections.deque,
          type({}.keys()), type({}.values()), type({}.items()))
_SEQUENCES = (str, bytes, list, tuple)
_PLAIN_OPERANDS = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset, range,
                   decimal.Decimal, collections.deque, type(None))
_MUTABLE = (dict, list, set, collections.deque)
_WALL_CLOCK = frozenset({"now", "today", "utcnow", "fromtimestamp"})
_BLOCKED_ATTRIBUTES = frozenset(INSPECT_ATTRIBUTES) | {"mro", "format_map"}
_STR_WATCHED = frozenset({"join", "format", "center", "ljust", "rjust", "zfill", "expandtabs",
                          "replace"})
_CONTAINER_WATCHED = frozenset({"extend", "update", "union", "intersection", "difference",
                                "symmetric_difference", "fromkeys", "extendleft", "elements",
                                "issubset", "issuperset", "isdisjoint", "intersection_update",
                                "difference_update", "symmetric_difference_update"})
#: Names some check of `Guards.getattr` looks at; any other public name is a plain lookup.
_CHECKED_ATTRIBUTES = (_BLOCKED_ATTRIBUTES | _WALL_CLOCK | _STR_WATCHED | _CONTAINER_WATCHED
                       | {"as_integer_ratio", "sub", "subn"})
_FORMATTER = string.Formatter()
_HUGE_WIDTH = re.compile(r"\d{6,}|\*")

MISSING = object()


class Budget:
    """Per-call counters; ``tripped`` keeps the first limit or refusal so it cannot be swallowed."""

    __slots__ = ("steps", "depth", "max_depth", "allocated", "max_allocated", "tripped")

    def __init__(self) -> None:
        self.steps = 0
        self.depth = 0
        self.max_depth = 0
        self.allocated = 0
        self.max_allocated = MAX_CALL_ALLOCATION
        self.tripped: Exception | None = None

    def save(self) -> tuple[int, int, int, int, Exception | None]:
        return (self.steps, self.depth, self.max_depth, self.allocated, self.tripped)

    def restore(self, state: tuple[int, int, int, int, Exception | None]) -> None:
        self.steps, self.depth, self.max_depth, self.allocated, self.tripped = state

    def reset(self, steps: int, max_depth: int) -> None:
        self.steps = steps
        self.depth = 0
        self.max_depth = max_depth
        self.allocated = 0
        self.tripped = None

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            self.limit("steps", "step budget exhausted (runaway loop or too much work in one call)")

    def enter(self) -> None:
        self.steps -= 1
        self.depth += 1
        if self.steps < 0 or self.depth > self.max_depth:
            self.depth -= 1
            if self.steps < 0:
                self.limit("steps", "step budget exhausted (runaway loop or too much work in one call)")
            self.limit("recursion", f"recursion deeper than {self.max_depth} frames")

    def leave(self) -> None:
        self.depth -= 1

    def allocate(self, items: int) -> None:
        if items > MAX_ITEMS:
            self.limit("allocation", f"allocation of {items} items exceeds the cap of {MAX_ITEMS}")
        self.allocated += items
        if self.allocated > self.max_allocated:
            self.limit("allocation",
                       f"call allocated more than {self.max_allocated} items in total")

    def limit(self, kind: str, reason: str) -> None:
        exc = SandboxLimit(kind, reason)
        if self.tripped is None:
            self.tripped = exc
        raise exc

    def refuse(self, reason: str) -> None:
        exc = SandboxRefusal(reason)
        if self.tripped is None:
            self.tripped = exc
        raise exc


def _len_or_none(value: Any) -> int | None:
    return len(value) if isinstance(value, _SIZED) else None


class Guards:
    """The guard functions RestrictedPython's rewritten code calls, bound to one budget."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    # -- iteration -----------------------------------------------------------------------------

    def counted(self, iterable: Any) -> Any:
        """Sized builtins pass through; anything lazy costs one step per item it yields."""
        if isinstance(iterable, _SIZED):
            return iterable
        try:
            iterator = iter(iterable)
        except TypeError:
            return iterable  # not iterable: let the consumer raise its own error (or take it)
        return self._count_items(iterator)

    def _count_items(self, iterator: Iterator[Any]) -> Iterator[Any]:
        step = self.budget.step
        for item in iterator:
            step()
            yield item

    def materialize(self, iterable: Any) -> Any:
        if isinstance(iterable, _PLAIN_OPERANDS):
            return iterable
        try:
            return list(self._count_items(iter(iterable)))
        except TypeError:
            return iterable

    # -- operators -----------------------------------------------------------------------------

    def check_int_bits(self, bits: int, what: str) -> None:
        if bits > MAX_INT_BITS:
            self.budget.limit("allocation", f"{what} would build an integer of about {bits} bits "
                                            f"(cap {MAX_INT_BITS})")

    def add(self, a: Any, b: Any) -> Any:
        ta = type(a)
        if ta is int or ta is float:
            return a + b
        if isinstance(a, _SEQUENCES):
            size = _len_or_none(b)
            if size is not None:
                self.budget.allocate(len(a) + size)
        return a + b

    def mul(self, a: Any, b: Any) -> Any:
        ta, tb = type(a), type(b)
        if ta is int and tb is int:
            self.check_int_bits(a.bit_length() + b.bit_length(), "multiplication")
            return a * b
        if ta is float or tb is float:
            return a * b
        if isinstance(a, _SEQUENCES) and isinstance(b, int):
            self.budget.allocate(len(a) * max(b, 0))
        elif isinstance(b, _SEQUENCES) and isinstance(a, int):
            self.budget.allocate(len(b) * max(a, 0))
        return a * b

    def pow(self, a: Any, b: Any, mod: Any = None) -> Any:
        if mod is None and isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
            self.check_int_bits(a.bit_length() * b, "power")
        return a ** b if mod is None else pow(a, b, mod)

    def lshift(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int) and a and b > 0:
            self.check_int_bits(a.bit_length() + b, "left shift")
        return a << b

    def mod(self, a: Any, b: Any) -> Any:
        if type(a) is str:
            if _HUGE_WIDTH.search(a):
                self.budget.limit("allocation", "%-format width too large or given by '*'")
            for arg in (b if type(b) is tuple else (b,)):
                self.check_formattable(arg)
            result = a % b
            self.budget.allocate(len(result))
            return result
        return a % b

    def check_formattable(self, value: Any) -> Any:
        """Decimals with huge exponents expand to gigantic digit strings in fixed-point format."""
        if type(value) is decimal.Decimal and value.is_finite() \
                and abs(value.adjusted()) > MAX_DECIMAL_DIGITS:
            self.budget.limit("allocation", f"Decimal with exponent {value.adjusted()} is too "
                                            "large to format or convert")
        return value

    _INPLACE: dict[str, Callable[[Any, Any], Any]] = {
        "-=": operator.isub, "/=": operator.itruediv, "//=": operator.ifloordiv,
        ">>=": operator.irshift, "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
        "@=": operator.imatmul,
    }

    def inplacevar(self, op: str, x: Any, y: Any) -> Any:
        y = self.materialize(y)
        if op == "+=":
            if isinstance(x, (_SEQUENCES, collections.deque)):
                size = _len_or_none(y)
                if size is not None:
                    self.budget.allocate(len(x) + size)
            return operator.iadd(x, y)
        if op == "*=":
            if type(x) is int and type(y) is int:
                self.check_int_bits(x.bit_length() + y.bit_length(), "multiplication")
            elif isinstance(x, _SEQUENCES) and isinstance(y, int):
                self.budget.allocate(len(x) * max(y, 0))
            return operator.imul(x, y)
        if op == "**=":
            return self.pow(x, y)
        if op == "<<=":
            return self.lshift(x, y)
        if op == "%=":
            return self.mod(x, y)
        return self._INPLACE[op](x, y)

    # -- attribute, item and write access ------------------------------------------------------

    def getattr(self, obj: Any, name: str, default: Any = MISSING) -> Any:
        if type(name) is str and name[:1] != "_" and name not in _CHECKED_ATTRIBUTES:
            # the hot path (`ctx.log`, `request.get`): no check below can apply to this name
            return getattr(obj, name) if default is MISSING else getattr(obj, name, default)
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name[:1] == "_" or name in _BLOCKED_ATTRIBUTES:
            self.budget.refuse(f'access to attribute "{name}" is not allowed')
        if name in _WALL_CLOCK and (obj in (datetime.date, datetime.datetime)
                                    or isinstance(obj, datetime.date)):
            self.budget.refuse(f"datetime.{name}() reads the wall clock; use ctx.now")
        if name == "as_integer_ratio" and isinstance(obj, decimal.Decimal):
            self.budget.refuse("Decimal.as_integer_ratio() is not allowed")
        if (obj is str and name in _STR_WATCHED) or (obj in _MUTABLE and name in _CONTAINER_WATCHED):
            self.budget.refuse(f"{obj.__name__}.{name} must be called on an instance")
        value = getattr(obj, name) if default is MISSING else getattr(obj, name, default)
        if name in _STR_WATCHED and type(obj) is str:
            return self._watched_str(obj, name, value)
        if name in _CONTAINER_WATCHED and isinstance(obj, _MUTABLE + (frozenset,)):
            return self._watched_container(name, value)
        if name in ("sub", "subn") and isinstance(obj, sandbox_regex.Pattern):
            return self._watched_sub(obj, value)
        return value

    def hasattr(self, obj: Any, name: str) -> bool:
        try:
            self.getattr(obj, name)
        except AttributeError:
            return False
        return True

    def _watched_str(self, text: str, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        budget = self.budget

        if name == "join":
            def join(iterable: Iterable[Any]) -> str:
                items = list(self.counted(iterable))
                budget.allocate(sum(len(i) for i in items if type(i) is str)
                                + len(text) * len(items))
                return method(items)
            return join
        if name == "format":
            def format_(*args: Any, **kwargs: Any) -> str:
                self.check_format_string(text)
                for arg in (*args, *kwargs.values()):
                    self.check_formattable(arg)
                result = method(*args, **kwargs)
                budget.allocate(len(result))
                return result
            return format_
        if name == "replace":
            def replace(old: str, new: str, count: int = -1) -> str:
                if isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
                    hits = len(text) + 1 if not old else text.count(old)
                    budget.allocate(len(text) + hits * (len(new) - len(old)))
                return method(old, new, count)
            return replace

        def padded(width: Any = 8, *rest: Any) -> str:
            if isinstance(width, int):
                budget.allocate(width * len(text) if name == "expandtabs" else width)
            return method(width, *rest)
        return padded

    def check_format_string(self, text: str) -> None:
        try:
            fields = list(_FORMATTER.parse(text))
        except ValueError:
            return  # str.format raises the same error with Python's own message
        for _literal, field, spec, _conv in fields:
            if field and "." in field:
                self.budget.refuse(f'format field "{field}" reads attributes; format values '
                                   "explicitly")
            if spec and ("{" in spec or _HUGE_WIDTH.search(spec)):
                self.budget.limit("allocation", f'format spec "{spec}" is nested or too wide')

    def _watched_container(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        if name == "elements":
            return lambda: self.counted(method())

        def consume(*args: Any, **kwargs: Any) -> Any:
            return method(*(self.materialize(a) for a in args), **kwargs)
        return consume

    def _watched_sub(self, pattern: Any, method: Callable[..., Any]) -> Callable[..., Any]:
        def sub(repl: Any, text: Any, count: int = 0) -> Any:
            self.check_sub(repl, text)
            return method(repl, text, count)
        return sub

    def check_sub(self, repl: Any, text: Any) -> None:
        if isinstance(repl, str) and isinstance(text, str):
            self.budget.allocate(len(text) + (len(text) + 1) * len(repl))

    def getitem(self, obj: Any, key: Any) -> Any:
        if type(key) is slice:
            result = obj[key]
            size = _len_or_none(result)
            if size:
                self.budget.allocate(size)
            return result
        return obj[key]

    def write(self, obj: Any) -> Any:
        if isinstance(obj, _MUTABLE) or getattr(type(obj), "_sandbox_class_", False):
            return obj
        self.budget.refuse(f"writing attributes or items of a {type(obj).__name__} "
                           "object is not allowed")
        return None  # pragma: no cover - refuse() raises

    @staticmethod
    def apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    def fmtv(self, value: Any) -> Any:
        return self.check_formattable(value)

    # -- classes -------------------------------------------------------------------------------

    def metaclass(self, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        for base in bases:
            if not (getattr(base, "_sandbox_class_", False) or base in SAFE_BASES):
                self.budget.refuse(f"class {name} may not derive from {base.__name__}")
        namespace["_sandbox_class_"] = True
        return type(name, bases or (object,), namespace)


SAFE_BASES = frozenset({object, Exception, ValueError, KeyError, LookupError, RuntimeError,
                        TypeError, ArithmeticError, IndexError})

_EXCEPTIONS = (Exception, ValueError, KeyError, IndexError, TypeError, ZeroDivisionError,
               ArithmeticError, LookupError, RuntimeError, AttributeError, StopIteration,
               NotImplementedError, OverflowError, AssertionError, decimal.InvalidOperation)


class PrintCollector:
    """``print`` in service code goes nowhere visible (like a container's unread stdout)."""

    def __init__(self, _getattr_: Any = None) -> None:
        self.lines: list[str] = []

    def __call__(self) -> str:
        return "".join(self.lines)

    def _call_print(self, *objects: Any, sep: str = " ", end: str = "\n", **_ignored: Any) -> None:
        if len(self.lines) < 1000:
            self.lines.append(sep.join(str(o) for o in objects) + end)


def build_builtins(guards: Guards, resource: Callable[[str], str],
                   importer: Callable[..., Any]) -> dict[str, Any]:
    """The complete builtins namespace service code sees (nothing of the host's beyond this)."""
    budget = guards.budget

    def range_(*args: int) -> range:
        result = range(*args)
        try:
            size = len(result)
        except OverflowError:
            size = MAX_ITEMS + 1
        if size > MAX_ITEMS:
            budget.limit("allocation", f"range of {size} items exceeds the cap of {MAX_ITEMS}")
        return result

    def collecting(kind: Callable[..., Any]) -> Callable[..., Any]:
        def build(*args: Any, **kwargs: Any) -> Any:
            result = kind(*(guards.counted(a) for a in args), **kwargs)
            budget.allocate(len(result))
            return result
        build.__name__ = kind.__name__
        return build

    def consuming(func: Callable[..., Any]) -> Callable[..., Any]:
        def consume(*args: Any, **kwargs: Any) -> Any:
            return func(*(guards.counted(a) for a in args), **kwargs)
        consume.__name__ = func.__name__
        return consume

    def sum_(iterable: Iterable[Any], start: Any = 0) -> Any:
        if not isinstance(start, (int, float, decimal.Decimal)):
            raise TypeError("sum() start must be a number in service code")
        return sum(guards.counted(iterable), start)

    def int_(value: Any = 0, *base: int) -> int:
        guards.check_formattable(value)
        return int(value, *base)

    def round_(value: Any, *ndigits: int) -> Any:
        guards.check_formattable(value)
        return round(value, *ndigits)

    def format_(value: Any, spec: str = "") -> str:
        if _HUGE_WIDTH.search(spec) or "{" in spec:
            budget.limit("allocation", f'format spec "{spec}" is nested or too wide')
        guards.check_formattable(value)
        return format(value, spec)

    names: dict[str, Any] = {
        "abs": abs, "bool": bool, "callable": callable, "chr": chr, "divmod": divmod,
        "enumerate": enumerate, "filter": filter, "float": float, "hash": hash, "hex": hex,
        "isinstance": isinstance, "issubclass": issubclass, "iter": iter, "len": len, "map": map,
        "next": next, "ord": ord, "repr": repr, "reversed": reversed, "slice": slice, "str": str,
        "zip": zip, "bin": bin, "oct": oct, "None": None, "True": True, "False": False,
        "range": range_, "list": collecting(list), "tuple": collecting(tuple),
        "set": collecting(set), "frozenset": collecting(frozenset), "dict": collecting(dict),
        "sorted": collecting(sorted), "min": consuming(min), "max": consuming(max),
        "any": consuming(any), "all": consuming(all), "sum": sum_, "int": int_,
        "round": round_, "format": format_, "pow": guards.pow, "getattr": guards.getattr,
        "hasattr": guards.hasattr, "resource": resource, "__import__": importer,
        "__build_class__": builtins.__build_class__,
        "_getattr_": guards.getattr, "_getitem_": guards.getitem, "_getiter_": iter,
        "_write_": guards.write, "_apply_": guards.apply, "_inplacevar_": guards.inplacevar,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_print_": PrintCollector, "_step_": budget.step, "_enter_": budget.enter,
        "_leave_": budget.leave, "_add_": guards.add, "_mul_": guards.mul, "_pow_": guards.pow,
        "_lshift_": guards.lshift, "_mod_": guards.mod, "_fmtv_": guards.fmtv,
    }
    for exc in _EXCEPTIONS:
        names[exc.__name__] = exc
    return names


def build_std_modules(guards: Guards) -> dict[str, types.SimpleNamespace]:
    """Read-only views of the allowed standard modules, with the unbounded entry points guarded."""
    budget = guards.budget

    def consuming(func: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args, **kwargs: func(*(guards.materialize(a) for a in args), **kwargs)

    def decimal_checked(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda value: func(guards.check_formattable(value))

    def dumps(obj: Any, **kwargs: Any) -> str:
        if "cls" in kwargs:
            budget.refuse("json.dumps(cls=...) is not allowed")
        indent = kwargs.get("indent")
        if indent is not None and (isinstance(indent, int) and indent > 16
                                   or isinstance(indent, str) and len(indent) > 16):
            budget.limit("allocation", "json indent too large")
        result = json.dumps(obj, **kwargs)
        budget.allocate(len(result))
        return result

    def loads(text: Any, **kwargs: Any) -> Any:
        if "cls" in kwargs:
            budget.refuse("json.loads(cls=...) is not allowed")
        return json.loads(text, **kwargs)

    def regex_sub(function: Callable[..., Any]) -> Callable[..., Any]:
        def sub(pattern: Any, repl: Any, text: Any, *args: Any, **kwargs: Any) -> Any:
            guards.check_sub(repl, text)
            return function(pattern, repl, text, *args, **kwargs)
        return sub

    def tee(iterable: Any, n: int = 2) -> tuple[Iterator[Any], ...]:
        if n > 64:
            budget.limit("allocation", "itertools.tee with more than 64 copies")
        return itertools.tee(iterable, n)

    def members(module: types.ModuleType, names: str) -> dict[str, Any]:
        return {name: getattr(module, name) for name in names.split()}

    math_view = members(math, "ceil fabs floor fsum gcd hypot inf isclose isfinite isinf isnan "
                              "log log10 log2 exp modf nan pi e sqrt trunc copysign pow")
    math_view.update(floor=decimal_checked(math.floor), ceil=decimal_checked(math.ceil),
                     trunc=decimal_checked(math.trunc), fsum=consuming(math.fsum))
    re_view = members(sandbox_regex, "compile match search fullmatch split findall finditer "
                                     "escape error IGNORECASE I MULTILINE M DOTALL S VERBOSE X "
                                     "ASCII A Pattern Match")
    re_view.update(sub=regex_sub(sandbox_regex.sub), subn=regex_sub(sandbox_regex.subn))
    itertools_view = members(itertools, "accumulate chain compress count cycle dropwhile "
                                        "filterfalse groupby islice pairwise repeat starmap "
                                        "takewhile zip_longest")
    for name in ("product", "permutations", "combinations", "combinations_with_replacement"):
        itertools_view[name] = consuming(getattr(itertools, name))
    itertools_view["tee"] = tee
    collections_view = {
        "Counter": consuming(collections.Counter),
        "OrderedDict": consuming(collections.OrderedDict),
        "deque": consuming(collections.deque),
        "defaultdict": consuming(collections.defaultdict),
        "namedtuple": collections.namedtuple,
    }
    functools_view = members(functools, "partial lru_cache cache cmp_to_key")
    functools_view["reduce"] = consuming(functools.reduce)
    views = {
        "math": math_view,
        "json": {"dumps": dumps, "loads": loads, "JSONDecodeError": json.JSONDecodeError},
        "re": re_view,
        "hashlib": members(hashlib, "md5 sha1 sha256 sha512"),
        "datetime": members(datetime, "date datetime timedelta timezone"),
        "decimal": members(decimal, "Decimal InvalidOperation DivisionByZero ROUND_HALF_UP "
                                    "ROUND_HALF_EVEN ROUND_DOWN ROUND_UP ROUND_FLOOR "
                                    "ROUND_CEILING"),
        "collections": collections_view,
        "itertools": itertools_view,
        "functools": functools_view,
        "string": members(string, "ascii_letters ascii_lowercase ascii_uppercase digits "
                                  "hexdigits octdigits punctuation whitespace printable capwords"),
    }
    return {name: types.SimpleNamespace(**view) for name, view in views.items()}
