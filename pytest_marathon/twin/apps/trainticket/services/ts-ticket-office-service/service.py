"""ts-ticket-office-service (Node.js, Express): ticket office addresses (FudanSELab/train-ticket
ts-ticket-office-service/app.js and routes: the office list lives in ts-ticket-office-mongo).
The twin serves the route as a thin handler that answers the seeded list without reading Mongo
(the twin has no Node MongoDB driver texts; docs/fidelity.md)."""

OFFICES = [{"province": "Shanghai", "city": "Shanghai", "region": "Pudong New Area",
            "officeName": "Jinqiao Road ticket sales outlets", "address": "Jinqiao Road 1320",
            "workTime": "08:00-18:00", "windowNum": 1}]


def get_all(ctx, request):
    return OFFICES
