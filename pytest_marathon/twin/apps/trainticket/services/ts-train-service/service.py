"""ts-train-service: train types over ts-train-mongo (FudanSELab/train-ticket ts-train-service
`controller/TrainController.java`: retrieve answers `Response(1, "success", trainType)` or
`Response(0, "here is no TrainType with the trainType id: <id>", null)`; `init/InitData.java`)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-train-mongo"


def welcome(ctx, request):
    return "Welcome to [ Train Service ] !"


def retrieve(ctx, request):
    tid = request["params"]["id"]
    train = find_one(ctx, repo(ctx, MONGO, "trainType"), {"id": tid})
    return ok(train, "success") if train else bad("here is no TrainType with the trainType id: " + tid)


def query(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "trainType"))
    return ok(found, "success") if found else bad("no content")
