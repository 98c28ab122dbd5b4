"""ts-contacts-service: a user's passengers over ts-contacts-mongo (FudanSELab/train-ticket
ts-contacts-service `service/ContactsServiceImpl.java` findContactsById / findContactsByAccountId;
`init/InitData.java` seeds Contacts_One and Contacts_Two of fdse_microservice)."""

from spring import bad, find, find_one, ok, repo

MONGO = "ts-contacts-mongo"


def welcome(ctx, request):
    return "Welcome to [ Contacts Service ] !"


def get_by_id(ctx, request):
    contacts = find_one(ctx, repo(ctx, MONGO, "contacts"), {"id": request["params"]["id"]})
    return ok(contacts) if contacts else bad("No contacts according to contacts id")


def get_by_account(ctx, request):
    return ok(find(ctx, repo(ctx, MONGO, "contacts"), {"accountId": request["params"]["accountId"]}))


def get_all(ctx, request):
    found = find(ctx, repo(ctx, MONGO, "contacts"))
    return ok(found) if found else bad("No content")
