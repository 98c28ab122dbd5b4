"""Times, durations, sample values and errors as the Prometheus HTTP API writes and reads them.

The twin's clock counts virtual seconds from the run start (negative during warm-up). Real
clients want unix timestamps, so the API maps virtual time t to the unix time
`TWIN_EPOCH_UNIX + t`: a fixed base (2026-01-01T00:00:00Z), the same for every run, so a time
printed by `promtool` can be turned back into the virtual time of a bundle by subtracting it.

References (upstream prometheus/prometheus): request parsing follows `parseTime` and
`parseDuration` of web/api/v1/api.go (a float of unix seconds or RFC3339; float seconds or a
Prometheus duration string), value text follows `MarshalFloat`/`MarshalTimestamp` of
util/jsonutil/marshal.go, error types and HTTP codes follow `errorType` and
`getDefaultErrorCode` of web/api/v1/api.go.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal

import promql_parser as pp

TWIN_EPOCH_UNIX = 1_767_225_600  # 2026-01-01T00:00:00Z: unix time of the twin's t = 0

# web/api/v1/api.go: MinTime/MaxTime, the defaults of `start`/`end` on metadata endpoints.
MIN_TIME = -math.inf
MAX_TIME = math.inf

# errorType -> HTTP status (web/api/v1/api.go getDefaultErrorCode)
STATUS_OF = {"bad_data": 400, "execution": 422, "timeout": 503, "canceled": 499, "internal": 500}


class ApiError(Exception):
    """An answer of the form {"status":"error","errorType":..., "error":...}."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message

    @property
    def status(self) -> int:
        return STATUS_OF[self.error_type]


def invalid_param(name: str, message: str) -> ApiError:
    """web/api/v1/api.go invalidParamError: `invalid parameter "<name>": <err>`."""
    return ApiError("bad_data", f'invalid parameter "{name}": {message}')


def to_unix(t: float) -> float:
    return round(TWIN_EPOCH_UNIX + t, 3)


def to_virtual(unix: float) -> float:
    return round(unix - TWIN_EPOCH_UNIX, 3)


def parse_time(text: str) -> float:
    """A request time (unix seconds as a float, or RFC3339) as virtual time; Prometheus keeps
    millisecond precision, so do we."""
    try:
        unix = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(unix):
            raise ValueError(f'cannot parse "{text}" to a valid timestamp')
        return to_virtual(unix)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f'cannot parse "{text}" to a valid timestamp') from None
    if moment.tzinfo is None or text[10:11] not in ("T", "t"):  # RFC3339, not any ISO 8601
        raise ValueError(f'cannot parse "{text}" to a valid timestamp')
    return to_virtual(moment.timestamp())


def parse_duration(text: str) -> float:
    """A request duration in seconds: float seconds or a Prometheus duration ("1m30s")."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            return pp.parse_duration(text).total_seconds()
        except (ValueError, TypeError):
            raise ValueError(f'cannot parse "{text}" to a valid duration') from None
    if not math.isfinite(seconds):
        raise ValueError(f'cannot parse "{text}" to a valid duration')
    return seconds


def timestamp(t: float) -> int | float:
    """A point's time in a result: unix seconds, millisecond precision, no trailing `.0`."""
    unix = to_unix(t)
    return int(unix) if unix == int(unix) else unix


def rfc3339(t: float) -> str:
    """A time field such as `activeAt` (Go's time.Time JSON form, UTC)."""
    moment = datetime.fromtimestamp(to_unix(t), tz=UTC)
    text = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")


def sample_value(value: float) -> str:
    """A sample value as Prometheus writes it: "NaN", "+Inf", "-Inf", else Go's shortest
    decimal ('f' format) between 1e-6 and 1e21 and the exponent form outside."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        return go_exponent(value)
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def go_exponent(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'e', -1, 64): shortest digits, two-digit exponent at least
    (the form of an alert's `value`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1 if any(digits) else 0
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
