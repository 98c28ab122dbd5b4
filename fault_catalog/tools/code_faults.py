"""Author the Online Boutique code faults: each is an edit of a twin service's source that reads
like a feature or refactor carrying one wrong assumption (about data, callers or dependencies).

Run from the repository root: `python fault_catalog/tools/code_faults.py`. For every fault it
applies the edit to the service's current source, writes the unified diff to `patches/`, checks
that the change builds the way the release pipeline builds it (lint and the service's own unit
tests, which the change keeps or updates as its author would), and writes the entry. A fault
whose edit no longer matches the source or that fails the build is reported and not written.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

import yaml
from generate_boutique import RPC_PROBE, direct_call, entry_text

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "pytest_marathon" / "twin" / "apps" / "boutique" / "services"
OUT = ROOT / "fault_catalog" / "boutique"

# The user-facing request through which each service's defect shows (frontend routes).
PROBE = {
    "frontend": {"kind": "request", "route": "view_cart"},
    "cartservice": {"kind": "request", "route": "add_to_cart"},
    "checkoutservice": {"kind": "request", "route": "checkout"},
    "currencyservice": {"kind": "request", "route": "home", "currency": "EUR"},
    "paymentservice": {"kind": "request", "route": "checkout"},
    "productcatalogservice": {"kind": "request", "route": "checkout"},
    "shippingservice": {"kind": "request", "route": "checkout"},
    # recommendation failures are warnings on the pages (handlers.go), so ask the service itself
    "recommendationservice": {
        "kind": "rpc",
        "service": "recommendationservice",
        "method": "ListRecommendations",
        "request": {"user_id": "probe", "product_ids": []},
    },
    # the order confirmation the templated entries send too
    "emailservice": direct_call("emailservice", *RPC_PROBE["emailservice"]),
    "adservice": {
        "kind": "rpc",
        "service": "adservice",
        "method": "GetAds",
        "request": {"context_keys": ["clothing", "tops"]},
    },
}

FAULTS: list[dict[str, Any]] = [
    # ---------------------------------------------------------------- cartservice (C#)
    {
        "id": "code-cart-merge-lookup",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """        existing = linq.single_or_default(cart["items"], product_id)
""",
                """        existing = linq.first(cart["items"], product_id)
""",
            )
        ],
        "change_cause": "cartservice: look cart lines up with First() instead of SingleOrDefault()",
        "update": "Stop scanning the whole cart for each addition: take the first matching line.",
        "defect": "First() throws when no line matches: adding a product that is not yet in the "
        "cart fails inside the store and surfaces as a storage failure.",
        "exposed_by": ["addToCart", "checkout"],
        "log": ("cartservice", "Sequence contains no matching element"),
        # a checkout empties the probe's cart, so its next addition looks the line up
        "probe": {"kind": "request", "route": "checkout"},
    },
    {
        "id": "code-cart-unit-cap",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """CART_FIELD = "data"
""",
                """CART_FIELD = "data"
MAX_CART_UNITS = 10
""",
            ),
            (
                "service.py",
                """        existing["quantity"] = existing["quantity"] + quantity
    save_cart(ctx, store, user_id, cart)
""",
                """        existing["quantity"] = existing["quantity"] + quantity
    units = sum(line["quantity"] for line in cart["items"])
    if units > MAX_CART_UNITS:
        ctx.fail("FAILED_PRECONDITION", f"cart would hold {units} units (limit {MAX_CART_UNITS})")
    save_cart(ctx, store, user_id, cart)
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ("5000", "5"),
        "change_cause": "cartservice: enforce the per-cart limit from the storefront quantity picker",
        "update": "Limit a cart to the 10 units the quantity picker offers.",
        "defect": "The picker limits one addition, not the cart: repeated additions of 1-10 "
        "units pass the limit and AddItem fails.",
        "exposed_by": ["addToCart", "checkout"],
        "log": ("frontend", "failed to add to cart"),
    },
    {
        "id": "code-cart-stale-expiry",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """CART_FIELD = "data"
""",
                """CART_FIELD = "data"
CART_TTL_SECONDS = 24 * 3600
""",
            ),
            (
                "service.py",
                """    return None if raw is None else json.loads(raw)
""",
                """    if raw is None:
        return None
    cart = json.loads(raw)
    # cart.UpdatedAt is a Timestamp message: abandoned carts start afresh
    if ctx.now - cart.get("updated_at")["seconds"] > CART_TTL_SECONDS:
        return None
    return cart
""",
            ),
            (
                "service.py",
                """def save_cart(ctx, store, user_id, cart):
    try:
""",
                """def save_cart(ctx, store, user_id, cart):
    cart["updated_at"] = {"seconds": ctx.now}
    try:
""",
            ),
        ],
        "change_cause": "cartservice: drop carts abandoned for more than a day",
        "update": "Stamp carts with an UpdatedAt timestamp on save; treat day-old carts as empty.",
        "defect": "Carts saved before the release have no UpdatedAt, and an unset message field "
        "is null in C#: reading any of them throws a NullReferenceException until the cart is "
        "rewritten, which itself needs a read.",
        "exposed_by": ["index", "browseProduct", "addToCart", "viewCart", "checkout"],
        "log": ("cartservice", "Exception"),
        # the probe's own cart was last saved (emptied by its checkout) before the release
        "probe": {"kind": "request", "route": "checkout"},
    },
    # ---------------------------------------------------------------- checkoutservice (Go)
    {
        "id": "code-checkout-total-once",
        "service": "checkoutservice",
        "edits": [
            (
                "service.py",
                """        cost = convert(ctx, product["price_usd"], currency,
                       f"failed to prepare order: failed to convert price of \\"{product_id}\\" "
                       f"to {currency}", with_cause=False)
        order_items.append({"item": dict(item), "cost": cost})
""",
                """        # prices stay in USD here; the total is converted once at the end
        order_items.append({"item": dict(item), "cost": product["price_usd"]})
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"GetProduct", "Convert", "GetQuote", "Convert",', '"GetProduct", "GetQuote", "Convert",'),
        "change_cause": "checkoutservice: convert the order total once instead of per line",
        "update": "Save one currency conversion per line by keeping line costs in USD.",
        "defect": "The shipping cost is still converted to the user's currency, so adding it to "
        "USD lines fails with mismatching currency codes for every non-USD order.",
        "exposed_by": ["checkout"],
        "log": ("checkoutservice", "mismatching currency codes"),
        "probe": {"kind": "request", "route": "checkout", "currency": "EUR"},
    },
    {
        "id": "code-checkout-shipping-usd",
        "service": "checkoutservice",
        "edits": [
            (
                "service.py",
                """    shipping = convert(ctx, quote["cost_usd"], currency,
                       "failed to convert shipping cost to currency: failed to convert currency")
    return cart_items, order_items, shipping
""",
                """    # shipping is quoted in USD by the carrier; no need for another Convert round trip
    shipping = quote["cost_usd"]
    return cart_items, order_items, shipping
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"GetQuote", "Convert",\n', '"GetQuote",\n'),
        "change_cause": "checkoutservice: skip the currency round trip for the shipping quote",
        "update": "Use the carrier's USD quote as the shipping cost directly.",
        "defect": "The order total starts in the shopper's currency: adding the USD quote to it "
        "fails for every order not paid in USD.",
        "exposed_by": ["checkout"],
        "log": ("checkoutservice", "mismatching currency codes"),
        "probe": {"kind": "request", "route": "checkout", "currency": "GBP"},
    },
    {
        "id": "code-checkout-masked-card",
        "service": "checkoutservice",
        "edits": [
            (
                "service.py",
                """        payment = call(ctx, "PAYMENT_SERVICE_ADDR", "Charge",
                       {"amount": total, "credit_card": request.get("credit_card", {})},
""",
                """        card = dict(request.get("credit_card", {}))
        number = card.get("credit_card_number", "")
        # never let the full card number reach a log line or a trace attribute
        card["credit_card_number"] = "*" * (len(number) - 4) + number[-4:]
        payment = call(ctx, "PAYMENT_SERVICE_ADDR", "Charge",
                       {"amount": total, "credit_card": card},
""",
            )
        ],
        "change_cause": "checkoutservice: mask card numbers before the charge call",
        "update": "Mask all but the last four card digits so they cannot leak into traces.",
        "defect": "The masked copy is what gets sent to paymentservice: every charge carries an "
        "unreadable number and is refused.",
        "exposed_by": ["checkout"],
        "log": ("frontend", "Credit card info is invalid"),
    },
    # ---------------------------------------------------------------- currencyservice (Node.js)
    {
        "id": "code-currency-result-cache",
        "service": "currencyservice",
        "edits": [
            (
                "service.py",
                """def GetSupportedCurrencies(ctx, request):""",
                """CONVERTED = {}  # repeated catalog prices: remember results per amount


def GetSupportedCurrencies(ctx, request):""",
            ),
            (
                "service.py",
                """    source = request.get("from", {})
    to_code = request.get("to_code", "")
""",
                """    source = request.get("from", {})
    to_code = request.get("to_code", "")
    key = (source.get("currency_code", ""), source.get("units", 0), source.get("nanos", 0))
    if key in CONVERTED:
        return dict(CONVERTED[key])
""",
            ),
            (
                "service.py",
                """    ctx.log("info", "conversion request successful")
    return {"currency_code": to_code, "units": wire_int(units), "nanos": wire_int(nanos)}
""",
                """    ctx.log("info", "conversion request successful")
    result = {"currency_code": to_code, "units": wire_int(units), "nanos": wire_int(nanos)}
    CONVERTED[key] = result
    return dict(result)
""",
            ),
        ],
        "change_cause": "currencyservice: memoise conversions of repeated catalog prices",
        "update": "Cache Convert results since the same catalog prices are converted all day.",
        "defect": "The cache key leaves out the target currency: a price converted for one "
        "shopper's currency is served to shoppers of another.",
        "exposed_by": ["index", "browseProduct", "viewCart", "checkout"],
        "log": ("frontend", "mismatching currency codes"),
        "probe": {"kind": "request", "route": "view_cart", "currency": "JPY"},
    },
    {
        "id": "code-payment-review-threshold",
        "service": "paymentservice",
        "edits": [
            (
                "service.py",
                """SECONDS_PER_MONTH = 30 * 24 * 3600
""",
                """SECONDS_PER_MONTH = 30 * 24 * 3600
REVIEW_ABOVE_UNITS = 500  # larger charges go to manual review
""",
            ),
            (
                "service.py",
                """    year, month = current_year_month(ctx.now)
""",
                """    if amount.get("units", 0) > REVIEW_ABOVE_UNITS:
        ctx.fail("FAILED_PRECONDITION", "charge held for manual review")
    year, month = current_year_month(ctx.now)
""",
            ),
        ],
        "change_cause": "paymentservice: hold large charges for manual review",
        "update": "Hold charges above 500 for review.",
        "defect": "Amounts arrive in the shopper's currency, not USD: yen orders and large "
        "baskets are all held.",
        "exposed_by": ["checkout"],
        "log": ("paymentservice", "charge held for manual review"),
        "probe": {"kind": "request", "route": "checkout", "currency": "JPY"},
    },
    {
        "id": "code-payment-settlement-currency",
        "service": "paymentservice",
        "edits": [
            (
                "service.py",
                """    kind = card_type(number)
""",
                """    if amount.get("currency_code", "USD") not in ("USD", "EUR", "GBP", "CAD"):
        raise CreditCardError("UnsupportedCurrency",
                              f"currency {amount.get('currency_code')} is not supported by the processor")
    kind = card_type(number)
""",
            )
        ],
        "change_cause": "paymentservice: refuse currencies the card processor does not settle",
        "update": "Refuse charges in currencies the processor cannot settle.",
        "defect": "The storefront offers JPY and TRY; those orders can no longer be paid.",
        "exposed_by": ["checkout"],
        "log": ("paymentservice", "is not supported by the processor"),
        "probe": {"kind": "request", "route": "checkout", "currency": "TRY"},
    },
    {
        "id": "code-payment-luhn-loop",
        "service": "paymentservice",
        "edits": [
            (
                "service.py",
                """    total = 0
    for position, ch in enumerate(reversed(number)):
        digit = int(ch)
""",
                """    total = 0
    for index in range(len(number) - 1, 0, -1):  # walk the digits from the check digit
        position = len(number) - 1 - index
        digit = int(number[index])
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ("4432-8015-6152-0454", "4432-8015-6152-0452"),
        "test_rename2": ("visa ending 0454", "visa ending 0452"),
        "test_rename3": ("378282246310005", "378282246310008"),
        "change_cause": "paymentservice: check card numbers with our own Luhn loop",
        "update": "Replace the card-validator dependency's Luhn check with an in-house loop.",
        "defect": "The loop stops before index 0, so the leading digit never counts: real card "
        "numbers fail the checksum and every charge is refused.",
        "exposed_by": ["checkout"],
        "log": ("paymentservice", "Credit card info is invalid"),
    },
    {
        "id": "code-payment-limit-compare",
        "service": "paymentservice",
        "edits": [
            (
                "service.py",
                """    year, month = current_year_month(ctx.now)
""",
                """    # proto-loader hands int64 fields over as strings (longs: String), env values are strings
    if str(amount.get("units", 0)) > ctx.env("MAX_CHARGE_UNITS", "2000"):
        raise CreditCardError("ChargeLimitExceeded", "Charge exceeds the per-order limit")
    year, month = current_year_month(ctx.now)
""",
            )
        ],
        "change_cause": "paymentservice: cap a single charge with MAX_CHARGE_UNITS",
        "update": "Refuse single charges above a configurable limit (2000 by default).",
        "defect": "Both sides of the comparison are strings, so it is lexicographic: 27 is "
        "\"greater\" than 2000, and most ordinary orders are refused.",
        "exposed_by": ["checkout"],
        "log": ("paymentservice", "Charge exceeds the per-order limit"),
    },
    # ---------------------------------------------------------------- productcatalogservice (Go)
    {
        "id": "code-catalog-related-items",
        "service": "productcatalogservice",
        "edits": [
            (
                "service.py",
                """BY_ID = {product["id"]: product for product in CATALOG}
""",
                """BY_ID = {product["id"]: product for product in CATALOG}
# merchandising: products shown together ("also bought")
RELATED = {
    "OLJCESPC7Z": ["1YMWWN1N4O"],
    "1YMWWN1N4O": ["OLJCESPC7Z", "HQTGWGPNH4"],
    "9SIQT8TOJO": ["6E92ZMYYFZ", "LS4PSXUNUM"],
    "6E92ZMYYFZ": ["9SIQT8TOJO", "HQTGWGPNH4"],
    "LS4PSXUNUM": ["9SIQT8TOJO"],
}
""",
            ),
            (
                "service.py",
                """        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    return to_message(product)
""",
                """        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    message = to_message(product)
    message["related"] = [find_product(ctx, other)["name"] for other in RELATED.get(product_id, [])]
    return message
""",
            ),
            (
                "service.py",
                """def ListProducts(ctx, request):""",
                """def find_product(ctx, product_id):
    \"\"\"The catalog entry of `product_id`, or GetProduct's NotFound.\"\"\"
    product = BY_ID.get(product_id)
    if product is None:
        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    return product


def ListProducts(ctx, request):""",
            ),
        ],
        "change_cause": "productcatalogservice: return related product names from GetProduct",
        "update": "Add merchandising's related products to the Product message.",
        "defect": "The related table still lists HQTGWGPNH4, a product retired from the catalog: "
        "its lookup answers NotFound, and the handler returns that error for the watch and the "
        "mug themselves.",
        "exposed_by": ["browseProduct", "addToCart", "viewCart", "checkout"],
        "log": ("frontend", "no product with ID HQTGWGPNH4"),
        "probe": {"kind": "rpc", "service": "productcatalogservice", "method": "GetProduct",
                  "request": {"id": "6E92ZMYYFZ"}},
    },
    {
        "id": "code-catalog-retired-list",
        "service": "productcatalogservice",
        "edits": [
            (
                "service.py",
                """BY_ID = {product["id"]: product for product in CATALOG}
""",
                """BY_ID = {product["id"]: product for product in CATALOG}
# discontinued by merchandising (list exported from the staging catalog)
RETIRED = ("HQTGWGPNH4", "1YMWWN1N4O")
""",
            ),
            (
                "service.py",
                """    product = BY_ID.get(product_id)
    if product is None:
""",
                """    product = BY_ID.get(product_id)
    if product is None or product_id in RETIRED:
""",
            ),
        ],
        "change_cause": "productcatalogservice: stop serving discontinued products",
        "update": "Answer NotFound for products merchandising has discontinued.",
        "defect": "The list came from the staging catalog and names the watch, which is still "
        "listed and sold: its page, carts holding it and their checkouts fail.",
        "exposed_by": ["browseProduct", "addToCart", "viewCart", "checkout"],
        "log": ("frontend", "no product with ID 1YMWWN1N4O"),
        "probe": {"kind": "request", "route": "product", "product_id": "1YMWWN1N4O"},
    },
    {
        "id": "code-catalog-sale-lookup",
        "service": "productcatalogservice",
        "edits": [
            (
                "service.py",
                """BY_ID = {product["id"]: product for product in CATALOG}
""",
                """BY_ID = {product["id"]: product for product in CATALOG}
# promotions feed: product id -> sale; promotions.Get answers ErrNoSale for the others
SALES = {"66VCHSJNUP": {"active": True, "label": "20% off"}}
""",
            ),
            (
                "service.py",
                """        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    return to_message(product)
""",
                """        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    message = to_message(product)
    sale = SALES.get(product_id)
    if sale is None:
        ctx.fail("INTERNAL", f"failed to get sale: promotions: no sale for product {product_id}")
    if sale["active"]:
        message["sale_label"] = sale["label"]
    return message
""",
            ),
        ],
        "change_cause": "productcatalogservice: label products on sale in GetProduct",
        "update": "Attach the promotions feed's sale label to products on sale.",
        "defect": "promotions.Get reports a product without a sale as an error (ErrNoSale), and "
        "the handler returns every error: GetProduct fails for every product but the tank top.",
        "exposed_by": ["browseProduct", "addToCart", "viewCart", "checkout"],
        "log": ("frontend", "no sale for product"),
        "probe": {"kind": "request", "route": "product", "product_id": "OLJCESPC7Z"},
    },
    # ---------------------------------------------------------------- shippingservice (Go)
    {
        "id": "code-shipping-quote-address",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """    ctx.log("info", "[GetQuote] received request")
    units, nanos = quote_from_count(item_count(request.get("items", [])))
""",
                """    ctx.log("info", "[GetQuote] received request")
    address = request.get("address", {})
    if not address.get("country"):
        ctx.fail("INVALID_ARGUMENT", "destination country required for a quote")
    units, nanos = quote_from_count(item_count(request.get("items", [])))
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('service.GetQuote(TestContext(), {"items": []})',
                        'service.GetQuote(TestContext(), {"address": ADDRESS, "items": []})'),
        "change_cause": "shippingservice: validate the destination before quoting",
        "update": "Refuse quotes without a destination country.",
        "defect": "The cart page asks for a quote before any address is known, so every cart "
        "view fails.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "destination country required"),
        "probe": {"kind": "request", "route": "view_cart"},
    },
    {
        "id": "code-shipping-zone-surcharge",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXY"  # 65 + rand.Intn(25): never Z
""",
                """LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXY"  # 65 + rand.Intn(25): never Z
FAR_ZONES = (0, 1, 2)  # first zip digit: the east coast, farthest from the warehouse
""",
            ),
            (
                "service.py",
                """    units, nanos = quote_from_count(item_count(request.get("items", [])))
    ctx.log("info", "[GetQuote] completed request")
""",
                """    units, nanos = quote_from_count(item_count(request.get("items", [])))
    zip_code = (request.get("address") or {}).get("zip_code", 0)  # GetAddress().GetZipCode()
    if not 0 < zip_code <= 99999:
        ctx.fail("INVALID_ARGUMENT", f"no shipping zone for zip code {zip_code}")
    if units and zip_code // 10000 in FAR_ZONES:
        units = units + 2
    ctx.log("info", "[GetQuote] completed request")
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('service.GetQuote(TestContext(), {"items": []})',
                        'service.GetQuote(TestContext(), {"address": ADDRESS, "items": []})'),
        "change_cause": "shippingservice: add a surcharge for far shipping zones",
        "update": "Charge two dollars more for destinations in the far zip zones.",
        "defect": "The cart page asks for a quote before any address is known; the proto getter "
        "reads the nil address's zip code as 0, which is in no zone, so every cart view fails "
        "with InvalidArgument.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "no shipping zone for zip code 0"),
        "probe": {"kind": "request", "route": "view_cart"},
    },
    {
        "id": "code-shipping-country-code",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """    tracking = tracking_id(ctx, request.get("address", {}))
""",
                """    address = request.get("address", {})
    country = address.get("country", "")
    if len(country) != 2:  # carriers route on ISO 3166 alpha-2 codes
        ctx.fail("INVALID_ARGUMENT", f"invalid destination country code \\"{country}\\"")
    tracking = tracking_id(ctx, address)
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"country": "United States"', '"country": "US"'),
        "change_cause": "shippingservice: check destination country codes before shipping",
        "update": "Refuse shipments whose destination is not an ISO country code.",
        "defect": "The checkout form sends country names, not codes: every order is charged and "
        "then fails to ship.",
        "exposed_by": ["checkout"],
        "log": ("frontend", "invalid destination country code"),
    },
    # ---------------------------------------------------------------- recommendationservice (Python)
    {
        "id": "code-rec-price-affinity",
        "service": "recommendationservice",
        "edits": [
            (
                "service.py",
                """    product_ids = [product["id"] for product in catalog.get("products", [])]
""",
                """    products = catalog.get("products", [])
    product_ids = [product["id"] for product in products]
    # rank by closeness to the average price of what the shopper is looking at
    seen = [p["price_usd"]["units"] for p in products if p["id"] in requested]
    anchor = sum(seen) / len(seen)
    product_ids.sort(key=lambda pid: abs(anchor - [p["price_usd"]["units"] for p in products
                                                   if p["id"] == pid][0]))
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('{"id": f"P{n}"}', '{"id": f"P{n}", "price_usd": {"units": n}}'),
        "test_rename2": (
            '[{"id": "P1"}, {"id": "P2"}]',
            '[{"id": "P1", "price_usd": {"units": 1}}, {"id": "P2", "price_usd": {"units": 2}}]',
        ),
        "change_cause": "recommendationservice: prefer products priced like the ones viewed",
        "update": "Rank recommendations by price affinity with the viewed products.",
        "defect": "Assumes the request always names viewed products; the cart page of an empty "
        "cart and the order page send none and divide by zero.",
        "exposed_by": ["viewCart", "checkout"],
        "log": ("recommendationservice", "ZeroDivisionError"),
        "probe": {"kind": "no_error_logs", "service": "recommendationservice",
                  "contains": "ZeroDivisionError"},
    },
    {
        "id": "code-rec-exclude-cart",
        "service": "recommendationservice",
        "edits": [
            (
                "service.py",
                """    filtered = [product_id for product_id in product_ids if product_id not in requested]
""",
                """    cart = ctx.call(ctx.env("CART_SERVICE_ADDR"), "GetCart",
                    {"user_id": request.get("user_id", "")})
    in_cart = [item["product_id"] for item in cart.get("items", [])]
    filtered = [product_id for product_id in product_ids
                if product_id not in requested and product_id not in in_cart]
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            'ENV = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550"}',
            'ENV = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550",\n'
            '       "CART_SERVICE_ADDR": "cartservice:7070"}',
        ),
        "test_rename2": (
            'responses={"ListProducts": CATALOG}',
            'responses={"ListProducts": CATALOG, "GetCart": {"items": []}}',
        ),
        "test_rename3": (
            'responses={"ListProducts": {"products": [{"id": "P1"}, {"id": "P2"}]}}',
            'responses={"ListProducts": {"products": [{"id": "P1"}, {"id": "P2"}]},\n'
            '                                              "GetCart": {"items": []}}',
        ),
        "change_cause": "recommendationservice: do not recommend what is already in the cart",
        "update": "Exclude products already in the shopper's cart from recommendations.",
        "defect": "The deployment has no CART_SERVICE_ADDR: the new call has no address and "
        "every recommendation fails.",
        "exposed_by": ["viewCart", "browseProduct"],
        "log": ("frontend", "failed to get product recommendations"),
        "signature": "recommendationservice -> None",
    },
    {
        "id": "code-rec-cart-item-field",
        "service": "recommendationservice",
        "edits": [
            (
                "service.py",
                """    product_ids = [product["id"] for product in catalog.get("products", [])]
""",
                """    product_ids = [product["product_id"] for product in catalog.get("products", [])]
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('{"id": f"P{n}"}', '{"product_id": f"P{n}"}'),
        "test_rename2": ('[{"id": "P1"}, {"id": "P2"}]', '[{"product_id": "P1"}, {"product_id": "P2"}]'),
        "change_cause": "recommendationservice: tidy the product id extraction",
        "update": "Read the ids of the catalog's products through one comprehension.",
        "defect": "Product messages carry `id`; `product_id` is the CartItem field. Reading it "
        "from a Product raises for every request.",
        "exposed_by": ["viewCart", "browseProduct"],
        "log": ("recommendationservice", "Exception"),
    },
    {
        "id": "code-rec-max-env",
        "service": "recommendationservice",
        "edits": [
            (
                "service.py",
                """    count = min(MAX_RESPONSES, len(filtered))
""",
                """    count = min(int(ctx.env("MAX_RECOMMENDATIONS")), len(filtered))  # tunable per shop
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            'ENV = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550"}',
            'ENV = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550",\n'
            '       "MAX_RECOMMENDATIONS": "5"}',
        ),
        "change_cause": "recommendationservice: read the recommendation count from the environment",
        "update": "Make the number of recommendations configurable with MAX_RECOMMENDATIONS.",
        "defect": "No deployment sets MAX_RECOMMENDATIONS and there is no default: int(None) "
        "fails every request.",
        "exposed_by": ["viewCart", "browseProduct"],
        "log": ("recommendationservice", "TypeError"),
    },
    {
        "id": "code-rec-same-category",
        "service": "recommendationservice",
        "edits": [
            (
                "service.py",
                """    product_ids = [product["id"] for product in catalog.get("products", [])]
""",
                """    products = catalog.get("products", [])
    # recommend within the category of the product being looked at
    anchor = requested[0]
    category = [p.get("categories", []) for p in products if p["id"] == anchor][:1]
    product_ids = [product["id"] for product in products
                   if not category or not category[0]
                   or set(product.get("categories", [])) & set(category[0])]
""",
            ),
        ],
        "change_cause": "recommendationservice: recommend from the viewed product's category",
        "update": "Recommend products sharing a category with the one being viewed.",
        "defect": "Assumes every request names a viewed product; the order page and an empty "
        "cart send none, and indexing the empty list raises.",
        "exposed_by": ["viewCart", "checkout"],
        "log": ("recommendationservice", "IndexError"),
        "probe": {"kind": "rpc", "service": "recommendationservice", "method": "ListRecommendations",
                  "request": {"user_id": "probe", "product_ids": []}},
    },
    # ---------------------------------------------------------------- adservice (Java)
    {
        "id": "code-ad-direct-lookup",
        "service": "adservice",
        "edits": [
            (
                "service.py",
                """        ads.extend(ADS_BY_CATEGORY.get(key, []))
""",
                """        ads.extend(ADS_BY_CATEGORY[key])
""",
            )
        ],
        "change_cause": "adservice: look categories up directly now that every category has ads",
        "update": "Drop the silent fallback for categories without ads.",
        "defect": "Products carry categories with no ads (tops, beauty, home): the lookup gives "
        "null and adding it to the result throws, so those product pages get no ads.",
        "exposed_by": ["browseProduct", "addToCart"],
        "log": ("adservice", "Exception"),
    },
    # ---------------------------------------------------------------- frontend (Go)
    # net/http recovers a handler's panic per request and otelhttp records nothing for it, so a
    # frontend defect that shows on a real cluster is one whose error reaches renderHTTPError (500).
    {
        "id": "code-frontend-usd-total",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """        total = money.add(money.zero(currency), shipping)
""",
                """        total = money_sum(money.zero(DEFAULT_CURRENCY), shipping, "could not total the cart")
""",
            ),
            (
                "service.py",
                """            total = money.add(total, line_total)
""",
                """            total = money_sum(total, line_total, "could not total the cart")
""",
            ),
            (
                "service.py",
                """def shipping_quote(ctx, items, currency):""",
                """def money_sum(left, right, describe):
    \"\"\"money.Sum with its error returned and rendered, instead of money.Must's panic.\"\"\"
    try:
        return money.add(left, right)
    except money.MoneyError as exc:
        raise BackendError(joined(describe, str(exc)))


def shipping_quote(ctx, items, currency):""",
            ),
        ],
        "change_cause": "frontend: start cart totals from the default currency, and render "
        "money.Sum errors instead of panicking",
        "update": "Initialise the cart total in the default currency; replace money.Must with "
        "an error check.",
        "defect": "Shipping and prices are converted to the shopper's currency: any non-USD "
        "cart fails to add up and the cart page answers 500.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "could not total the cart: mismatching currency codes"),
        "probe": {"kind": "request", "route": "view_cart", "currency": "EUR"},
    },
    {
        "id": "code-frontend-quote-address",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """        shipping = shipping_quote(ctx, items, currency)
""",
                """        shipping = shipping_quote(ctx, items, currency, saved_address(request))
""",
            ),
            (
                "service.py",
                """def shipping_quote(ctx, items, currency):
    \"\"\"rpc.go getShippingQuote: the cart page has no address yet (`Address: nil`).\"\"\"
    quote = backend(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote", {"items": items},
""",
                """def saved_address(request):
    \"\"\"r.Cookie("shop_address"): the address the checkout form saves (decoded).\"\"\"
    address = request.get("shop_address")
    if address is None:
        raise BackendError("could not read the saved address: http: named cookie not present")
    return address


def shipping_quote(ctx, items, currency, address):
    \"\"\"rpc.go getShippingQuote, quoting to the shopper's saved address.\"\"\"
    quote = backend(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote",
                    {"address": address, "items": items},
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            'page = service.view_cart(ctx, {"session_id": "s1", "currency": "USD"})',
            'page = service.view_cart(ctx, {"session_id": "s1", "currency": "USD",\n'
            '                                   "shop_address": {"country": "US"}})',
        ),
        "change_cause": "frontend: quote shipping to the shopper's saved address",
        "update": "Pass the address saved in the shop_address cookie to the shipping quote on "
        "the cart page.",
        "defect": "Nothing sets the shop_address cookie yet (the checkout change that saves it "
        "has not shipped): r.Cookie returns http.ErrNoCookie and every cart view answers 500.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "http: named cookie not present"),
        "probe": {"kind": "request", "route": "view_cart"},
    },
    {
        "id": "code-frontend-card-expiry",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """            "credit_card_expiration_year": form["credit_card_expiration_year"],
""",
                """            "credit_card_expiration_year": form["credit_card_expiration_month"],
""",
            )
        ],
        "change_cause": "frontend: build the card message from the validated form",
        "update": "Fill the CreditCardInfo message from the validated payload fields.",
        "defect": "The expiration year is filled from the month field: every card looks expired "
        "in year 1-12 and every charge is refused.",
        "exposed_by": ["checkout"],
        "log": ("frontend", "expired on"),
        "probe": {"kind": "request", "route": "checkout"},
    },
    {
        "id": "code-frontend-batch-products",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """        lines = []
        for item in items:
            product_id = item["product_id"]
            found = get_product(ctx, product_id, f"could not retrieve product #{product_id}")
""",
                """        lines = []
        found_by_id = products_by_id(ctx, [item["product_id"] for item in items])
        for item in items:
            product_id = item["product_id"]
            found = found_by_id[product_id]
""",
            ),
            (
                "service.py",
                """def shipping_quote(ctx, items, currency):""",
                """def products_by_id(ctx, product_ids):
    \"\"\"One GetProducts call for all the cart's products instead of one GetProduct each.\"\"\"
    response = backend(ctx, "PRODUCT_CATALOG_SERVICE_ADDR", "GetProducts", {"ids": product_ids},
                       "could not retrieve cart products")
    return {found["id"]: found for found in response.get("products", [])}


def shipping_quote(ctx, items, currency):""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"AddItem": {},\n', '"AddItem": {}, "GetProducts": {"products": [MUG]},\n'),
        "change_cause": "frontend: fetch the cart's products in one batch call",
        "update": "Replace the per-line GetProduct calls of the cart page with one GetProducts "
        "call (demo.proto revision adding the batch method).",
        "defect": "The frontend was built against the proto revision that adds GetProducts, but "
        "the running productcatalogservice does not serve it yet: every cart view answers 500 "
        "with Unimplemented.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "unknown method GetProducts"),
        "probe": {"kind": "request", "route": "view_cart"},
    },
    {
        "id": "code-frontend-shipping-estimate",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """    recommended = optional_recommendations(ctx, session_id, [product_id])
    return {"status": 200, "product": {"id": item["id"], "name": item["name"], "price": price},
""",
                """    recommended = optional_recommendations(ctx, session_id, [product_id])
    # "delivered for" line under the price: the carrier's flat rate
    try:
        delivered = money.add(price, {"currency_code": DEFAULT_CURRENCY, "units": 8,
                                      "nanos": 990000000})
    except money.MoneyError as exc:
        http_error(ctx, BackendError(joined("could not compute the delivered price", str(exc))))
    return {"status": 200, "product": {"id": item["id"], "name": item["name"], "price": price,
                                       "delivered": delivered},
""",
            )
        ],
        "change_cause": "frontend: show the delivered price on product pages",
        "update": "Show the price including the flat shipping rate under each product's price.",
        "defect": "The flat rate is in USD while the price is in the shopper's currency: every "
        "product page of a non-USD shopper fails to add them up and answers 500.",
        "exposed_by": ["browseProduct"],
        "log": ("frontend", "could not compute the delivered price: mismatching currency codes"),
        "probe": {"kind": "request", "route": "product", "currency": "EUR"},
    },
    {
        "id": "code-frontend-packaging-weight",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """        price = convert(ctx, item["price_usd"], currency, "failed to convert currency")
    except BackendError as exc:
        http_error(ctx, exc)
    recommended = optional_recommendations(ctx, session_id, [product_id])
    return {"status": 200, "product": {"id": item["id"], "name": item["name"], "price": price},
""",
                """        price = convert(ctx, item["price_usd"], currency, "failed to convert currency")
        packaging = packaging_info(ctx, product_id)
    except BackendError as exc:
        http_error(ctx, exc)
    recommended = optional_recommendations(ctx, session_id, [product_id])
    return {"status": 200, "product": {"id": item["id"], "name": item["name"], "price": price,
                                       "weight": packaging["weight"]},
""",
            ),
            (
                "service.py",
                """def view_cart(ctx, request):""",
                """def packaging_info(ctx, product_id):
    \"\"\"httpGetPackagingInfo: GET <PACKAGING_SERVICE_URL>/<product id> from the packaging
    service.\"\"\"
    url = ctx.env("PACKAGING_SERVICE_URL", "") + "/" + product_id
    if "://" not in url:
        raise BackendError(joined("could not retrieve packaging info",
                                  f"Get \\"{url}\\": unsupported protocol scheme \\"\\""))
    return {"product_id": product_id, "weight": 0.5}


def view_cart(ctx, request):""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"AD_SERVICE_ADDR": "adservice:9555"}',
                        '"AD_SERVICE_ADDR": "adservice:9555",\n'
                        '       "PACKAGING_SERVICE_URL": "http://packaging.example"}'),
        "change_cause": "frontend: show package weights on product pages",
        "update": "Show the packaging service's weight for each product.",
        "defect": "The page fetches packaging info without checking isPackagingServiceConfigured; "
        "no deployment sets PACKAGING_SERVICE_URL, so the GET has no scheme and every product "
        "page answers 500.",
        "exposed_by": ["browseProduct"],
        "log": ("frontend", "unsupported protocol scheme"),
        "probe": {"kind": "request", "route": "product"},
    },
    # ---------------------------------------------------------------- emailservice (Python)
    {
        "id": "code-email-order-total",
        "service": "emailservice",
        "edits": [
            (
                "service.py",
                """    ctx.log("info", f"A request to send order confirmation email to {email} has been received.")
""",
                """    order = request.get("order", {})
    ctx.log("info", f"A request to send order confirmation email to {email} has been received.")
    ctx.log("info", f"order {order['order_id']} total {order['total']['units']}")
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"order_id": "a1b2", ', '"order_id": "a1b2", "total": {"units": 26},\n    '),
        "test_rename2": ('assert ctx.logged("info") == [', 'assert ctx.logged("info")[:1] == ['),
        "change_cause": "emailservice: log order totals with each confirmation",
        "update": "Log the order id and total alongside each confirmation request.",
        "defect": "OrderResult has no total field; reading it raises for every confirmation.",
        "exposed_by": ["checkout"],
        "log": ("emailservice", "Exception"),
    },
]


def unified_diff(service: str, path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=3,
    )
    return "".join(lines)


def edited_files(fault: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """path -> (before, after) for each file the fault touches."""
    folder = SERVICES / fault["service"]
    files: dict[str, tuple[str, str]] = {}
    for path, old, new in fault["edits"]:
        before = files[path][1] if path in files else (folder / path).read_text()
        if old is None:  # a test file updated by the author's renames
            after = before
            for key in ("test_rename", "test_rename2", "test_rename3", "test_rename4"):
                if key in fault:
                    a, b = fault[key]
                    if a not in after:
                        raise ValueError(f"{fault['id']}: {path} lacks {a!r}")
                    after = after.replace(a, b)
        else:
            if before.count(old) != 1:
                raise ValueError(f"{fault['id']}: {path} does not contain the edited text once")
            after = before.replace(old, new)
        original = files[path][0] if path in files else before
        files[path] = (original, after)
    return files


def build_ok(service: str, files: dict[str, tuple[str, str]]) -> list[str]:
    from pytest_marathon.twin import images

    folder = SERVICES / service
    working = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
    for path, (_before, after) in files.items():
        working[path] = after
    failures, _log = images.build(service, working)
    return failures


def with_signature(probe: dict[str, Any], message: str) -> dict[str, Any]:
    """A request probe answers for this defect only: it fails when the request fails AND the
    defect's recorded message is in what the request produced, so another live fault on the same
    path does not keep it failing after this one is repaired."""
    if probe["kind"] in ("request", "rpc"):
        return {**probe, "signature": message}
    return probe


def main() -> int:
    written, broken = [], []
    for fault in FAULTS:
        svc = fault["service"]
        try:
            files = edited_files(fault)
        except ValueError as exc:
            broken.append(str(exc))
            continue
        failures = build_ok(svc, files)
        if failures:
            broken.append(f"{fault['id']}: build fails: {failures}")
            continue
        diff = "".join(unified_diff(svc, p, b, a) for p, (b, a) in sorted(files.items()))
        (OUT / "patches" / f"{fault['id']}.diff").write_text(diff)
        path = OUT / f"{fault['id']}.yaml"
        scope = yaml.safe_load(path.read_text()).get("scope") if path.exists() else None
        doc: dict[str, Any] = {
            "id": fault["id"],
            "category": "code",
            "mechanism": "change",
            "target": svc,
            "culprits": [svc],
            "probe": with_signature(fault.get("probe", PROBE[svc]),
                                    fault.get("signature", fault["log"][1])),
            "artifact": f"code:{svc}/service.py",
            "aliases": [f"image:{svc}"],
            "log": {"service": fault["log"][0], "message": fault["log"][1]},
            "update": fault["update"],
            "defect": fault["defect"],
            "exposed_by": fault["exposed_by"],
            "change_cause": fault["change_cause"],
            "injection": {"patch": f"patches/{fault['id']}.diff"},
            "recovery": f"Roll {svc} back to the previous image",
            "remedy": [{"tool": "rollback_service", "args": {"service": svc}}],
        }
        path.write_text(entry_text(doc, scope))
        written.append(fault["id"])
    print(f"wrote {len(written)} code faults")
    for problem in broken:
        print("SKIPPED", problem)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
