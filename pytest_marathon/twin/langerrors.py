"""How each real service's runtime reports a fault in its code, in that runtime's own words.

Service code is modelled in Python, but the services are written in Go, C#, Node.js, Python and
Java. An exception escaping a handler must look the way the real runtime reports it: a Python
exception name (KeyError, "'int' object has no attribute") in a Go or Java service's log would
tell an agent that the code was changed, which nothing on a real cluster does. So each builtin
Python exception is translated to what the same mistake raises in the service's language, and
each server framework's handling of it is reproduced:

* Go gRPC (grpc-go ``server.go`` has no ``recover()``): the panic kills the process, the runtime
  prints ``panic: ...`` and ``goroutine N [running]:``, exit status 2; the caller's RPC fails with
  ``error reading from server: EOF`` (grpc-go ``internal/transport/http2_client.go``).
* Go net/http (the frontend): ``net/http`` ``conn.serve`` recovers the panic per request, logs
  ``http: panic serving <addr>: ...`` and closes the connection; the process lives on.
* Node.js grpc-js (``packages/grpc-js/src/server.ts`` ``handleUnary``): a throw in the handler is
  caught; status UNKNOWN ``Server method handler threw error <message>``; nothing is logged.
* Python grpcio (``grpc/_server.py`` ``_call_behavior``): UNKNOWN ``Exception calling
  application: <exception>``, logged with ``logging.exception``.
* ASP.NET Core gRPC (``Grpc.AspNetCore.Server`` ``ServerCallHandlerBase``): UNKNOWN ``Exception was
  thrown by handler.``; logs ``Error when executing service method '<Method>'.`` with the exception.
* grpc-java (``io.grpc.internal.ServerImpl`` ``internalClose``): UNKNOWN with no description;
  ``SerializingExecutor`` logs ``Exception while executing runnable ...`` at SEVERE.

The OpenTelemetry demo adds:

* Next.js API routes (the Node.js frontend; ``next/dist/server/api-utils/node/api-resolver``
  ``apiResolver``): the handler's rejection is logged with ``console.error`` and the client gets
  500 ``Internal Server Error``.
* Sinatra in production (the Ruby email service): ``Sinatra::Base#handle_exception!`` answers 500
  and, with ``dump_errors`` on outside the test environment, logs ``<Class> - <message>:`` and the
  backtrace.
* actix-web (the Rust shipping service): a panic in a handler unwinds the worker thread, which
  prints ``thread '<name>' panicked at <file>:<line>:`` and the message; the connection is dropped
  without a response and actix starts a new worker (the process lives on).
* Slim 4 with ``addErrorMiddleware(true, true, true)`` (the PHP quote service): 500 with the error
  details, logged as ``Slim Application Error`` with ``Type:`` and ``Message:`` lines.
* gRPC C++ (the currency service): an exception nothing catches ends in ``std::terminate``: the
  C++ runtime prints ``terminate called after throwing an instance of '<type>'`` and ``what():``,
  then aborts (SIGABRT, exit 134); a null dereference is a segmentation fault (exit 139).
* Kotlin on the JVM (fraud-detection) words exceptions as Java does.

Train Ticket adds:

* Spring Boot 1.5 on Tomcat 8.5 (its Java `kind: http` services, spring-boot-starter-parent
  1.5.22 in FudanSELab/train-ticket ``pom.xml``): an exception escaping a controller reaches
  Tomcat's ``StandardWrapperValve``, which logs ``Servlet.service() for servlet [dispatcherServlet]
  in context with path [] threw exception [Request processing failed; nested exception is <exc>]
  with root cause`` and the root cause; ``BasicErrorController`` answers 500 with
  ``DefaultErrorAttributes`` (timestamp, status, error, exception, message, path). A service's own
  exception class carries the whole Java text (``<class>: <message>``) as its message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from pytest_marathon.twin.sandbox_errors import SandboxLimit

# Builtin Python exceptions a code fault can raise; only these are translated. An exception class
# the service code defines itself stands for an error of the service's own, shown by its message.
_NONE_LIKE = (KeyError, AttributeError, TypeError)
_ATTRIBUTE = re.compile(r"has no attribute '([^']+)'")
_LITERAL = re.compile(r"invalid literal for \w+\(\)(?: with base \d+)?: '(.*)'$")
GO_EXIT_PANIC = 2  # a Go program that dies of a panic exits with status 2 (runtime/panic.go)


@dataclass(frozen=True)
class HandlerFailure:
    """What a request that raised produces: the status the caller gets, the lines the service
    logs, and whether the process dies (and with which exit code)."""

    code: str
    description: str
    logs: list[tuple[str, str]] = field(default_factory=list)
    exit_code: int | None = None
    no_response: bool = False


def _missing_name(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    found = _ATTRIBUTE.search(str(exc))
    return found.group(1) if found else ""


def _is_builtin(exc: BaseException) -> bool:
    return type(exc).__module__ == "builtins" and type(exc) is not Exception


def _message(exc: BaseException) -> str:
    return str(exc.args[0]) if len(exc.args) == 1 else str(exc)


def go_panic_value(exc: BaseException) -> str:
    """What follows ``panic: `` for the same mistake in Go (runtime errors from runtime/error.go
    and runtime/panic.go)."""
    if isinstance(exc, SandboxLimit) and exc.kind == "recursion":
        return "runtime: goroutine stack exceeds 1000000000-byte limit"
    if not _is_builtin(exc):
        return _message(exc)
    if isinstance(exc, ZeroDivisionError):
        return "runtime error: integer divide by zero"
    if isinstance(exc, IndexError):
        return "runtime error: index out of range [0] with length 0"
    return "runtime error: invalid memory address or nil pointer dereference"


def go_panic_lines(exc: BaseException, goroutine: int) -> list[str]:
    """The panic as the Go runtime prints it to stderr (the message, the signal line for a nil
    dereference, the goroutine header)."""
    value = go_panic_value(exc)
    if value.startswith("runtime: goroutine stack exceeds"):
        return [value, "fatal error: stack overflow", "", f"goroutine {goroutine} [running]:"]
    lines = [f"panic: {value}"]
    if value.endswith("nil pointer dereference"):
        lines.append("[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x0]")
    return lines + ["", f"goroutine {goroutine} [running]:"]


def node_error(exc: BaseException) -> str:
    """The JavaScript error the same mistake throws in V8 (``name: message``)."""
    if not _is_builtin(exc):
        return f"Error: {_message(exc)}"
    if isinstance(exc, _NONE_LIKE):
        name = _missing_name(exc)
        if name:
            return f"TypeError: Cannot read properties of undefined (reading '{name}')"
        return "TypeError: Cannot convert undefined or null to object"
    if isinstance(exc, IndexError):
        return "TypeError: Cannot read properties of undefined (reading '0')"
    if isinstance(exc, RecursionError):
        return "RangeError: Maximum call stack size exceeded"
    return "TypeError: Cannot convert undefined or null to object"


def dotnet_exception(exc: BaseException) -> str:
    """The .NET exception the same mistake throws (``Type: Message``, as ToString starts)."""
    if not _is_builtin(exc):
        return f"System.Exception: {_message(exc)}"
    if isinstance(exc, KeyError):
        return (f"System.Collections.Generic.KeyNotFoundException: The given key '{_missing_name(exc)}' "
                "was not present in the dictionary.")
    if isinstance(exc, IndexError):
        return ("System.ArgumentOutOfRangeException: Index was out of range. Must be non-negative and "
                "less than the size of the collection. (Parameter 'index')")
    if isinstance(exc, ZeroDivisionError):
        return "System.DivideByZeroException: Attempted to divide by zero."
    if isinstance(exc, ValueError):
        found = _LITERAL.search(str(exc))
        if found:
            return f"System.FormatException: The input string '{found.group(1)}' was not in a correct format."
        return "System.FormatException: Input string was not in a correct format."
    return "System.NullReferenceException: Object reference not set to an instance of an object."


def java_exception(exc: BaseException) -> str:
    """The Java exception the same mistake throws (``Throwable.toString``)."""
    if not _is_builtin(exc):
        return f"java.lang.RuntimeException: {_message(exc)}"
    if isinstance(exc, IndexError):
        return "java.lang.IndexOutOfBoundsException: Index 0 out of bounds for length 0"
    if isinstance(exc, ZeroDivisionError):
        return "java.lang.ArithmeticException: / by zero"
    if isinstance(exc, ValueError):
        found = _LITERAL.search(str(exc))
        return f'java.lang.NumberFormatException: For input string: "{found.group(1) if found else ""}"'
    if isinstance(exc, RecursionError):
        return "java.lang.StackOverflowError"
    return "java.lang.NullPointerException"


def python_exception(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _python_str(exc: BaseException) -> str:
    """str() of the exception in the Python service; a failed call is grpcio's _InactiveRpcError."""
    if getattr(exc, "from_call", False):
        code, message = exc.code, exc.message  # type: ignore[attr-defined]
        number = exc.status_number  # type: ignore[attr-defined]
        return ("<_InactiveRpcError of RPC that terminated with:\n"
                f"\tstatus = StatusCode.{code}\n\tdetails = \"{message}\"\n"
                f"\tdebug_error_string = \"UNKNOWN:Error received from peer  "
                f"{{grpc_message:\"{message}\", grpc_status:{number}}}\"\n>")
    return str(exc)


def ruby_exception(exc: BaseException) -> str:
    """The Ruby exception the same mistake raises (``Class: message``; Ruby 3.4 quotes with ')."""
    if not _is_builtin(exc):
        return f"RuntimeError: {_message(exc)}"
    if isinstance(exc, KeyError):
        return f'KeyError: key not found: "{_missing_name(exc)}"'
    if isinstance(exc, ZeroDivisionError):
        return "ZeroDivisionError: divided by 0"
    if isinstance(exc, ValueError):
        found = _LITERAL.search(str(exc))
        return f'ArgumentError: invalid value for Integer(): "{found.group(1) if found else ""}"'
    if isinstance(exc, RecursionError):
        return "SystemStackError: stack level too deep"
    name = _missing_name(exc) or "[]"
    return f"NoMethodError: undefined method '{name}' for nil"


def rust_panic(exc: BaseException) -> str:
    """The panic message the same mistake gives in Rust."""
    if not _is_builtin(exc):
        return _message(exc)
    if isinstance(exc, IndexError):
        return "index out of bounds: the len is 0 but the index is 0"
    if isinstance(exc, ZeroDivisionError):
        return "attempt to divide by zero"
    if isinstance(exc, ValueError):
        return "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }"
    if isinstance(exc, RecursionError):
        return "thread has overflowed its stack"
    return "called `Option::unwrap()` on a `None` value"


def php_error(exc: BaseException) -> str:
    """The PHP 8 error the same mistake throws (``Class: message``)."""
    if not _is_builtin(exc):
        return f"Exception: {_message(exc)}"
    if isinstance(exc, KeyError):
        return f'ErrorException: Undefined array key "{_missing_name(exc)}"'
    if isinstance(exc, ZeroDivisionError):
        return "DivisionByZeroError: Division by zero"
    if isinstance(exc, ValueError):
        return "ValueError: The value is not a valid number"
    name = _missing_name(exc) or "get"
    return f"Error: Call to a member function {name}() on null"


def cpp_terminate(exc: BaseException) -> tuple[int, str]:
    """(exit code, what the C++ runtime prints) for an exception no handler catches."""
    if isinstance(exc, (KeyError, IndexError)):
        return 134, "terminate called after throwing an instance of 'std::out_of_range'\n  what():  map::at"
    if isinstance(exc, ValueError):
        return 134, "terminate called after throwing an instance of 'std::invalid_argument'\n  what():  stod"
    if _is_builtin(exc) and isinstance(exc, _NONE_LIKE + (ZeroDivisionError,)):
        return 139, "Segmentation fault (core dumped)"
    return 134, f"terminate called after throwing an instance of 'std::runtime_error'\n  what():  {_message(exc)}"


def exception_text(language: str, exc: BaseException) -> str:
    """An exception as the service's own runtime names it (for a log line or a message)."""
    if language == "ruby":
        return ruby_exception(exc)
    if language == "rust":
        return rust_panic(exc)
    if language == "php":
        return php_error(exc)
    if language == "cpp":
        return cpp_terminate(exc)[1]
    if language == "kotlin":
        return java_exception(exc)
    if language == "go":
        return go_panic_value(exc)
    if language == "nodejs":
        return node_error(exc)
    if language == "csharp":
        return dotnet_exception(exc)
    if language == "java":
        return java_exception(exc)
    return python_exception(exc)


def spring_exception(exc: BaseException) -> str:
    """A Java service's exception as ``Throwable.toString`` prints it: a builtin Python mistake in
    Java's words, a service's own exception (already Java text) as it is."""
    if _is_builtin(exc) or isinstance(exc, SandboxLimit):
        return java_exception(exc)
    return _message(exc)


def spring_boot_error(exc: BaseException, path: str, now_ms: int) -> HandlerFailure:
    """Tomcat's log line and Spring Boot 1.5's JSON error body for an exception a controller threw."""
    text = spring_exception(exc)
    name, _, message = text.partition(": ")
    root = text.rsplit("; nested exception is ", 1)[-1]
    body = json.dumps({"timestamp": now_ms, "status": 500, "error": "Internal Server Error", "exception": name,
                       "message": message or "No message available", "path": path}, separators=(",", ":"))
    log = (f"Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception "
           f"[Request processing failed; nested exception is {text}] with root cause\n{root}")
    return HandlerFailure("INTERNAL", body, [("error", log)])


def handler_failure(language: str, kind: str, method: str, exc: BaseException, *, goroutine: int = 1,
                    peer: str = "", path: str = "", now_ms: int = 0) -> HandlerFailure:
    """How the service's server framework handles `exc` escaping the handler of `method`."""
    if language == "java" and kind == "http":
        return spring_boot_error(exc, path, now_ms)
    if language == "nodejs" and kind == "http":
        return HandlerFailure("INTERNAL", "Internal Server Error", [("error", node_error(exc))])
    if language == "ruby":
        text = ruby_exception(exc)
        name, _, message = text.partition(": ")
        return HandlerFailure("INTERNAL", "<h1>Internal Server Error</h1>",
                              [("error", f"{name} - {message}:\n\tapp.rb in '{method}'")])
    if language == "rust":
        return HandlerFailure("UNAVAILABLE", "connection closed before message completed",
                              [("error", f"thread 'actix-rt|system:0|arbiter:0' panicked at src/main.rs:\n"
                                         f"{rust_panic(exc)}")], no_response=True)
    if language == "php":
        text = php_error(exc)
        name, _, message = text.partition(": ")
        return HandlerFailure("INTERNAL", f'{{"message": "{message}", "exception": [{{"type": "{name}"}}]}}',
                              [("error", f"Slim Application Error\nType: {name}\nCode: 0\nMessage: {message}")])
    if language == "cpp":
        exit_code, text = cpp_terminate(exc)
        return HandlerFailure("UNAVAILABLE", "Socket closed", [("error", text)], exit_code=exit_code)
    if language == "kotlin":
        language = "java"
    if language == "go":
        lines = go_panic_lines(exc, goroutine)
        if kind == "http":
            # net/http conn.serve: recovered, logged through the server's ErrorLog, connection closed
            first = lines[0].removeprefix("panic: ")
            return HandlerFailure("UNAVAILABLE", "EOF",
                                  [("error", "\n".join([f"http: panic serving {peer}: {first}", *lines[1:]]))],
                                  no_response=True)
        return HandlerFailure("UNAVAILABLE", "error reading from server: EOF",
                              [("error", "\n".join(lines))], exit_code=GO_EXIT_PANIC)
    if language == "nodejs":
        return HandlerFailure("UNKNOWN", f"Server method handler threw error {node_error(exc).split(': ', 1)[-1]}")
    if language == "csharp":
        return HandlerFailure("UNKNOWN", "Exception was thrown by handler.",
                              [("error", f"Error when executing service method '{method}'.\n"
                                         f"{dotnet_exception(exc)}")])
    if language == "java":
        runnable = ("io.grpc.internal.ServerImpl$JumpToApplicationThreadServerStreamListener$1HalfClosed@"
                    f"{goroutine * 2654435761 % 0xFFFFFFF:x}")
        return HandlerFailure("UNKNOWN", "",
                              [("error", f"Exception while executing runnable {runnable}\n{java_exception(exc)}")])
    details = f"Exception calling application: {_python_str(exc)}"
    name = "grpc._channel._InactiveRpcError" if getattr(exc, "from_call", False) else type(exc).__name__
    return HandlerFailure("UNKNOWN", details,
                          [("error", f"{details}\nTraceback (most recent call last):\n{name}: {_python_str(exc)}")])


def startup_failure(language: str, exc: BaseException) -> tuple[int, list[str]]:
    """A crash while the process starts (main() panics or raises): exit code and what it printed."""
    if language == "ruby":
        text = ruby_exception(exc)
        name, _, message = text.partition(": ")
        return 1, [f"app.rb:1:in '<main>': {message} ({name})"]
    if language == "rust":
        return 101, [f"thread 'main' panicked at src/main.rs:\n{rust_panic(exc)}"]
    if language == "php":
        return 255, [f"PHP Fatal error:  Uncaught {php_error(exc)}"]
    if language == "cpp":
        exit_code, text = cpp_terminate(exc)
        return exit_code, [text]
    if language == "kotlin":
        language = "java"
    if language == "go":
        return GO_EXIT_PANIC, ["\n".join(go_panic_lines(exc, 1))]
    if language == "nodejs":
        return 1, [f"Uncaught {node_error(exc)}"]
    if language == "csharp":
        return 134, [f"Unhandled exception. {dotnet_exception(exc)}"]
    if language == "java":
        return 1, [f'Exception in thread "main" {java_exception(exc)}']
    return 1, [f"Traceback (most recent call last):\n{python_exception(exc)}"]


# Words only Python prints: builtin exception class names and CPython's own message phrasings.
# A non-Python service's logs and error texts must contain none of them (see the fidelity tests).
PYTHON_EXCEPTION_NAMES = tuple(sorted(
    name for name, value in vars(__import__("builtins")).items()
    if isinstance(value, type) and issubclass(value, BaseException) and not issubclass(value, Warning)
    and name != "Exception"
))
# JavaScript's own error classes that share a Python name (ECMA-262 NativeError types)
_SHARED_NAMES = {
    "nodejs": {"TypeError", "SyntaxError"},
    # Ruby's core classes of the same names (Ruby docs: Exception hierarchy)
    "ruby": {"KeyError", "ZeroDivisionError", "TypeError", "IndexError", "NameError", "RuntimeError",
             "NotImplementedError", "StopIteration", "ArgumentError", "SystemExit", "Exception"},
    # PHP 8's built-in Error classes (php.net: Predefined Exceptions, SPL)
    "php": {"TypeError", "ValueError", "ArithmeticError", "Exception", "RuntimeError"},
}
PYTHON_PHRASES = (
    "object has no attribute", "object is not subscriptable", "object is not callable",
    "object is not iterable", "unsupported operand type", "can only concatenate",
    "invalid literal for int()", "list index out of range", "NoneType", "Traceback (most recent call last)",
    "not supported between instances of", "takes 1 positional argument", "missing 1 required positional",
    "division by zero",
)


def python_tells(text: str, language: str = "") -> list[str]:
    """The Python-only exception words in `text` (empty when it reads like `language`'s runtime).
    What follows grpcio's "Exception calling application:" is a Python service's own answer,
    relayed by its caller as any client relays a status, so it is not counted."""
    text = text.split("Exception calling application:", 1)[0]
    shared = _SHARED_NAMES.get(language, set())
    found = [name for name in PYTHON_EXCEPTION_NAMES
             if name not in shared and re.search(rf"\b{name}\b", text)]
    return found + [phrase for phrase in PYTHON_PHRASES if phrase in text]
