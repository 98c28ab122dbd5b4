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
    "recommendationservice": {"kind": "request", "route": "view_cart"},
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
    # ---------------------------------------------------------------- cartservice
    {
        "id": "code-cart-merge-lookup",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """    for existing in cart["items"]:
        if existing["product_id"] == product_id:
            existing["quantity"] = existing["quantity"] + quantity
            break
    else:
        cart["items"].append({"product_id": product_id, "quantity": quantity})
""",
                """    if cart["items"]:
        existing = next(i for i in cart["items"] if i["product_id"] == product_id)
        existing["quantity"] = existing["quantity"] + quantity
    else:
        cart["items"].append({"product_id": product_id, "quantity": quantity})
""",
            )
        ],
        "change_cause": "cartservice: simplify the quantity merge in AddItem",
        "update": "Replace the for/else merge loop in AddItem with a direct lookup.",
        "defect": "Assumes a non-empty cart already holds the product being added; adding a "
        "second, different product raises StopIteration.",
        "exposed_by": ["addToCart", "checkout"],
        "log": ("cartservice", "Unhandled exception in AddItem"),
        "probe": {"kind": "no_error_logs", "service": "cartservice", "contains": "AddItem"},
    },
    {
        "id": "code-cart-unit-cap",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """CART_FIELD = "cart"
MAX_QUANTITY = 1000
""",
                """CART_FIELD = "cart"
MAX_QUANTITY = 1000
MAX_CART_UNITS = 10
""",
            ),
            (
                "service.py",
                """    save_cart(ctx, store, cart)
    return {}


def GetCart""",
                """    units = sum(line["quantity"] for line in cart["items"])
    if units > MAX_CART_UNITS:
        ctx.fail("FAILED_PRECONDITION", f"cart would hold {units} units (limit {MAX_CART_UNITS})")
    save_cart(ctx, store, cart)
    return {}


def GetCart""",
            ),
        ],
        "change_cause": "cartservice: enforce the per-cart limit from the storefront quantity picker",
        "update": "Limit a cart to the 10 units the quantity picker offers.",
        "defect": "The picker limits one addition, not the cart: repeated additions of 1-10 "
        "units pass the limit and AddItem fails.",
        "exposed_by": ["addToCart", "checkout"],
        "log": ("frontend", "failed to add to cart"),
    },
    {
        "id": "code-cart-line-field",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """    item = request.get("item", {})
""",
                """    item = request.get("line", {})
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"item": {', '"line": {'),
        "change_cause": "cartservice: rename AddItem item to line to match the order proto",
        "update": "Rename the AddItem request field `item` to `line`.",
        "defect": "The frontend still sends `item`, so every addition arrives without a product "
        "and is rejected.",
        "exposed_by": ["addToCart", "checkout"],
        "log": ("frontend", "failed to add to cart"),
    },
    # ---------------------------------------------------------------- checkoutservice
    {
        "id": "code-checkout-total-once",
        "service": "checkoutservice",
        "edits": [
            (
                "service.py",
                """        cost = convert(ctx, product["price_usd"], currency,
                       f"failed to prepare order: failed to convert price of \\"{product_id}\\" "
                       f"to {currency}")
        order_items.append({"item": dict(item), "cost": cost})
""",
                """        # prices stay in USD here; the total is converted once at the end
        order_items.append({"item": dict(item), "cost": product["price_usd"]})
""",
            )
        ],
        "change_cause": "checkoutservice: convert the order total once instead of per line",
        "update": "Save one currency conversion per line by keeping line costs in USD.",
        "defect": "The shipping cost is still converted to the user's currency, so adding it to "
        "USD lines fails with mismatching currency codes for every non-USD order.",
        "exposed_by": ["checkout"],
        "log": ("checkoutservice", "mismatching currency codes"),
        "probe": {"kind": "request", "route": "checkout", "currency": "EUR"},
    },
    {
        "id": "code-checkout-quote-ids",
        "service": "checkoutservice",
        "edits": [
            (
                "service.py",
                """    quote = call(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote",
                 {"address": address, "items": cart_items},
""",
                """    # the quote only depends on what ships, so send ids rather than whole cart lines
    quote = call(ctx, "SHIPPING_SERVICE_ADDR", "GetQuote",
                 {"address": address, "items": [i["product_id"] for i in cart_items]},
""",
            )
        ],
        "change_cause": "checkoutservice: send product ids only in the shipping quote request",
        "update": "Shrink the GetQuote request to the product ids of the cart.",
        "defect": "shippingservice still reads cart lines with quantities and fails on bare ids.",
        "exposed_by": ["checkout"],
        "log": ("checkoutservice", "shipping quote failure"),
    },
    # ---------------------------------------------------------------- currencyservice
    {
        "id": "code-currency-target-field",
        "service": "currencyservice",
        "edits": [
            (
                "service.py",
                """    to_code = request.get("to_code", "")
""",
                """    to_code = request.get("to_currency_code", "")
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"to_code":', '"to_currency_code":'),
        "change_cause": "currencyservice: name the Convert target field like the proto",
        "update": "Rename the Convert request field `to_code` to `to_currency_code`.",
        "defect": "frontend and checkoutservice still send `to_code`; every conversion is "
        "rejected as an unsupported currency.",
        "exposed_by": ["index", "browseProduct", "viewCart", "checkout"],
        "log": ("frontend", "Unsupported currency"),
    },
    {
        "id": "code-currency-settlement-set",
        "service": "currencyservice",
        "edits": [
            (
                "service.py",
                """NANOS_PER_UNIT = 1000000000
""",
                """NANOS_PER_UNIT = 1000000000
# currencies we hold settlement accounts for
SETTLED = ("CAD", "EUR", "GBP", "JPY", "USD")
""",
            ),
            (
                "service.py",
                """    rate = RATES.get(code)
    if rate is None:
""",
                """    rate = RATES.get(code) if code in SETTLED else None
    if rate is None:
""",
            ),
            (
                "service.py",
                """    return {"currency_codes": sorted(RATES)}
""",
                """    return {"currency_codes": sorted(SETTLED)}
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"GBP", "TRY"]', '"GBP"]'),
        "change_cause": "currencyservice: offer only currencies with settlement accounts",
        "update": "Limit supported currencies to those the shop can settle.",
        "defect": "Shoppers who already chose TRY keep it in their cookie; their conversions "
        "now fail.",
        "exposed_by": ["setCurrency", "index", "browseProduct", "viewCart"],
        "log": ("frontend", "Unsupported currency: TRY"),
        "probe": {"kind": "request", "route": "home", "currency": "TRY"},
    },
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
    return {"currency_code": to_code, "units": int(units // 1), "nanos": int(nanos // 1)}
""",
                """    ctx.log("info", "conversion request successful")
    result = {"currency_code": to_code, "units": int(units // 1), "nanos": int(nanos // 1)}
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
    # ---------------------------------------------------------------- paymentservice
    {
        "id": "code-payment-card-field",
        "service": "paymentservice",
        "edits": [
            (
                "service.py",
                """    card = request.get("credit_card", {})
""",
                """    card = request.get("card", {})
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"credit_card": ', '"card": '),
        "change_cause": "paymentservice: shorten the Charge request field to card",
        "update": "Rename the Charge request field `credit_card` to `card`.",
        "defect": "checkoutservice still sends `credit_card`; every charge sees an empty card "
        "and is refused.",
        "exposed_by": ["checkout"],
        "log": ("checkoutservice", "Credit card info is invalid"),
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
        "log": ("checkoutservice", "charge held for manual review"),
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
        ctx.fail("INVALID_ARGUMENT",
                 f"currency {amount.get('currency_code')} is not supported by the processor")
    kind = card_type(number)
""",
            )
        ],
        "change_cause": "paymentservice: refuse currencies the card processor does not settle",
        "update": "Refuse charges in currencies the processor cannot settle.",
        "defect": "The storefront offers JPY and TRY; those orders can no longer be paid.",
        "exposed_by": ["checkout"],
        "log": ("checkoutservice", "is not supported by the processor"),
        "probe": {"kind": "request", "route": "checkout", "currency": "TRY"},
    },
    # ---------------------------------------------------------------- productcatalogservice
    {
        "id": "code-catalog-price-field",
        "service": "productcatalogservice",
        "edits": [
            (
                "service.py",
                """        "price_usd": dict(product["price_usd"]),
""",
                """        "price": dict(product["price_usd"]),
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('product["price_usd"]', 'product["price"]'),
        "change_cause": "productcatalogservice: rename price_usd to price (the currency is in it)",
        "update": "Rename the Product field `price_usd` to `price`.",
        "defect": "frontend and checkoutservice still read `price_usd` and fail on every page "
        "that shows a price.",
        "exposed_by": ["index", "browseProduct", "viewCart", "checkout"],
        "log": ("frontend", "price_usd"),
    },
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
                """    if product is None:
        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    return to_message(product)
""",
                """    if product is None:
        ctx.fail("NOT_FOUND", f"no product with ID {product_id}")
    message = to_message(product)
    message["related"] = [BY_ID[other]["name"] for other in RELATED.get(product_id, [])]
    return message
""",
            ),
        ],
        "change_cause": "productcatalogservice: return related product names from GetProduct",
        "update": "Add merchandising's related products to the Product message.",
        "defect": "The related table still lists HQTGWGPNH4, a product retired from the "
        "catalog: the watch and the mug can no longer be loaded.",
        "exposed_by": ["browseProduct", "addToCart", "checkout"],
        "log": ("frontend", "HQTGWGPNH4"),
        "probe": {"kind": "request", "route": "product", "product_id": "6E92ZMYYFZ"},
    },
    # ---------------------------------------------------------------- shippingservice
    {
        "id": "code-shipping-free-threshold",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """QUOTE_PER_ORDER = (8, 990000000)  # $8.99 whatever the basket, as in the Go service
""",
                """QUOTE_PER_ORDER = (8, 990000000)  # $8.99 whatever the basket, as in the Go service
FREE_SHIPPING_FROM = 10  # items
""",
            ),
            (
                "service.py",
                """    if count == 0:
        return 0, 0
    return QUOTE_PER_ORDER
""",
                """    if count == 0:
        return 0, 0
    if count >= FREE_SHIPPING_FROM:
        return 0, None
    return QUOTE_PER_ORDER
""",
            ),
        ],
        "change_cause": "shippingservice: free shipping from 10 items",
        "update": "Ship baskets of 10 or more items for free.",
        "defect": "The free quote leaves nanos unset (None) instead of 0; callers adding it to "
        "a total fail.",
        "exposed_by": ["viewCart", "checkout"],
        "log": ("frontend", "[recovered] in view_cart"),
        "probe": {
            "kind": "no_error_logs",
            "service": "frontend",
            "contains": "[recovered] in view_cart",
        },
    },
    {
        "id": "code-shipping-quote-address",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """    ctx.log("info", "[GetQuote] received request")
""",
                """    ctx.log("info", "[GetQuote] received request")
    address = request.get("address", {})
    if not address.get("country"):
        ctx.fail("INVALID_ARGUMENT", "destination country required for a quote")
""",
            )
        ],
        "change_cause": "shippingservice: validate the destination before quoting",
        "update": "Refuse quotes without a destination country.",
        "defect": "The cart page asks for a quote before any address is known, so every cart "
        "view fails.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "destination country required"),
        "probe": {"kind": "request", "route": "view_cart"},
    },
    {
        "id": "code-shipping-country-surcharge",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
""",
                """LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SURCHARGE_NANOS = {"US": 0, "CA": 500000000, "MX": 500000000}
""",
            ),
            (
                "service.py",
                """    units, nanos = quote_from_count(item_count(request.get("items", [])))
""",
                """    units, nanos = quote_from_count(item_count(request.get("items", [])))
    country = request.get("address", {}).get("country", "US") or "US"
    if units:
        nanos = nanos + SURCHARGE_NANOS[country]
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"country": "United States"', '"country": "US"'),
        "change_cause": "shippingservice: add cross-border surcharges to quotes",
        "update": "Add a per-country surcharge to non-free quotes.",
        "defect": "Checkout sends country names ('United States'), not ISO codes: the lookup "
        "fails for every order.",
        "exposed_by": ["checkout"],
        "log": ("shippingservice", "[recovered] in GetQuote"),
    },
    # ---------------------------------------------------------------- emailservice
    {
        "id": "code-email-product-names",
        "service": "emailservice",
        "edits": [
            (
                "service.py",
                """        f"<tr><td>#{item['item']['product_id']}</td><td>{item['item']['quantity']}</td>"
""",
                """        f"<tr><td>{item['item']['name']} (#{item['item']['product_id']})</td>"
        f"<td>{item['item']['quantity']}</td>"
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            '{"product_id": "6E92ZMYYFZ", "quantity": 2}',
            '{"product_id": "6E92ZMYYFZ", "name": "Mug", "quantity": 2}',
        ),
        "change_cause": "emailservice: show product names in the order confirmation",
        "update": "Show product names next to ids in the confirmation email.",
        "defect": "checkoutservice sends order lines without names; rendering fails for every "
        "order.",
        "exposed_by": ["checkout"],
        "log": ("emailservice", "An error occurred when preparing the confirmation mail"),
    },
    {
        "id": "code-email-order-total",
        "service": "emailservice",
        "edits": [
            (
                "service.py",
                """        "rows": rows,
    }
""",
                """        "rows": rows,
        "total": money_text(order["total"]),
    }
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            '"order_id": "a1b2",',
            '"order_id": "a1b2", "total": {"currency_code": "USD", "units": 26, "nanos": 970000000},',
        ),
        "change_cause": "emailservice: include the order total in the confirmation",
        "update": "Add the order total to the confirmation email.",
        "defect": "The order message has no total field; every confirmation fails to render.",
        "exposed_by": ["checkout"],
        "log": ("emailservice", "An error occurred when preparing the confirmation mail"),
    },
    # ---------------------------------------------------------------- recommendationservice
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
        "defect": "Assumes the request always names viewed products; the cart page of an "
        "empty cart and the order page send none and divide by zero.",
        "exposed_by": ["viewCart", "checkout"],
        "log": ("recommendationservice", "ZeroDivisionError"),
        "probe": {
            "kind": "no_error_logs",
            "service": "recommendationservice",
            "contains": "ZeroDivisionError",
        },
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
        "exposed_by": ["viewCart", "checkout"],
        "log": ("frontend", "failed to get product recommendations"),
    },
    # ---------------------------------------------------------------- adservice
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
        "defect": "Products carry categories with no ads (tops, beauty, home); those product "
        "pages get an error instead of ads.",
        "exposed_by": ["browseProduct", "addToCart"],
        "log": ("adservice", "Exception in GetAds"),
    },
    {
        "id": "code-ad-user-seed",
        "service": "adservice",
        "edits": [
            (
                "service.py",
                """        ads = random_ads(ctx.request_id)
""",
                """        ads = random_ads(request["user_id"])  # same shopper, same ads
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('{"context_keys": []}', '{"context_keys": [], "user_id": "u1"}'),
        "change_cause": "adservice: keep random ads stable per shopper",
        "update": "Seed the random ads with the shopper's id.",
        "defect": "The frontend does not send user_id in GetAds; every page without context "
        "keys (the home page) fails.",
        "exposed_by": ["index"],
        "log": ("adservice", "Exception in GetAds"),
        "probe": {
            "kind": "rpc",
            "service": "adservice",
            "method": "GetAds",
            "request": {"context_keys": []},
        },
    },
    # ---------------------------------------------------------------- frontend
    {
        "id": "code-frontend-usd-total",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """        total = money.add(money.zero(currency), shipping)
""",
                """        total = money.add(money.zero(DEFAULT_CURRENCY), shipping)
""",
            )
        ],
        "change_cause": "frontend: start cart totals from the default currency",
        "update": "Initialise the cart total in the default currency.",
        "defect": "Shipping and prices are converted to the shopper's currency: any non-USD "
        "cart fails to add up.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "mismatching currency codes"),
        "probe": {"kind": "request", "route": "view_cart", "currency": "EUR"},
    },
    {
        "id": "code-frontend-session-field",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """def add_to_cart(ctx, request):
    ctx.work(1.5)
    session_id = request.get("session_id", "")
""",
                """def add_to_cart(ctx, request):
    ctx.work(1.5)
    session_id = request.get("session", "")
""",
            )
        ],
        "change_cause": "frontend: read the session id set by the new session middleware",
        "update": "Read the cart's session id from the middleware's `session` field.",
        "defect": "Requests still carry `session_id`; additions go out with an empty user id "
        "and cartservice rejects them.",
        "exposed_by": ["addToCart", "checkout"],
        "log": ("frontend", "failed to add to cart"),
        "probe": {"kind": "request", "route": "add_to_cart"},
    },
    {
        "id": "code-frontend-quote-address",
        "service": "frontend",
        "edits": [
            (
                "service.py",
                """                        {"address": {}, "items": items}, "failed to get shipping quote")
""",
                """                        {"address": request["address"], "items": items},
                        "failed to get shipping quote")
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            'service.view_cart(ctx, {"session_id": "s1", "currency": "USD"})',
            'service.view_cart(ctx, {"session_id": "s1", "currency": "USD",\n'
            '                                   "address": {"country": "US"}})',
        ),
        "change_cause": "frontend: quote shipping to the shopper's saved address",
        "update": "Pass the saved address to the shipping quote on the cart page.",
        "defect": "Cart page requests carry no saved address; every cart view fails.",
        "exposed_by": ["viewCart"],
        "log": ("frontend", "[recovered] in view_cart"),
    },
    {
        "id": "code-shipping-tracking-zip",
        "service": "shippingservice",
        "edits": [
            (
                "service.py",
                """    salt = f"{address.get('street_address', '')}, {address.get('city', '')}, " \\
           f"{address.get('state', '')}:{ctx.request_id}"
""",
                """    zip_code = address.get("zip_code", "").zfill(5)  # carriers route on the zip
    salt = f"{address.get('street_address', '')}, {address.get('city', '')}, " \\
           f"{address.get('state', '')} {zip_code}:{ctx.request_id}"
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"zip_code": 94043', '"zip_code": "94043"'),
        "change_cause": "shippingservice: include the zip code in tracking ids",
        "update": "Put the zero-padded zip code into tracking ids for carrier routing.",
        "defect": "The frontend sends the zip code as a number; padding it fails for every "
        "shipment.",
        "exposed_by": ["checkout"],
        "log": ("shippingservice", "[recovered] in ShipOrder"),
    },
    {
        "id": "code-email-zip-format",
        "service": "emailservice",
        "edits": [
            (
                "service.py",
                """        "zip_code": str(address.get("zip_code", "")),
""",
                """        "zip_code": address.get("zip_code", "").strip(),
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"zip_code": 94043', '"zip_code": "94043"'),
        "change_cause": "emailservice: trim stray whitespace from zip codes in confirmations",
        "update": "Trim whitespace around zip codes in the confirmation address.",
        "defect": "Orders carry the zip code as a number, which has no strip(): every "
        "confirmation fails to render.",
        "exposed_by": ["checkout"],
        "log": ("emailservice", "Exception in SendOrderConfirmation"),
    },
    {
        "id": "code-payment-cvv-digits",
        "service": "paymentservice",
        "edits": [
            (
                "service.py",
                """    kind = card_type(number)
""",
                """    cvv = card.get("credit_card_cvv", "")
    if not (cvv.isdigit() and len(cvv) in (3, 4)):
        ctx.fail("INVALID_ARGUMENT", "Credit card security code is invalid")
    kind = card_type(number)
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": ('"credit_card_cvv": 672', '"credit_card_cvv": "672"'),
        "change_cause": "paymentservice: validate the card security code",
        "update": "Check that the CVV has 3 or 4 digits.",
        "defect": "checkoutservice forwards the CVV as a number, which has no isdigit(): every "
        "charge fails.",
        "exposed_by": ["checkout"],
        "log": ("paymentservice", "Charge request failed"),
    },
    {
        "id": "code-catalog-shop-currency",
        "service": "productcatalogservice",
        "edits": [
            (
                "service.py",
                """def to_message(product):
    \"\"\"The Product message as the Go service returns it (price is `price_usd`).\"\"\"
    return {
""",
                """def to_message(product, currency=None):
    \"\"\"The Product message as the Go service returns it (price is `price_usd`), priced in
    the shop's currency.\"\"\"
    price = dict(product["price_usd"])
    price["currency_code"] = currency
    return {
""",
            ),
            (
                "service.py",
                """        "price_usd": dict(product["price_usd"]),
""",
                """        "price_usd": price,
""",
            ),
            (
                "service.py",
                """    return to_message(product)
""",
                """    return to_message(product, ctx.env("SHOP_CURRENCY"))
""",
            ),
            (
                "service.py",
                """    return {"products": [to_message(product) for product in CATALOG]}
""",
                """    currency = ctx.env("SHOP_CURRENCY")
    return {"products": [to_message(product, currency) for product in CATALOG]}
""",
            ),
            (
                "service.py",
                """    results = [to_message(product) for product in CATALOG
""",
                """    results = [to_message(product, ctx.env("SHOP_CURRENCY")) for product in CATALOG
""",
            ),
            ("test_service.py", None, None),
        ],
        "test_rename": (
            'service.GetProduct(TestContext(), {"id": "66VCHSJNUP"})',
            'service.GetProduct(TestContext(env={"SHOP_CURRENCY": "USD"}), {"id": "66VCHSJNUP"})',
        ),
        "change_cause": "productcatalogservice: label prices with the configured shop currency",
        "update": "Take the catalog's price currency from a SHOP_CURRENCY setting.",
        "defect": "No deployment sets SHOP_CURRENCY and there is no default: every price "
        "carries no currency and cannot be converted.",
        "exposed_by": ["index", "browseProduct", "viewCart", "checkout"],
        "log": ("frontend", "Unsupported currency: None"),
        "probe": {"kind": "request", "route": "home"},
    },
    {
        "id": "code-cart-stale-expiry",
        "service": "cartservice",
        "edits": [
            (
                "service.py",
                """CART_FIELD = "cart"
""",
                """CART_FIELD = "cart"
CART_TTL_SECONDS = 24 * 3600
""",
            ),
            (
                "service.py",
                """    if raw is None:
        return {"user_id": user_id, "items": []}
    return json.loads(raw)
""",
                """    if raw is None:
        return {"user_id": user_id, "items": []}
    cart = json.loads(raw)
    if ctx.now - cart["updated_at"] > CART_TTL_SECONDS:  # abandoned: start afresh
        return {"user_id": user_id, "items": []}
    return cart
""",
            ),
            (
                "service.py",
                """    try:
        store.hset(cart["user_id"], CART_FIELD, json.dumps(cart, sort_keys=True))
""",
                """    cart["updated_at"] = ctx.now
    try:
        store.hset(cart["user_id"], CART_FIELD, json.dumps(cart, sort_keys=True))
""",
            ),
        ],
        "change_cause": "cartservice: drop carts abandoned for more than a day",
        "update": "Stamp carts on save and treat carts older than a day as empty.",
        "defect": "Carts saved before the release have no timestamp; reading them fails until "
        "they are emptied, which itself needs a read.",
        "exposed_by": ["index", "browseProduct", "addToCart", "viewCart", "checkout"],
        "log": ("cartservice", "Unhandled exception in GetCart"),
        "probe": {"kind": "no_error_logs", "service": "cartservice", "contains": "GetCart"},
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
            for key in ("test_rename", "test_rename2", "test_rename3"):
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
            "probe": with_signature(fault.get("probe", PROBE[svc]), fault["log"][1]),
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
