"""Python's exception words never show in a service that is not written in Python.

The twin's services are Python models of Go, C#, Node.js, Python and Java programs. A code fault
that raises inside one must be reported in that program's own words (a Go runtime panic,
System.NullReferenceException, TypeError: Cannot read properties of undefined,
java.lang.NullPointerException): a KeyError in a Go service's log exists on no real cluster and
would tell an agent that the code was changed. Texts a Python service answers with (grpcio's
"Exception calling application: ...") may be relayed by its callers, as on a cluster.
"""

from __future__ import annotations

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.orchestrator import release_change
from pytest_marathon.twin import langerrors
from pytest_marathon.twin.engine import Twin


def _tells_in_non_python_output(twin: Twin) -> list[str]:
    """Every log line and failed-span status of a non-Python service that carries Python words."""
    languages = {name: dep.language for name, dep in twin.spec.deployments.items()}
    found = []
    for line in twin.logs(since=-1e9, limit=10**7):
        language = languages.get(line["service"], "")
        if language != "python" and (words := langerrors.python_tells(line["message"], language)):
            found.append(f"{line['service']} log: {words}: {line['message'][:160]}")
    for summary in twin.traces(since=-1e9, errors_only=True, limit=10**6):
        for span in twin.trace(summary["trace_id"])["spans"]:
            language = languages.get(span["service"], "")
            if language != "python" and (words := langerrors.python_tells(span["status_message"], language)):
                found.append(f"{span['service']} span: {words}: {span['status_message'][:160]}")
    return found


@pytest.mark.parametrize(("exc", "language", "expected"), [
    (KeyError("user_id"), "go", "runtime error: invalid memory address or nil pointer dereference"),
    (AttributeError("'int' object has no attribute 'get'"), "nodejs",
     "TypeError: Cannot read properties of undefined (reading 'get')"),
    (KeyError("userId"), "csharp",
     "System.Collections.Generic.KeyNotFoundException: The given key 'userId' was not present in the dictionary."),
    (TypeError("'NoneType' object is not subscriptable"), "java", "java.lang.NullPointerException"),
    (ZeroDivisionError("division by zero"), "go", "runtime error: integer divide by zero"),
    (ValueError("invalid literal for int() with base 10: 'x1'"), "csharp",
     "System.FormatException: The input string 'x1' was not in a correct format."),
])
def test_a_python_exception_is_named_in_the_service_language(exc: Exception, language: str, expected: str) -> None:
    """Runtime texts: Go runtime/error.go and runtime/panic.go; V8's messages; .NET's
    System.Private.CoreLib resources; the JDK's exception classes."""
    text = langerrors.exception_text(language, exc)
    assert text == expected
    assert not langerrors.python_tells(text, language)


def test_the_tell_check_catches_python_words() -> None:
    assert langerrors.python_tells("panic: KeyError: 'user_id'", "go") == ["KeyError"]
    assert "object has no attribute" in langerrors.python_tells("'int' object has no attribute 'get'", "java")
    assert langerrors.python_tells("TypeError: Cannot read properties of undefined", "nodejs") == []
    assert langerrors.python_tells("TypeError: x", "go") == ["TypeError"]
    relayed = "failed: rpc error: code = Unknown desc = Exception calling application: 'int' object has no attribute 'x'"
    assert langerrors.python_tells(relayed, "go") == []


@pytest.mark.slow
def test_no_code_fault_puts_python_words_in_a_non_python_service() -> None:
    """Each code fault of the catalog, released alone on a fresh twin and run under load for 5
    minutes (plus its symptom probe): no Go, C#, Node.js or Java log line or span status carries
    a Python exception name or CPython's phrasing."""
    offenders: dict[str, list[str]] = {}
    entries = [e for e in load_catalog("boutique") if e.category == "code"]
    assert len(entries) >= 10
    for entry in entries:
        twin = create_backend("boutique", seed=1)
        twin.advance_to(0.0)
        assert release_change(twin, entry).ok, entry.id
        twin.advance_to(300.0)
        twin.probe(entry.probe)
        found = _tells_in_non_python_output(twin)
        if found:
            offenders[entry.id] = found[:3]
    assert not offenders, offenders
