"""product-catalog: the catalog served from PostgreSQL (Go, grpc-go, lib/pq through otelsql).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/product-catalog/main.go. In 2.2.0 the
products live only in table catalog.products (src/postgresql/init.sql); there is no JSON file.
initDatabase pings the database once at start and the process exits when that fails (no
initContainer waits for postgresql). ListProducts and SearchProducts answer a database error with
Internal; GetProduct answers every error, a lost connection included, with NotFound
"Product Not Found: <id>" (main.go GetProduct). The handlers log only "Found N products from
database" and "Product Found"; grpc-go logs nothing for a status a handler returns.
"""

COLUMNS = ("p.id, p.name, p.description, p.picture, "
           "p.price_currency_code, p.price_units, p.price_nanos, p.categories")
LIST_SQL = f"SELECT {COLUMNS} FROM catalog.products p ORDER BY p.id"
SEARCH_SQL = (f"SELECT {COLUMNS} FROM catalog.products p "
              "WHERE LOWER(p.name) LIKE $1 OR LOWER(p.description) LIKE $1 ORDER BY p.id")
GET_SQL = f"SELECT {COLUMNS} FROM catalog.products p WHERE p.id = $1"
FAILURE_PRODUCT = "OLJCESPC7Z"  # checkProductFailure only ever fails this id


def pq_text(err):
    """An error as lib/pq prints it: server errors carry `pq: `, network errors are Go's own."""
    return f"pq: {err.message}" if err.kind == "server" else err.message


def open_db(ctx):
    return ctx.sql(ctx.env("DB_CONNECTION_STRING", ""))


def product_from_row(row):
    """parseProductRow: categories are a comma-delimited string, each trimmed."""
    text = row.get("categories") or ""
    categories = [part.strip() for part in text.split(",")] if text else []
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row.get("description") or "",
        "picture": row.get("picture") or "",
        "price_usd": {
            "currency_code": row["price_currency_code"],
            "units": int(row["price_units"]),
            "nanos": int(row["price_nanos"]),
        },
        "categories": categories,
    }


def products_from_rows(ctx, rows):
    """getProductsFromRows: logs how many products the query returned."""
    products = [product_from_row(row) for row in rows]
    ctx.log("info", f"Found {len(products)} products from database")
    return products


def ListProducts(ctx, request):
    ctx.work(0.2)
    try:
        rows = open_db(ctx).query(LIST_SQL)
    except ctx.SqlError as err:
        ctx.fail("INTERNAL", f"failed to load products: failed to query products: {pq_text(err)}")
    return {"products": products_from_rows(ctx, rows)}


def GetProduct(ctx, request):
    ctx.work(0.1)
    product_id = request.get("id", "")
    if product_id == FAILURE_PRODUCT and ctx.flag("productCatalogFailure", False):
        ctx.fail("INTERNAL", "Error: Product Catalog Fail Feature Flag Enabled")
    try:
        rows = open_db(ctx).query(GET_SQL, product_id)
    except ctx.SqlError:
        rows = []  # getProductFromDB's error is not looked at: every failure is NotFound
    if not rows:
        ctx.fail("NOT_FOUND", f"Product Not Found: {product_id}")
    found = product_from_row(rows[0])
    ctx.log("info", "Product Found")
    return found


def SearchProducts(ctx, request):
    ctx.work(0.3)
    pattern = "%" + request.get("query", "").lower() + "%"
    try:
        rows = open_db(ctx).query(SEARCH_SQL, pattern)
    except ctx.SqlError as err:
        ctx.fail("INTERNAL", f"failed to search products: failed to query products: {pq_text(err)}")
    return {"results": products_from_rows(ctx, rows)}


def init(ctx):
    """main: initDatabase, then mustMapEnv (which only logs) and the listen message."""
    if not ctx.env("DB_CONNECTION_STRING", ""):
        ctx.log("error", "Error initializing database: DB_CONNECTION_STRING environment variable not set")
        raise ctx.Exit(1)
    try:
        open_db(ctx).query("SELECT 1")  # db.Ping()
    except ctx.SqlError as err:
        ctx.log("error", f"Error initializing database: failed to ping database: {pq_text(err)}")
        raise ctx.Exit(1)
    ctx.log("info", "Database connection established")
    port = ctx.env("PRODUCT_CATALOG_PORT")
    if port is None:
        ctx.log("error", 'Environment Variable Not Set: "PRODUCT_CATALOG_PORT"')
        port = ""
    ctx.log("info", f"Product Catalog gRPC server started on port: {port}")
