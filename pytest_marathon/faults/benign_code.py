"""Harmless source changes for ordinary code releases: real diffs that change no behaviour.

A code fault is a commit, so `get_source` shows its diff between two revisions. If an ordinary
code release shipped the same source under a new build tag, its diff would be empty and every
non-empty diff would be a fault. Real pipelines ship commits that do nothing a caller can see all
the time (a reworded docstring, a commented constant, a helper added ahead of its first use,
digit separators in a literal), so an ordinary code release here is such a commit, delivered as
a unified diff through the same release path (`Backend.release(patch=...)`) as a code fault:
same build, same `<version>-<7 hex>` tag, same diff headers.

Each service has its own set of edits (written against its source here, the twin's Python
stand-in for the real service); a release draws one from the set with its own seed. An edit
never touches what runs: only docstrings, comments, literal spelling, and new self-contained
functions nothing calls yet, so no log line, error, latency or level changes.

A later code fault's patch must still apply to the edited source (patches apply strictly, by
line and context, twin/patching.py), so an edit is used only when every patch the schedule will
deliver to the service still applies on top of it; edits that keep line numbers (or append at
the end of a file) are preferred for that reason.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_marathon.twin.patching import PatchError, apply_patch

MODULE = "service.py"


@dataclass(frozen=True)
class Edit:
    """One candidate commit: what it does to the files and the commit subjects it could carry."""

    name: str
    apply: Callable[[dict[str, str]], dict[str, str] | None]
    subjects: tuple[str, ...]
    ident: str = ""


#: Subjects per kind of edit (each also in `phrasing.CODE_SUBJECTS`, so the giveaway check reads
#: them). `{name}` is the constant or function the edit touches: code changes' subjects name
#: identifiers ("rename price_usd to price"), so ordinary commits name theirs too.
DOC_SUBJECTS = ("document the service module", "reword the module docstring", "tidy documentation")
COMMENT_SUBJECTS = ("comment the service constants", "document the limits in place", "tidy comments",
                    "comment {name}", "document {name} in place")
HELPER_SUBJECTS = ("add a helper for the next change", "extract a small helper", "rename internal helpers",
                   "add {name} for the next change", "extract {name}")
LITERAL_SUBJECTS = ("use digit separators in numeric constants", "reformat with the new linter settings")
FUNCDOC_SUBJECTS = ("document the request handlers", "document the request fields", "tidy documentation",
                    "document {name}", "add a docstring to {name}")

# Per service: alternative first docstring lines, trailing comments for top-level constants,
# docstrings for functions that lack one, and self-contained helpers (argument-only, no globals,
# so they compile whatever else the module holds).
_DOCS: dict[str, tuple[str, ...]] = {
    "adservice": ('"""adservice: serves ads for the page\'s context keywords, or random ads when none match."""',),
    "cartservice": ('"""cartservice: shopping carts stored in redis-cart, one hash per user."""',),
    "checkoutservice": ('"""checkoutservice: PlaceOrder, which calls cart, catalog, currency, shipping, payment and email."""',),
    "currencyservice": ('"""currencyservice: converts money between currencies via EUR, carrying units and nanos."""',),
    "emailservice": ('"""emailservice: renders the order confirmation mail (dummy mode: logged, not sent)."""',),
    "frontend": ('"""frontend: the shop\'s HTTP routes. One handler per route named in app.yaml.',),
    "paymentservice": ('"""paymentservice: checks the card and charges it (a dummy charge)."""',),
    "productcatalogservice": ('"""productcatalogservice: the product catalog, loaded from products.json at start-up."""',),
    "recommendationservice": ('"""recommendationservice: up to five catalog products other than the ones in view."""',),
    "shippingservice": ('"""shippingservice: shipping quotes and tracking numbers."""',),
}
_COMMENTS: dict[str, dict[str, str]] = {
    "adservice": {"MAX_ADS_TO_SERVE": "ads per response"},
    "cartservice": {"CART_FIELD": "hash field holding the serialised cart",
                    "MAX_QUANTITY": "per line item"},
    "currencyservice": {"NANOS_PER_UNIT": "10^9 nanos make one unit"},
    "emailservice": {"TEMPLATE": "loaded once at start-up"},
    "frontend": {"DEFAULT_CURRENCY": "used when the session has none",
                 "MAX_RECOMMENDATIONS_SHOWN": "on the product page"},
    "paymentservice": {"EPOCH_YEAR": "reference date for expiry checks",
                       "SECONDS_PER_MONTH": "a 30-day month"},
    "productcatalogservice": {"CATALOG": "read once at start-up",
                              "BY_ID": "product id -> product"},
    "recommendationservice": {"MAX_RESPONSES": "products per response"},
    "shippingservice": {"LETTERS": "alphabet of tracking id prefixes"},
}
_FUNCDOCS: dict[str, dict[str, str]] = {
    "adservice": {"random_ads": "A fixed-size random pick of ads, seeded by the caller.",
                  "GetAds": "Ads for the request's context keys, random ones when none match."},
    "cartservice": {"load_cart": "The user's cart, or an empty one when none is stored.",
                    "save_cart": "Store the whole cart under the user's hash.",
                    "AddItem": "Add a quantity of a product to the user's cart.",
                    "GetCart": "The user's cart.",
                    "EmptyCart": "Remove every item from the user's cart."},
    "checkoutservice": {"rpc_text": "The Go status text of an RPC error.",
                        "order_uuid": "A fresh order id.",
                        "call": "Call a dependency at the address its variable names.",
                        "order_total": "The order's total: shipping plus every line.",
                        "PlaceOrder": "Charge the cart, ship it, confirm by mail, empty the cart."},
    "currencyservice": {"rate_of": "The EUR rate of a currency code.",
                        "GetSupportedCurrencies": "The currency codes Convert accepts.",
                        "Convert": "Convert money to another currency through EUR."},
    "emailservice": {"money_text": "Money as the confirmation shows it.",
                     "render": "The confirmation text of an order.",
                     "SendOrderConfirmation": "Render the confirmation and hand it to the mailer."},
    "frontend": {"rpc_text": "The Go status text of an RPC error.",
                 "user_currency": "The session's currency, or the default one.",
                 "cart_size": "How many units the cart holds.",
                 "home": "The home page: products, currencies, cart size.",
                 "view_cart": "The cart page."},
    "paymentservice": {"digits_of": "The digits of a card number, separators removed.",
                       "card_type": "The card's network, from its number.",
                       "Charge": "Check the card and return a transaction id."},
    "productcatalogservice": {"to_message": "A product as the API returns it.",
                              "ListProducts": "Every product of the catalog.",
                              "GetProduct": "One product by id.",
                              "SearchProducts": "Products whose name or description holds the query."},
    "recommendationservice": {"shuffled": "The ids in a seeded random order.",
                              "ListRecommendations": "Products to show beside the ones in view."},
    "shippingservice": {"item_count": "How many units an order's items hold.",
                        "quote_from_count": "The shipping quote for a number of items.",
                        "GetQuote": "A shipping quote for the order's items.",
                        "ShipOrder": "Ship the order and return its tracking id."},
}
_HELPERS: dict[str, tuple[str, ...]] = {
    "adservice": ('def ad_keywords(context_keys):\n    """Context keywords normalised for matching."""\n'
                  '    return sorted({key.strip().lower() for key in context_keys if key.strip()})\n',),
    "cartservice": ('def cart_units(cart):\n    """How many units a cart holds over all its lines."""\n'
                    '    return sum(line["quantity"] for line in cart.get("items", []))\n',),
    "checkoutservice": ('def order_item_count(order_items):\n    """How many units an order holds."""\n'
                        '    return sum(item["item"]["quantity"] for item in order_items)\n',),
    "currencyservice": ('def is_money(value):\n    """Whether a value looks like a Money message."""\n'
                        '    return isinstance(value, dict) and "currency_code" in value\n',),
    "emailservice": ('def recipient_domain(address):\n    """The domain part of an e-mail address."""\n'
                     '    return address.rpartition("@")[2].lower()\n',),
    "frontend": ('def is_asset_path(path):\n    """Whether a path is served from the static assets."""\n'
                 '    return path.startswith("/static/")\n',),
    "paymentservice": ('def masked(number):\n    """A card number with all but the last four digits hidden."""\n'
                       '    digits = "".join(ch for ch in str(number) if ch.isdigit())\n'
                       '    return "*" * max(len(digits) - 4, 0) + digits[-4:]\n',),
    "productcatalogservice": ('def product_ids(products):\n    """The ids of a list of products, in order."""\n'
                              '    return [product["id"] for product in products]\n',),
    "recommendationservice": ('def without(ids, excluded):\n    """The ids not in `excluded`, in order."""\n'
                              '    skip = set(excluded)\n    return [i for i in ids if i not in skip]\n',),
    "shippingservice": ('def is_tracking_id(text):\n    """Whether a string has the shape of a tracking id."""\n'
                        '    return len(text) > 3 and text[:2].isalpha() and "-" in text\n',),
}


def edits_for(service: str) -> list[Edit]:
    """The service's set of harmless commits (empty for a service with no source here)."""
    edits: list[Edit] = []
    for line in _DOCS.get(service, ()):
        edits.append(Edit("docstring", _first_line(line), DOC_SUBJECTS))
    for name, note in sorted(_COMMENTS.get(service, {}).items()):
        edits.append(Edit("comment", _trailing_comment(name, note), COMMENT_SUBJECTS, name))
    for name, doc in sorted(_FUNCDOCS.get(service, {}).items()):
        edits.append(Edit("funcdoc", _function_docstring(name, doc), FUNCDOC_SUBJECTS, name))
    for helper in _HELPERS.get(service, ()):
        ident = helper.split("(", 1)[0].removeprefix("def ")
        edits.append(Edit("helper", _append(helper), HELPER_SUBJECTS, ident))
    edits.append(Edit("literal", _digit_separators, LITERAL_SUBJECTS))
    return edits


def plan(service: str, files: Mapping[str, str], rng: random.Random,
         later_patches: Sequence[str] = ()) -> tuple[str, str] | None:
    """(unified diff, commit subject) of one harmless commit to `service` drawn with `rng`, or
    None when no edit of its set applies to `files` and keeps every patch in `later_patches`
    applicable (those are the code changes the schedule will still deliver to the service)."""
    edits = edits_for(service)
    rng.shuffle(edits)
    for edit in edits:
        changed = edit.apply(dict(files))
        if changed is None or changed == dict(files) or not _compiles(changed):
            continue
        if not all(_applies(changed, patch) for patch in later_patches):
            continue
        subjects = [s for s in edit.subjects if edit.ident or "{name}" not in s]
        subject = rng.choice(subjects).format(name=edit.ident)
        return unified_diff(files, changed), subject
    return None


def unified_diff(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """The `a/`/`b/` unified diff the twin shows between two revisions (engine.source_diff)."""
    chunks: list[str] = []
    for path in sorted(set(old) | set(new)):
        chunks.extend(difflib.unified_diff(
            old.get(path, "").splitlines(keepends=True), new.get(path, "").splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}"))
    return "".join(chunks)


def _compiles(files: Mapping[str, str]) -> bool:
    try:
        for path, text in files.items():
            if path.endswith(".py"):
                ast.parse(text, path)
    except SyntaxError:
        return False
    return True


def _applies(files: dict[str, str], patch: str) -> bool:
    try:
        apply_patch(files, patch)
    except PatchError:
        return False
    return True


def _module_edit(change: Callable[[list[str]], bool]) -> Callable[[dict[str, str]], dict[str, str] | None]:
    """An edit of `service.py`'s lines in place; `change` returns whether it changed anything."""
    def run(files: dict[str, str]) -> dict[str, str] | None:
        text = files.get(MODULE)
        if text is None:
            return None
        lines = text.split("\n")
        if not change(lines):
            return None
        return {**files, MODULE: "\n".join(lines)}
    return run


def _first_line(replacement: str) -> Callable[[dict[str, str]], dict[str, str] | None]:
    def change(lines: list[str]) -> bool:
        if not lines or not lines[0].startswith('"""'):
            return False
        # a one-line docstring is replaced by a one-line one, a first line by a first line
        if lines[0].endswith('"""') and len(lines[0]) > 3 and not replacement.endswith('"""'):
            return False
        if not lines[0].endswith('"""') and replacement.endswith('"""'):
            return False
        lines[0] = replacement
        return True
    return _module_edit(change)


def _trailing_comment(name: str, note: str) -> Callable[[dict[str, str]], dict[str, str] | None]:
    pattern = re.compile(rf"^{re.escape(name)} = [^#]*$")

    def change(lines: list[str]) -> bool:
        for i, line in enumerate(lines):
            # a complete one-line assignment (brackets balanced), without a comment yet
            if pattern.match(line) and _balanced(line):
                lines[i] = f"{line.rstrip()}  # {note}"
                return True
        return False
    return _module_edit(change)


def _function_docstring(name: str, doc: str) -> Callable[[dict[str, str]], dict[str, str] | None]:
    def change(lines: list[str]) -> bool:
        for i, line in enumerate(lines):
            if line.startswith(f"def {name}(") and line.endswith(":") and i + 1 < len(lines):
                if lines[i + 1].lstrip().startswith(('"""', "'''")):
                    return False  # documented already
                lines.insert(i + 1, f'    """{doc}"""')
                return True
        return False
    return _module_edit(change)


def _append(helper: str) -> Callable[[dict[str, str]], dict[str, str] | None]:
    name = helper.split("(", 1)[0].removeprefix("def ")

    def run(files: dict[str, str]) -> dict[str, str] | None:
        text = files.get(MODULE)
        if text is None or re.search(rf"\b{re.escape(name)}\b", text):
            return None
        return {**files, MODULE: text.rstrip("\n") + "\n\n\n" + helper}
    return run


def _digit_separators(files: dict[str, str]) -> dict[str, str] | None:
    """`1000000000` -> `1_000_000_000` in top-level constants (the same int to Python)."""
    def change(lines: list[str]) -> bool:
        for i, line in enumerate(lines):
            if re.match(r"^[A-Z_][A-Z0-9_]* = ", line):
                new = re.sub(r"(?<![\w.])(\d{5,})(?![\w.])", lambda m: f"{int(m.group(1)):_}", line)
                if new != line:
                    lines[i] = new
                    return True
        return False
    return _module_edit(change)(files)


def _balanced(line: str) -> bool:
    code = line.split("#", 1)[0]
    return all(code.count(a) == code.count(b) for a, b in ("()", "[]", "{}"))
