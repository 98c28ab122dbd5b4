"""quote: the shipping cost per item count (PHP 8, Slim on a ReactPHP HTTP server).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/quote/app/routes.php (calculateQuote and the
POST /getquote route) and src/quote/public/index.php. calculateQuote returns from its `finally`
block, so anything thrown inside it (the missing field, a non-array body) is swallowed and 0.0 is
answered with 200; the route writes json_encode of the float.
"""

COST_PER_ITEM = 8.99
ROUTES_FILE = "/var/www/app/routes.php"


class PhpError(Exception):
    """A PHP Error/Exception thrown outside calculateQuote's try/finally (Slim answers 500)."""

    def __init__(self, kind, message, line):
        self.kind = kind
        self.message = message
        self.line = line


def slim_error(ctx, err):
    """Slim ErrorMiddleware (displayErrorDetails, logErrors on): logs the error, answers 500."""
    ctx.log("error", f"Slim Application Error Type: {err.kind} Code: 0 Message: {err.message} "
                     f"File: {ROUTES_FILE} Line: {err.line}")
    return {"status": 500, "body": {"message": "Slim Application Error",
                                    "exception": [{"type": err.kind, "code": 0, "message": err.message,
                                                   "file": ROUTES_FILE, "line": err.line}]}}


def php_intval(value):
    """intval(): numbers truncate, numeric-leading strings keep their digits, the rest is 0."""
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        digits = ""
        for ch in value.strip():
            if ch.isdigit() or (ch in "+-" and not digits):
                digits = digits + ch
            else:
                break
        return int(digits) if digits.strip("+-") else 0
    if value is None or hasattr(value, "keys") or hasattr(value, "append"):
        return 1 if value else 0
    return int(value)


def calculate_quote(ctx, body):
    quote = 0.0
    if not hasattr(body, "keys"):
        # array_key_exists(): Argument #2 ($array) must be of type array (a TypeError, swallowed)
        return quote
    if "numberOfItems" not in body:
        # InvalidArgumentException('numberOfItems not provided'), recorded on the span only
        return quote
    number_of_items = php_intval(body["numberOfItems"])
    return round(COST_PER_ITEM * number_of_items, 2)


def getquote(ctx, request):
    try:
        data = calculate_quote(ctx, request.get("body"))
    except PhpError as err:
        return slim_error(ctx, err)
    ctx.log("info", f"Calculated quote total={data}")
    return data
