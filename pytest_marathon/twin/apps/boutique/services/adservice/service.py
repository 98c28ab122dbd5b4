"""adservice: ads matching the page's context keywords, random ones otherwise (Java original)."""

import hashlib

MAX_ADS_TO_SERVE = 2

ADS_BY_CATEGORY = {
    "clothing": [{"redirect_url": "/product/66VCHSJNUP", "text": "Tank top for sale. 20% off."}],
    "accessories": [{"redirect_url": "/product/1YMWWN1N4O", "text": "Watch for sale. Buy one, get second kit for free"}],
    "footwear": [{"redirect_url": "/product/L9ECAV7KIM", "text": "Loafers for sale. Buy one, get second one for free"}],
    "hair": [{"redirect_url": "/product/2ZYFJ3GM2N", "text": "Hairdryer for sale. 50% off."}],
    "decor": [{"redirect_url": "/product/0PUK6V6EV0", "text": "Candle holder for sale. 30% off."}],
    "kitchen": [
        {"redirect_url": "/product/9SIQT8TOJO", "text": "Bamboo glass jar for sale. 10% off."},
        {"redirect_url": "/product/6E92ZMYYFZ", "text": "Mug for sale. Buy two, get third one for free"},
    ],
}
ALL_ADS = [ad for category in sorted(ADS_BY_CATEGORY) for ad in ADS_BY_CATEGORY[category]]


def random_ads(seed):
    ranked = sorted(range(len(ALL_ADS)),
                    key=lambda index: hashlib.sha256(f"{seed}:{index}".encode()).hexdigest())
    return [ALL_ADS[index] for index in ranked[:MAX_ADS_TO_SERVE]]


def GetAds(ctx, request):
    ctx.work(1.0)
    keys = request.get("context_keys", [])
    ctx.log("info", f"received ad request (context_words={keys})")
    ads = []
    for key in keys:
        ads.extend(ADS_BY_CATEGORY.get(key, []))
    if not ads:
        ads = random_ads(ctx.request_id)
    return {"ads": [dict(ad) for ad in ads]}
