r"""The `re` that service code imports: Python's interface, matched by RE2.

Service code runs untrusted (an agent's patch is built and deployed like any other), and the
sandbox bounds its work by counting Python steps. A regular-expression match runs inside a C engine
that the step count cannot see, and Python's engine backtracks: `(a+)+$` against forty `a`s and a
`b` takes minutes, so one patch could stall a whole marathon. RE2 matches in time linear in the
input, with no timeout and so no wall-clock dependence. What it cannot do (backreferences,
lookaround, verbose patterns) raises `re.error` when the pattern is compiled, with RE2's reason.
`\w`, `\d` and `\s` are ASCII classes, as under `re.ASCII`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import re2

# the values of Python's own flags, so code that combines them reads as it does with `re`
IGNORECASE = I = int(re.IGNORECASE)  # noqa: E741 - re's own short name
MULTILINE = M = int(re.MULTILINE)
DOTALL = S = int(re.DOTALL)
VERBOSE = X = int(re.VERBOSE)
ASCII = A = int(re.ASCII)
_INLINE = ((IGNORECASE, "i"), (MULTILINE, "m"), (DOTALL, "s"))
_KNOWN_FLAGS = IGNORECASE | MULTILINE | DOTALL | VERBOSE | ASCII

error = re2.error
Pattern = re2._Regexp
Match = re2._Match
escape = re2.escape


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, flags: int) -> Any:
    if flags & ~_KNOWN_FLAGS:
        raise re2.error(f"unknown regular-expression flags {flags:#x}")
    if flags & VERBOSE:
        raise re2.error("re.VERBOSE is not supported (patterns are matched by RE2); write the "
                        "pattern without it")
    inline = "".join(letter for flag, letter in _INLINE if flags & flag)
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(f"(?{inline}){pattern}" if inline else pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise re2.error(f"{reason} in pattern {pattern!r} (patterns are matched by RE2: no "
                        "backreferences or lookaround)") from None


def compile(pattern: Any, flags: int = 0) -> Any:  # noqa: A001 - it is re.compile
    if isinstance(pattern, Pattern):
        if flags:
            raise ValueError("cannot process flags argument with a compiled pattern")
        return pattern
    if not isinstance(pattern, str):
        raise TypeError(f"first argument must be a string or compiled pattern, got {type(pattern).__name__}")
    return _compiled(pattern, int(flags))


def _on_pattern(method: str) -> Callable[..., Any]:
    """`re.match(pattern, string, flags=0)` and its siblings, as in Python's module."""
    def call(pattern: Any, string: Any, flags: int = 0) -> Any:
        return getattr(compile(pattern, flags), method)(string)
    call.__name__ = method
    return call


match = _on_pattern("match")
search = _on_pattern("search")
fullmatch = _on_pattern("fullmatch")
findall = _on_pattern("findall")
finditer = _on_pattern("finditer")


def split(pattern: Any, string: Any, maxsplit: int = 0, flags: int = 0) -> Any:
    return compile(pattern, flags).split(string, maxsplit)


def sub(pattern: Any, repl: Any, string: Any, count: int = 0, flags: int = 0) -> Any:
    return compile(pattern, flags).sub(repl, string, count)


def subn(pattern: Any, repl: Any, string: Any, count: int = 0, flags: int = 0) -> Any:
    return compile(pattern, flags).subn(repl, string, count)
