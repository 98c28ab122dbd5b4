"""The connection code of `cmd/geo/db.go` in AIOpsLab's fork (xlab-uiuc/aiopslab-applications,
"Changes: admin credentials were hard-coded into the database connection URL"): mgo.Dial of
`mongodb://admin:admin@<GeoMongoAddress>`. Its own module so another build of geo can differ here
alone (app.yaml `extra_images`)."""


def mongo_url(address):
    return "mongodb://admin:admin@" + address
