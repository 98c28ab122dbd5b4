"""hotelReservation user (xlab-uiuc/aiopslab-applications `services/user/server.go`): every user of
user-db.user is loaded once at start (a failed load is logged, `Failed get users data: ...`);
CheckUser compares the sha256 of the password with the stored one."""

import hashlib

STATE = {"users": {}}  # username -> sha256 hex, per process


def init(ctx):
    coll = ctx.mongo(ctx.env("UserMongoAddress", "mongodb-user:27017")).collection("user-db", "user")
    try:
        STATE["users"] = {u["username"]: u["password"] for u in coll.find({})}
    except ctx.MongoError as err:
        ctx.log("error", "Failed get users data: %!(EXTRA *mgo.QueryError=" + err.message + ")")
    ctx.log("info", "Successfully registered in consul")


def CheckUser(ctx, request):
    digest = hashlib.sha256(str(request.get("password", "")).encode()).hexdigest()
    return {"correct": STATE["users"].get(request.get("username", "")) == digest}
