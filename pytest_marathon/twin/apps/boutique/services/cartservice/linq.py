"""The System.Linq element operators RedisCartStore.cs uses on a cart's lines, with .NET's
semantics: SingleOrDefault gives null when nothing matches and throws when several do; First
throws when nothing matches. (Upstream: microservices-demo v0.10.6
src/cartservice/src/cartstore/RedisCartStore.cs AddItemAsync; .NET System.Linq Enumerable.)"""


class InvalidOperation(Exception):
    """System.InvalidOperationException, as its ToString() begins."""

    def __init__(self, message):
        self.message = message

    def text(self):
        return f"System.InvalidOperationException: {self.message}"


def matching(lines, product_id):
    return [line for line in lines if line["product_id"] == product_id]


def single_or_default(lines, product_id):
    found = matching(lines, product_id)
    if len(found) > 1:
        raise InvalidOperation("Sequence contains more than one matching element")
    return found[0] if found else None


def first(lines, product_id):
    found = matching(lines, product_id)
    if not found:
        raise InvalidOperation("Sequence contains no matching element")
    return found[0]
