"""fraud-detection: counts the orders on `orders` (Kotlin, kafka-clients, log4j).

Upstream: open-telemetry/opentelemetry-demo 2.2.0
src/fraud-detection/src/main/kotlin/frauddetection/main.kt (main, getFeatureFlagValue). Group
`fraud-detection`, no auto.offset.reset (client default latest), auto-commit. Per record: when the
`kafkaQueueProblems` flag is above 0, log and sleep one second; parse the OrderResult; log the order
id and the running count. Nothing in the poll loop catches an exception: one ends `main` and the
process (app.yaml on_error: exit; the JVM prints `Exception in thread "main" ...`).
"""

STATE = {"total": 0}  # totalCount, per process


def consume(ctx, record):
    ctx.work(0.2)
    new_count = STATE["total"] + 1
    if ctx.flag("kafkaQueueProblems", 0) > 0:
        ctx.log("info", "FeatureFlag 'kafkaQueueProblems' is enabled, sleeping 1 second")
        ctx.sleep(1000)
    order = record.get("value") or {}
    ctx.log("info", f"Consumed record with orderId: {order.get('order_id', '')}, "
                    f"and updated total count to: {new_count}")
    STATE["total"] = new_count


def init(ctx):
    """main: KAFKA_ADDR is required."""
    if ctx.env("KAFKA_ADDR") is None:
        ctx.log("info", "KAFKA_ADDR is not supplied")
        raise ctx.Exit(1)
