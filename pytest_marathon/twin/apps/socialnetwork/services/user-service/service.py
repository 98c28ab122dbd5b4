"""UserService (DeathStarBench socialNetwork/src/UserService/UserHandler.h): ComposeCreatorWithUserId
builds the post's creator from the id and name it is given, touching no datastore."""


def ComposeCreatorWithUserId(ctx, request):
    return {"user_id": request["user_id"], "username": request["username"]}
