"""The subset of Prometheus' Go-template language that alert annotations use.

Supported inside `{{ … }}`: `$labels.name`, `$value`, `$externalLabels.name`, string and number
literals, the functions `humanize`, `humanizePercentage`, `humanizeDuration`, `printf`, `title`,
`toUpper`, `toLower`, and pipelines (`$value | humanize`). Output matches Go's formatting so the
same rule renders the same text here and in Prometheus (the promtool parity test checks it).
Anything else raises `TemplateError` naming the construct, at pack load time.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any


class TemplateError(ValueError):
    """An annotation or label template uses something outside the supported subset."""


_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)


def go_g(value: float, precision: int) -> str:
    """Go's fmt `%.<precision>g`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:.{precision}g}"


def go_value(value: float) -> str:
    """Go's `%v` of a float64 (what `{{ $value }}` prints): shortest round-trip digits, with
    an exponent when it is < -4 or >= 21."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    digits, exponent = _shortest_digits(value)
    sign = "-" if value < 0 else ""
    if exponent < -4 or exponent >= 21:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Significant digits of repr(value) and the decimal exponent of the first one."""
    mantissa, _, exp_text = f"{abs(value):.17e}".partition("e")
    shortest = repr(abs(value))
    if "e" in shortest:
        mantissa, _, exp_text = shortest.partition("e")
        digits = mantissa.replace(".", "")
        return digits.rstrip("0") or "0", int(exp_text)
    whole, _, fraction = shortest.partition(".")
    fraction = fraction.rstrip("0")
    if whole != "0":
        digits = (whole + fraction).rstrip("0")
        return digits, len(whole) - 1
    stripped = fraction.lstrip("0")
    return stripped, -(len(fraction) - len(stripped)) - 1


def humanize(value: float) -> str:
    if value == 0 or math.isnan(value) or math.isinf(value):
        return go_g(value, 4)
    if abs(value) >= 1:
        prefix = ""
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(value) < 1000:
                break
            prefix = p
            value /= 1000
        return go_g(value, 4) + prefix
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(value) >= 1:
            break
        prefix = p
        value *= 1000
    return go_g(value, 4) + prefix


def humanize_percentage(value: float) -> str:
    return go_g(value * 100, 4) + "%"


def humanize_duration(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return go_g(value, 4)
    if value == 0:
        return "0s"
    if abs(value) < 1:
        v = value
        for p in ("ms", "us", "ns"):
            v *= 1000
            if abs(v) >= 1:
                return go_g(v, 4) + p
        return go_g(v, 4) + "ns"
    sign = "-" if value < 0 else ""
    seconds = abs(value)
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    secs = seconds - days * 86400 - hours * 3600 - minutes * 60
    if days:
        return f"{sign}{days}d {hours}h {minutes}m {int(secs)}s"
    if hours:
        return f"{sign}{hours}h {minutes}m {int(secs)}s"
    if minutes:
        return f"{sign}{minutes}m {int(secs)}s"
    return f"{sign}{secs:.4g}s"


_PRINTF = re.compile(r"%([-+ #0]*)(\d+)?(?:\.(\d+))?([vdsfegqx%])")


def go_printf(fmt: str, *args: Any) -> str:
    """Go's Sprintf for the verbs templates use (%s %d %f %e %g %v %q %x %%)."""
    values = list(args)

    def convert(m: re.Match[str]) -> str:
        flags, width, precision, verb = m.groups()
        if verb == "%":
            return "%"
        if not values:
            return f"%!{verb}(MISSING)"
        arg = values.pop(0)
        spec = "%" + flags + (width or "") + (f".{precision}" if precision is not None else "")
        if verb == "v":
            return _pad(go_value(arg) if isinstance(arg, float) else str(arg), flags, width)
        if verb == "s":
            return _pad(go_value(arg) if isinstance(arg, float) else str(arg), flags, width)
        if verb == "q":
            return '"' + str(arg).replace("\\", "\\\\").replace('"', '\\"') + '"'
        if verb == "d":
            if isinstance(arg, float):
                return f"%!d(float64={go_value(arg)})"
            return (spec + "d") % int(arg)
        if isinstance(arg, str):
            return f"%!{verb}(string={arg})"
        number = float(arg)
        if math.isnan(number) or math.isinf(number):
            return _pad(go_g(number, 1), flags, width)
        return (spec + verb) % number

    return _PRINTF.sub(convert, fmt)


def _pad(text: str, flags: str, width: str | None) -> str:
    if not width:
        return text
    return text.ljust(int(width)) if "-" in flags else text.rjust(int(width))


_FUNCTIONS: dict[str, Callable[..., str]] = {
    "humanize": lambda v: humanize(_number(v)),
    "humanizePercentage": lambda v: humanize_percentage(_number(v)),
    "humanizeDuration": lambda v: humanize_duration(_number(v)),
    "printf": go_printf,
    "title": lambda s: str(s).title(),
    "toUpper": lambda s: str(s).upper(),
    "toLower": lambda s: str(s).lower(),
}


def _number(value: Any) -> float:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError as exc:
            raise TemplateError(f"cannot convert {value!r} to a number") from exc
    return float(value)


class Template:
    """A parsed template; `render` is cheap and repeated every evaluation."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._parts: list[str | list[list[str]]] = []
        pos = 0
        for m in _ACTION.finditer(text):
            self._parts.append(text[pos : m.start()])
            self._parts.append(self._parse_pipeline(m.group(1)))
            pos = m.end()
        tail = text[pos:]
        if "{{" in tail or "}}" in tail:
            raise TemplateError(f"unbalanced '{{{{' in template {text!r}")
        self._parts.append(tail)

    @staticmethod
    def _parse_pipeline(action: str) -> list[list[str]]:
        commands = []
        for command in _split_pipes(action):
            try:
                words = shlex.split(command, posix=False)
            except ValueError as exc:
                raise TemplateError(f"cannot parse template action {{{{ {action} }}}}: {exc}") from exc
            if not words:
                raise TemplateError(f"empty command in template action {{{{ {action} }}}}")
            for word in words:
                _check_word(word, action)
            commands.append(words)
        return commands

    def render(self, labels: Mapping[str, str], value: float) -> str:
        out = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            result: Any = None
            for i, words in enumerate(part):
                args = [_resolve(w, labels, value) for w in words[1:]]
                if i > 0:
                    args.append(result)
                head = words[0]
                if head in _FUNCTIONS:
                    result = _FUNCTIONS[head](*args)
                else:
                    result = _resolve(head, labels, value)
            out.append(go_value(result) if isinstance(result, float) else str(result))
        return "".join(out)


def _split_pipes(action: str) -> list[str]:
    parts, current, quote = [], [], None
    for ch in action:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "\"`":
            quote = ch
            current.append(ch)
        elif ch == "|":
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def _check_word(word: str, action: str) -> None:
    if word in _FUNCTIONS or word in ("$value", ".Value"):
        return
    if re.fullmatch(r"(\$labels|\.Labels|\$externalLabels)\.[A-Za-z_][A-Za-z0-9_]*", word):
        return
    if word[:1] in "\"`" and word[-1:] == word[:1] and len(word) >= 2:
        return
    if re.fullmatch(r"-?\d+(\.\d+)?", word):
        return
    raise TemplateError(f"unsupported template construct {word!r} in {{{{ {action} }}}}")


def _resolve(word: str, labels: Mapping[str, str], value: float) -> Any:
    if word in ("$value", ".Value"):
        return value
    if word.startswith(("$labels.", ".Labels.")):
        # $labels is a map[string]string in Prometheus: a missing label renders as "".
        return labels.get(word.split(".", 2)[-1] if word.startswith(".") else word[8:], "")
    if word.startswith("$externalLabels."):
        return ""
    if word[:1] in "\"`":
        return word[1:-1].replace('\\"', '"').replace("\\n", "\n")
    return float(word) if "." in word else int(word)
