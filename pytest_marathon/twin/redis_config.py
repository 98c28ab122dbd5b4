"""How the two ends of the cart store read their redis settings.

The twin's redis-cart requires a password, which upstream Online Boutique does not (its
release/kubernetes-manifests.yaml starts `redis:alpine` with no arguments). To keep the
credential faults honest the twin configures both ends the only way the real programs would
accept it (docs/fidelity.md, "Manifests", a deliberate extension):

- the server is started with `--requirepass <password>` on its command line (redis accepts every
  redis.conf directive as a `--name value` argument, redis `src/config.c`; the redis image's
  docker-entrypoint.sh passes arguments that start with `-` to redis-server);
- cartservice reads only `REDIS_ADDR` (microservices-demo src/cartservice/src/Startup.cs hands it
  to AddStackExchangeRedisCache as `options.Configuration`), so the password travels inside
  that StackExchange.Redis configuration string: comma-separated endpoints and `name=value`
  options, `password=` among them (StackExchange.Redis docs/Configuration.md). An empty
  password sends no AUTH.
"""

from __future__ import annotations

from collections.abc import Sequence


def requirepass(args: Sequence[str]) -> str | None:
    """The password a redis-server started with `args` requires (the last `--requirepass` wins,
    as later directives override earlier ones); None when it requires none."""
    password: str | None = None
    for i, arg in enumerate(args):
        if arg == "--requirepass" and i + 1 < len(args):
            password = args[i + 1]
    return password or None


def parse_configuration(text: str) -> tuple[str, str | None]:
    """(first endpoint, password) of a StackExchange.Redis configuration string such as
    `redis-cart:6379,password=secret`; the endpoint is '' when the string names none."""
    endpoint = ""
    password: str | None = None
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        if sep:
            if name.strip().lower() == "password":
                password = value
            continue
        endpoint = endpoint or part
    return endpoint, (password or None)
