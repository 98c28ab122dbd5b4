"""ts-user-service: user accounts over ts-user-mongo (FudanSELab/train-ticket ts-user-service
`service/impl/UserServiceImpl.java` findByUserId `Find User Success` / `No User`,
findByUserName; `init/InitUser.java` seeds fdse_microservice)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-user-mongo"


def hello(ctx, request):
    return "Hello"


def by_id(ctx, request):
    user = find_one(ctx, repo(ctx, MONGO, "user"), {"userId": request["params"]["userId"]})
    return ok(user, "Find User Success") if user else bad("No User")


def by_name(ctx, request):
    user = find_one(ctx, repo(ctx, MONGO, "user"), {"userName": request["params"]["userName"]})
    return ok(user, "Find User Success") if user else bad("No User")


def get_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "user"))
    return ok(found, "Success") if found else bad("NO User")
