"""ad: text ads by product category (Java 21, grpc-java, log4j).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/ad/src/main/java/oteldemo/AdService.java
(AdServiceImpl.getAds, getAdsByCategory, getRandomAds, createAdsMap, start) and
problempattern/GarbageCollectionTrigger.java, CPULoad.java. With context keys the ads of those
categories are served, else two random ones (MAX_ADS_TO_SERVE, drawn with repetition); an empty
result (the `books` category has no ads on purpose) falls back to random ads. Only a
StatusRuntimeException is caught (logged WARN with the Status, then returned); anything else
escapes to grpc-java (UNKNOWN, logged by the engine). Random draws come from the request id.
"""

import hashlib

MAX_ADS_TO_SERVE = 2


def ad(product_id, text):
    return {"redirect_url": f"/product/{product_id}", "text": text}


# createAdsMap: category -> ads (a multimap; `books` deliberately absent)
ADS_MAP = {
    "binoculars": [ad("2ZYFJ3GM2N", "Roof Binoculars for sale. 50% off.")],
    "telescopes": [ad("66VCHSJNUP", "Starsense Explorer Refractor Telescope for sale. 20% off.")],
    "accessories": [ad("0PUK6V6EV0", "Solar System Color Imager for sale. 30% off."),
                    ad("6E92ZMYYFZ", "Solar Filter for sale. Buy two, get third one for free"),
                    ad("L9ECAV7KIM", "Lens Cleaning Kit for sale. Buy one, get second one for free")],
    "assembly": [ad("9SIQT8TOJO", "Optical Tube Assembly for sale. 10% off.")],
    "travel": [ad("1YMWWN1N4O", "Eclipsmart Travel Refractor Telescope for sale. "
                                "Buy one, get second kit for free")],
}
ALL_ADS = [one for category in ADS_MAP for one in ADS_MAP[category]]  # adsMap.values()
GC = {"last": None}  # GarbageCollectionTrigger.lastGC (a new trigger per call upstream)


def draw(ctx, label, bound):
    """random.nextInt(bound), derived from the request id."""
    digest = hashlib.sha256(f"{ctx.request_id}:{label}".encode()).hexdigest()
    return int(digest[:12], 16) % bound


def get_ads_by_category(category):
    return list(ADS_MAP.get(category, []))


def get_random_ads(ctx):
    return [ALL_ADS[draw(ctx, f"random-{i}", len(ALL_ADS))] for i in range(MAX_ADS_TO_SERVE)]


def java_list(items):
    """List.toString()."""
    return "[" + ", ".join(items) + "]"


def manual_gc(ctx):
    """adManualGc: fill the heap and run ten full collections (latency, not errors)."""
    ctx.log("warning", "Feature Flag adManualGc enabled, performing a manual gc now")
    ctx.log("info", "Triggering a manual garbage collection, next one in 10 seconds.")
    took = 400 + draw(ctx, "gc", 400)
    ctx.work(took / 4)
    ctx.sleep(took)
    ctx.log("info", f"The artificially triggered GCs took: {took} ms")


def GetAds(ctx, request):
    ctx.work(0.3)
    keys = list(request.get("context_keys") or [])
    if ctx.flag("adHighCpu", False):
        ctx.log("info", "High CPU-Load problempattern enabled")
        ctx.work(20.0)
    if keys:
        ctx.log("info", f"Targeted ad request received for {java_list(keys)}")
        all_ads = []
        for key in keys:
            all_ads.extend(get_ads_by_category(key))
    else:
        ctx.log("info", "Non-targeted ad request received, preparing random response.")
        all_ads = get_random_ads(ctx)
    if not all_ads:
        all_ads = get_random_ads(ctx)

    if ctx.flag("adFailure", False) and draw(ctx, "failure", 10) == 0:
        # StatusRuntimeException(Status.UNAVAILABLE), caught and logged with Status.toString()
        ctx.log("warning", "GetAds Failed with status Status{code=UNAVAILABLE, description=null, cause=null}")
        ctx.fail("UNAVAILABLE", "")

    if ctx.flag("adManualGc", False):
        manual_gc(ctx)
    return {"ads": all_ads}


def init(ctx):
    """main/start: AD_PORT is required (an uncaught IllegalStateException ends the JVM)."""
    ctx.log("info", "Ad service starting.")
    port = ctx.env("AD_PORT")
    if port is None:
        ctx.log("error", 'Exception in thread "main" java.lang.IllegalStateException: '
                         "environment vars: AD_PORT must not be null")
        raise ctx.Exit(1)
    ctx.log("info", f"Ad service started, listening on {port}")
