"""geo as AIOpsLab's buggy image `yinfangchen/geo:app3` runs it, in our reading.

The only public word on that build is the AIOpsLab paper's (Table 2, fault 5, BuggyAppImage:
"Connection code bug in the application image causes access issues"). Our reading: a build whose
`initializeDatabase` dials the configured address as DeathStarBench's own geo does
(`mongodb://<GeoMongoAddress>`, delimitrou/DeathStarBench hotelReservation/cmd/geo/db.go)
without the admin credentials the fork hard-codes, against the fork's mongodb-geo that runs with
`--auth`. The dial succeeds (a connection needs no login); the first count is refused by MongoDB
(Unauthorized, code 13, `command count requires authentication`) and geo's `log.Fatal` exits 1,
so the container crash-loops (docs/fidelity.md, HotelReservation)."""


def mongo_url(address):
    return "mongodb://" + address
