"""What every Train Ticket Java service shares (app.yaml `shared_code`, as each upstream service
builds `ts-common`): the `Response<T>` envelope, RestTemplate calls and Spring Data MongoDB
repositories.

Upstream (FudanSELab/train-ticket): `ts-common/src/main/java/edu/fudan/common/util/Response.java`
(`status` 1 success / 0 failure, `msg`, `data`), each service's `service/*ServiceImpl.java`
(`restTemplate.exchange(...)` with no timeout set, so a call waits as long as its callee) and
`application.yml` (`spring.data.mongodb.host: ts-<svc>-mongo`, database `ts`, port 27017).

Failures are not caught by the services: a RestTemplate I/O error is a `ResourceAccessException`
(twin/httptexts.py, language java); a callee's 5xx is `HttpServerErrorException` with Spring 4.3's
message `<code> null` (Tomcat 8.5 sends no reason phrase, `DefaultResponseErrorHandler`); a Mongo
failure is Spring Data's translated exception (twin/mongoclient.py). Each escapes the controller
and Spring Boot answers 500 (twin/langerrors.py `spring_boot_error`)."""


class JavaError(Exception):
    """An exception a Java service throws: its message is the Java text (`<class>: <message>`)."""


def ok(data, msg="Success"):
    """A controller's `ResponseEntity.ok(new Response<>(1, msg, data))`: HTTP 200 with the envelope."""
    return {"status": 200, "body": {"status": 1, "msg": msg, "data": data}}


def bad(msg, data=None):
    """`new Response<>(0, msg, data)`: a refusal is still HTTP 200."""
    return {"status": 200, "body": {"status": 0, "msg": msg, "data": data}}


def rest(ctx, method, url, body=None):
    """restTemplate.exchange: the callee's `Response` body, or a Java exception."""
    try:
        answer = ctx.http(method, url, body)
    except ctx.HttpError as err:
        raise JavaError(err.message) from None
    status = answer["status"]
    if status >= 500:
        raise JavaError("org.springframework.web.client.HttpServerErrorException: " + str(status) + " null")
    if status >= 400:
        raise JavaError("org.springframework.web.client.HttpClientErrorException: " + str(status) + " null")
    body = answer["body"]
    return body if hasattr(body, "get") else {"status": 0, "msg": "", "data": None}


def relay(ctx, method, url, body=None):
    """A controller that returns the callee's `Response` as its own (HTTP 200)."""
    return {"status": 200, "body": rest(ctx, method, url, body)}


def data(ctx, method, url, body=None):
    return rest(ctx, method, url, body).get("data")


def setting(ctx, variable, default):
    """A Spring Boot property: the environment variable relaxed binding maps onto it
    (`spring.data.mongodb.host` <- SPRING_DATA_MONGODB_HOST) when the Deployment sets it, else the
    value in the service's application.yml (Spring Boot 1.5 reference, "Externalized
    Configuration": OS environment variables rank above application.yml)."""
    value = ctx.env(variable)
    return default if value is None else value


def repo(ctx, host, name):
    """A Spring Data repository's collection. `host` is the service's application.yml
    `spring.data.mongodb.host` (e.g. FudanSELab/train-ticket
    ts-station-service/src/main/resources/application.yml: host ts-station-mongo, port 27017,
    database ts; every Mongo-backed service's file has the same shape with its own host); the
    Deployment's environment overrides each of the three."""
    address = setting(ctx, "SPRING_DATA_MONGODB_HOST", host) + ":" + setting(ctx, "SPRING_DATA_MONGODB_PORT", "27017")
    return ctx.mongo(address).collection(setting(ctx, "SPRING_DATA_MONGODB_DATABASE", "ts"), name)


def mongo_op(ctx, op, *args):
    """One repository call; a driver failure leaves as Spring's translated exception."""
    try:
        return op(*args)
    except ctx.MongoError as err:
        raise JavaError(err.message) from None


def find(ctx, coll, flt=None):
    return [strip(d) for d in mongo_op(ctx, coll.find, flt or {})]


def find_one(ctx, coll, flt):
    return strip(mongo_op(ctx, coll.find_one, flt))


def save(ctx, coll, doc):
    """CrudRepository.save: an upsert on the document's id."""
    mongo_op(ctx, coll.update_one, {"_id": doc["id"]}, {"$set": doc}, True)
    return doc


def strip(doc):
    """The entity Spring Data maps a document to: its fields without Mongo's `_id`."""
    if doc is None:
        return None
    # one copy in C, then the key dropped: the same fields in the same order as a comprehension
    # over the document, without a guarded step per field (every search strips each sold ticket)
    entity = dict(doc)
    entity.pop("_id", None)
    return entity


def fold(total, text):
    """The running hash `draw` and `uuid` take of a request id and a salt."""
    for ch in text:
        total = (total * 31 + ord(ch)) % 1000003
    return total


def draw(ctx, salt, low, high):
    """A number in [low, high] from the request id (what upstream draws with java.util.Random)."""
    return low + fold(0, str(ctx.request_id) + salt) % (high - low + 1)


def uuid(ctx, salt):
    """UUID.randomUUID(), derived from the request id: 32 of `draw`'s numbers, the hash of the
    request id they all start with taken once."""
    prefix = fold(0, str(ctx.request_id))
    digits = "0123456789abcdef"
    text = ""
    for i in range(32):
        text += digits[fold(prefix, salt + str(i)) % 16]
    return text[:8] + "-" + text[8:12] + "-4" + text[13:16] + "-a" + text[17:20] + "-" + text[20:]
