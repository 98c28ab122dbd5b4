"""Exceptions as .NET prints them (`Exception.ToString()`: `Type: Message` and the stack frames).

The cart store's catch-all puts `{ex}` into the status detail, so the exception's type, message
and frames reach the caller (src/cart/src/cartstore/ValkeyCartStore.cs, the catch blocks).
The image is built in /usr/src/app (src/cart/Dockerfile), which is the path in the frames.
"""

SOURCE = "/usr/src/app/src/cartstore/ValkeyCartStore.cs"


class DotNetException(Exception):
    def __init__(self, kind, message, frames=None):
        self.kind = kind
        self.message = message
        self.frames = list(frames or [])

    def text(self):
        lines = [f"{self.kind}: {self.message}"]
        for frame in self.frames:
            lines.append(f"   at {frame}")
        return "\n".join(lines)


def frame(method, line):
    return f"cart.cartstore.ValkeyCartStore.{method} in {SOURCE}:line {line}"


def from_builtin(ex):
    """What the same slip throws in C# (a dictionary indexer, a null reference, a parse)."""
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


def parse_int(text):
    """int.Parse(string): null and non-numeric input throw."""
    if text is None:
        raise DotNetException("System.ArgumentNullException", "Value cannot be null. (Parameter 's')")
    stripped = text.strip()
    digits = stripped[1:] if stripped.startswith("-") else stripped
    if not digits.isdigit():
        raise DotNetException("System.FormatException",
                              f"The input string '{text}' was not in a correct format.")
    return int(stripped)


def single_or_default(items, product_id):
    """Enumerable.SingleOrDefault(i => i.ProductId == productId)."""
    found = [item for item in items if item["product_id"] == product_id]
    if len(found) > 1:
        raise DotNetException("System.InvalidOperationException",
                              "Sequence contains more than one matching element")
    return found[0] if found else None


def single(items, product_id):
    """Enumerable.Single(i => i.ProductId == productId)."""
    found = [item for item in items if item["product_id"] == product_id]
    if not found:
        raise DotNetException("System.InvalidOperationException", "Sequence contains no matching element")
    if len(found) > 1:
        raise DotNetException("System.InvalidOperationException",
                              "Sequence contains more than one matching element")
    return found[0]
