"""ts-consign-price-service: the consignment tariff over ts-consign-price-mongo
(FudanSELab/train-ticket ts-consign-price-service `service/ConsignPriceServiceImpl.java`
getPriceByWeightAndRegion; `init/InitData.java`: initial weight 1, initial price 8, within region
2 per kg above it, beyond region 4)."""

from spring import find_one, ok, repo

MONGO = "ts-consign-price-mongo"


def welcome(ctx, request):
    return "Welcome to [ ConsignPrice Service ] !"


def price(ctx, request):
    params = request["params"]
    config = find_one(ctx, repo(ctx, MONGO, "consign_price"), {"index": 0}) or {}
    weight = float(params["weight"])
    within = str(params["isWithinRegion"]).lower() == "true"
    total = float(config.get("initialPrice", 8))
    if weight > config.get("initialWeight", 1):
        extra = weight - config.get("initialWeight", 1)
        total += extra * (config.get("withinPrice", 2) if within else config.get("beyondPrice", 4))
    return ok(total)


def config(ctx, request):
    return ok(find_one(ctx, repo(ctx, MONGO, "consign_price"), {"index": 0}))
