"""Exceptions as .NET prints them (`Exception.ToString()` starts `Type: Message`; an inner
exception follows after ` ---> `), for the accounting consumer's logs."""


class DotNetException(Exception):
    def __init__(self, kind, message, inner=None):
        self.kind = kind
        self.message = message
        self.inner = inner

    def text(self):
        head = f"{self.kind}: {self.message}"
        if self.inner is None:
            return head
        return f"{head}\n ---> {self.inner.text()}"


def from_builtin(ex):
    """What the same slip throws in C#."""
    if isinstance(ex, DotNetException):
        return ex
    if isinstance(ex, KeyError):
        key = ex.args[0] if ex.args else ""
        return DotNetException("System.Collections.Generic.KeyNotFoundException",
                               f"The given key '{key}' was not present in the dictionary.")
    if isinstance(ex, IndexError):
        return DotNetException("System.ArgumentOutOfRangeException",
                               "Index was out of range. Must be non-negative and less than the size "
                               "of the collection. (Parameter 'index')")
    if isinstance(ex, ZeroDivisionError):
        return DotNetException("System.DivideByZeroException", "Attempted to divide by zero.")
    if isinstance(ex, ValueError):
        return DotNetException("System.FormatException", "Input string was not in a correct format.")
    return DotNetException("System.NullReferenceException",
                           "Object reference not set to an instance of an object.")


def npgsql_error(err):
    """Npgsql's exception for a failed statement (PostgresException carries the SQLSTATE) or a
    failed connection (NpgsqlException with the driver's text)."""
    if err.kind == "server":
        return DotNetException("Npgsql.PostgresException (0x80004005)", f"{err.sqlstate}: {err.message}")
    return DotNetException("Npgsql.NpgsqlException (0x80004005)", err.message)
