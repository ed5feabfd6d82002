#!/usr/bin/env python3
"""Reference implementation of the temporal-idempotency key, format 1 (docs/key-spec.md).

Standard library only. It computes the canonical text of activity arguments, the key, the
fingerprint and the key's UUID exactly as the TypeScript library does, from the payloads an
activity receives (or from typed values, for what a TypeScript keyArgs can return).

JavaScript reads every JSON number as an IEEE double and strings as UTF-16; Python's json module
does neither (it keeps big integers exact, sorts and compares strings by code point, and recurses
on nesting). So this module parses JSON text itself, with JSON.parse's rules.

    python3 spec/python/temporal_idempotency_key.py check test/vectors/keys.json
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import sys
import uuid
from typing import Any, Dict, List, Optional, Tuple, Union

KEY_FORMAT_VERSION = 1
KEY_UUID_NAMESPACE = uuid.UUID("6f1c2b9e-3d4a-5b7c-8e9f-0a1b2c3d4e5f")


# ------------------------------------------------------------------ values JSON cannot carry


class _Undefined:
    """JavaScript's undefined: a binary/null payload, a hole, or what keyArgs returned."""

    _instance: Optional["_Undefined"] = None

    def __new__(cls) -> "_Undefined":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED = _Undefined()


class JSDate:
    """A JavaScript Date by its time value (milliseconds since the epoch), None when invalid."""

    MAX_TIME = 8.64e15

    def __init__(self, time: Optional[float]) -> None:
        if time is None or not math.isfinite(time) or abs(time) > self.MAX_TIME:
            self.time: Optional[int] = None
        else:
            self.time = int(math.trunc(time))

    def iso(self) -> str:
        """Date.prototype.toISOString: years outside 0..9999 have a sign and six digits."""
        assert self.time is not None
        days, ms = divmod(self.time, 86_400_000)
        year, month, day = _civil_from_days(days)
        if 0 <= year <= 9999:
            year_text = "%04d" % year
        else:
            year_text = ("+" if year > 0 else "-") + "%06d" % abs(year)
        hours, ms = divmod(ms, 3_600_000)
        minutes, ms = divmod(ms, 60_000)
        seconds, ms = divmod(ms, 1000)
        return "%s-%02d-%02dT%02d:%02d:%02d.%03dZ" % (year_text, month, day, hours, minutes, seconds, ms)


def _civil_from_days(days: int) -> Tuple[int, int, int]:
    """The proleptic Gregorian date of a day number (0 is 1970-01-01), for any year: datetime stops at 9999."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


class InvalidKeyInput(Exception):
    """The arguments have no canonical form; `path` names the bad value as the library does (args[1].to)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} is unsupported: {reason}")
        self.path = path
        self.reason = reason


# ------------------------------------------------------------------ JSON text, read as JSON.parse reads it

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_PLAIN_CHARS = re.compile(r'[^"\\\x00-\x1f]*')
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def utf16_normalized(text: str) -> str:
    """The string with adjacent surrogate halves joined into one character, lone ones kept: the JS string as Python holds it."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def parse_json(text: str) -> Any:
    """JSON.parse: numbers are doubles, a repeated key keeps its first place and its last value,
    escapes may leave lone surrogates, and nesting has no limit (no recursion)."""
    pos = 0
    # Each open container: [list] or [dict, pending key]; the value just read goes into the top one.
    stack: List[List[Any]] = []
    result: Any = None
    have_result = False

    def fail(what: str) -> ValueError:
        return ValueError(f"invalid JSON at offset {pos}: {what}")

    def skip() -> None:
        nonlocal pos
        pos = _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]

    def read_string() -> str:
        nonlocal pos
        pos += 1  # the opening quote
        parts: List[str] = []
        while True:
            plain = _PLAIN_CHARS.match(text, pos)
            assert plain is not None
            parts.append(plain.group())
            pos = plain.end()
            if pos >= len(text):
                raise fail("unterminated string")
            char = text[pos]
            if char == '"':
                pos += 1
                return utf16_normalized("".join(parts))
            if char != "\\":
                raise fail("control character in string")
            escape = text[pos + 1 : pos + 2]
            if escape in _SHORT_ESCAPES:
                parts.append(_SHORT_ESCAPES[escape])
                pos += 2
            elif escape == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[pos + 2 : pos + 6]):
                parts.append(chr(int(text[pos + 2 : pos + 6], 16)))
                pos += 6
            else:
                raise fail("bad escape")

    def read_key() -> str:
        """An object's key and the ':' after it, from the key's opening quote."""
        nonlocal pos
        if text[pos : pos + 1] != '"':
            raise fail("expected a key")
        key = read_string()
        skip()
        if text[pos : pos + 1] != ":":
            raise fail("expected ':'")
        pos += 1
        return key

    while True:
        skip()
        if pos >= len(text):
            raise fail("unexpected end")
        char = text[pos]
        # Read one value, or open a container.
        if char == "{" or char == "[":
            pos += 1
            skip()
            container: Any = {} if char == "{" else []
            closer = "}" if char == "{" else "]"
            if pos < len(text) and text[pos] == closer:
                pos += 1
                value: Any = container
            else:
                frame: List[Any] = [container, None]
                stack.append(frame)
                if char == "{":
                    frame[1] = read_key()
                continue
        elif char == '"':
            value = read_string()
        elif text.startswith("true", pos):
            value, pos = True, pos + 4
        elif text.startswith("false", pos):
            value, pos = False, pos + 5
        elif text.startswith("null", pos):
            value, pos = None, pos + 4
        else:
            number = _NUMBER.match(text, pos)
            if number is None:
                raise fail("unexpected character")
            # float() rounds the decimal to the nearest double, as JSON.parse does; beyond the range it is inf.
            value, pos = float(number.group()), number.end()
        # Place the value, then close every container the text closes after it.
        while True:
            if not stack:
                result, have_result = value, True
                break
            frame = stack[-1]
            if isinstance(frame[0], dict):
                frame[0][frame[1]] = value
            else:
                frame[0].append(value)
            skip()
            closer = "}" if isinstance(frame[0], dict) else "]"
            if text[pos : pos + 1] == ",":
                pos += 1
                if isinstance(frame[0], dict):
                    skip()
                    frame[1] = read_key()
                break
            if text[pos : pos + 1] != closer:
                raise fail(f"expected ',' or '{closer}'")
            pos += 1
            value = stack.pop()[0]
        if have_result:
            skip()
            if pos != len(text):
                raise fail("text after the value")
            return result


# ------------------------------------------------------------------ the canonical text


def js_number(value: float) -> str:
    """Number.prototype.toString for a finite double: the shortest digits that read back as the
    same double (Python's repr finds them too), laid out by ECMA-262 Number::toString."""
    if value == 0:
        return "0"  # and -0
    sign = "-" if value < 0 else ""
    mantissa, _, exponent_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The point sits after `n` digits: value = 0.digits × 10^n.
    n = len(whole) + (int(exponent_text) if exponent_text else 0) - ((len(whole + fraction) - len(digits)))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        exponent = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if exponent >= 0 else "-") + str(abs(exponent))
    return sign + text


def js_string(text: str) -> str:
    """JSON.stringify of a string: quotes, backslash and controls escaped, lone surrogates as lowercase \\u escapes, the rest raw."""
    out = ['"']
    for char in utf16_normalized(text):
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
_MAX_ARRAY_INDEX = 2**32 - 2
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.fullmatch(key) is not None and int(key) <= _MAX_ARRAY_INDEX


def _utf16_units(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def sorted_keys(keys: List[str]) -> List[str]:
    """Array-index names ("0".."4294967294", no leading zero) first, numerically; then the rest by UTF-16 code units."""
    index_keys = sorted((key for key in keys if _is_array_index(key)), key=int)
    other_keys = sorted((key for key in keys if not _is_array_index(key)), key=_utf16_units)
    return index_keys + other_keys


def _key_text(key: str) -> str:
    return js_string("$" + key if key.startswith("$") else key)


# A path is the root's name, or (parent path, step, place among the object's written keys).
Path = Union[str, Tuple[Any, Union[str, int], int]]


def _path_text(path: Path) -> str:
    steps = []
    while not isinstance(path, str):
        path, step, position = path
        steps.append((step, position))
    text = path
    for step, position in reversed(steps):
        if isinstance(step, int):
            text += f"[{step}]"
        elif _IDENTIFIER.fullmatch(step):
            text += f".{step}"
        else:
            text += f"[key #{position}]"
    return text


def _as_double(value: Union[int, float]) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def canonical_text(value: Any, root: str = "args") -> str:
    """The canonical text of a value: None, bool, float (an int is read as the double JS would read),
    str, list, dict, bytes, JSDate, UNDEFINED. Raises InvalidKeyInput naming the path."""
    out: List[str] = []
    work: List[Any] = [(value, root)]
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        value, path = item
        if value is UNDEFINED:
            out.append('{"$undefined":true}')
        elif value is None:
            out.append("null")
        elif value is True or value is False:
            out.append("true" if value else "false")
        elif isinstance(value, (int, float)):
            number = _as_double(value)
            if not math.isfinite(number):
                shown = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
                raise InvalidKeyInput(_path_text(path), f"{shown} is not a finite number and has no stable form")
            out.append(js_number(number))
        elif isinstance(value, str):
            out.append(js_string(value))
        elif isinstance(value, (bytes, bytearray)):
            out.append('{"$bytes":"%s"}' % base64.b64encode(bytes(value)).decode("ascii"))
        elif isinstance(value, JSDate):
            if value.time is None:
                raise InvalidKeyInput(_path_text(path), "an invalid Date has no stable form")
            out.append('{"$date":"%s"}' % value.iso())
        elif isinstance(value, list):
            out.append("[")
            work.append("]")
            for index in range(len(value) - 1, -1, -1):
                work.append((value[index], (path, index, 0)))
                if index > 0:
                    work.append(",")
        elif isinstance(value, dict):
            # An undefined property is an absent one, as after JSON transport.
            keys = sorted_keys([key for key, item in value.items() if item is not UNDEFINED])
            out.append("{")
            work.append("}")
            for index in range(len(keys) - 1, -1, -1):
                key = keys[index]
                work.append((value[key], (path, key, index + 1)))
                work.append(("," if index > 0 else "") + _key_text(key) + ":")
        else:
            raise InvalidKeyInput(_path_text(path), f"values of type {type(value).__name__} are not supported")
    return "".join(out)


# ------------------------------------------------------------------ inputs: payloads and typed values


def decode_payload(payload: Dict[str, Any]) -> Any:
    """What a TypeScript activity receives for a payload, by the default payload converter."""
    encoding = payload["encoding"]
    if encoding == "json/plain":
        return parse_json(payload["data"])
    if encoding == "binary/plain":
        return base64.b64decode(payload["data"])
    if encoding == "binary/null":
        return UNDEFINED
    raise ValueError(f"the default payload converter has no encoding {encoding}")


def from_typed(typed: Dict[str, Any]) -> Any:
    """A typed value (what a TypeScript keyArgs returned) as this module's values."""
    if "json" in typed:
        return parse_json(typed["json"])
    if "undefined" in typed:
        return UNDEFINED
    if "bytes" in typed:
        return base64.b64decode(typed["bytes"])
    if "date" in typed:
        return JSDate(typed["date"])
    if "array" in typed:
        # A hole reads as undefined; properties beside the elements are not part of the array's text.
        return [UNDEFINED if "hole" in item else from_typed(item) for item in typed["array"]]
    if "object" in typed:
        record: Dict[str, Any] = {}
        for name, item in typed["object"]:
            record[utf16_normalized(name)] = from_typed(item)
        return record
    raise ValueError(f"not a typed value: {typed!r}")


def semantic_args(vector: Dict[str, Any]) -> Any:
    if "args" in vector:
        return [decode_payload(payload) for payload in vector["args"]]
    return from_typed(vector["semanticArgs"])


# ------------------------------------------------------------------ envelope, hashes, UUID


def scope_material(scope: str, call_site: Dict[str, str]) -> Dict[str, str]:
    """The part of the call site a scope keys on; an activity outside a workflow keys on its activity id."""
    workflow_id, run_id, activity_id = call_site.get("workflowId"), call_site.get("runId"), call_site["activityId"]
    if workflow_id is None or run_id is None:
        return {"scope": "standalone", "activityId": activity_id}
    if scope == "workflow":
        return {"scope": "workflow", "workflowId": workflow_id}
    if scope == "run":
        return {"scope": "run", "runId": run_id}
    if scope == "call":
        return {"scope": "call", "workflowId": workflow_id, "runId": run_id, "activityId": activity_id}
    raise ValueError(f"unknown scope {scope}")


def call_envelope(namespace: str, activity_type: str, material: Dict[str, str], args_text: str) -> str:
    return (
        '{"activityType":%s,"namespace":%s,"scopeMaterial":%s,"semanticArgs":%s,"v":%d}'
        % (js_string(activity_type), js_string(namespace), canonical_text(material, "scopeMaterial"), args_text, KEY_FORMAT_VERSION)
    )


def custom_envelope(namespace: str, activity_type: str, custom_key: str) -> str:
    return '{"activityType":%s,"custom":%s,"namespace":%s,"v":%d}' % (
        js_string(activity_type),
        js_string(custom_key),
        js_string(namespace),
        KEY_FORMAT_VERSION,
    )


def salted_hash(salt: bytes, purpose: str, text: str) -> str:
    """HMAC-SHA256 under the schema's key salt of the purpose, a NUL, and the text, all UTF-8; lowercase hex."""
    return hmac.new(salt, (purpose + "\0" + text).encode("utf-8"), hashlib.sha256).hexdigest()


def key_to_uuid(key: str) -> str:
    return str(uuid.uuid5(KEY_UUID_NAMESPACE, key))


def call_keys(salt: bytes, namespace: str, activity_type: str, scope: str, call_site: Dict[str, str], args: Any) -> Dict[str, str]:
    material = scope_material(scope, call_site)
    args_text = canonical_text(args)
    envelope = call_envelope(namespace, activity_type, material, args_text)
    key = salted_hash(salt, "key", envelope)
    return {
        "scopeMaterial": canonical_text(material, "scopeMaterial"),
        "canonicalArgs": args_text,
        "envelope": envelope,
        "key": key,
        "fingerprint": salted_hash(salt, "fingerprint", args_text),
        "uuid": key_to_uuid(key),
    }


def custom_keys(salt: bytes, namespace: str, activity_type: str, custom_key: str, args: Any) -> Dict[str, str]:
    args_text = canonical_text(args)
    envelope = custom_envelope(namespace, activity_type, custom_key)
    key = salted_hash(salt, "key", envelope)
    return {
        "canonicalArgs": args_text,
        "envelope": envelope,
        "key": key,
        "fingerprint": salted_hash(salt, "fingerprint", args_text),
        "uuid": key_to_uuid(key),
    }


# ------------------------------------------------------------------ checking the vectors


def computed_for(vector: Dict[str, Any]) -> Dict[str, Any]:
    """The expected part of a vector, computed from its inputs alone."""
    kind = vector["kind"]
    names = {field: utf16_normalized(vector[field]) for field in ("namespace", "activityType", "customKey") if field in vector}
    if kind == "refusal":
        try:
            canonical_text(semantic_args(vector))
        except InvalidKeyInput as refused:
            return {"refused": {"path": refused.path, "reason": refused.reason}}
        return {"refused": None}
    salt = bytes.fromhex(vector["salt"])
    if kind == "call":
        call_site = {field: utf16_normalized(value) for field, value in vector["callSite"].items()}
        return call_keys(salt, names["namespace"], names["activityType"], vector["scope"], call_site, semantic_args(vector))
    if kind == "custom":
        return custom_keys(salt, names["namespace"], names["activityType"], names["customKey"], semantic_args(vector))
    raise ValueError(f"unknown vector kind {kind}")


def check(path: str) -> int:
    with open(path, encoding="utf-8") as file:
        vectors_file = json.load(file)
    if vectors_file.get("keyFormatVersion") != KEY_FORMAT_VERSION:
        print(f"{path}: key format {vectors_file.get('keyFormatVersion')}, this reference implements {KEY_FORMAT_VERSION}", file=sys.stderr)
        return 2
    if vectors_file.get("uuidNamespace") != str(KEY_UUID_NAMESPACE):
        print(f"{path}: UUID namespace {vectors_file.get('uuidNamespace')}, this reference uses {KEY_UUID_NAMESPACE}", file=sys.stderr)
        return 2
    vectors = vectors_file["vectors"]
    for vector in vectors:
        try:
            computed = computed_for(vector)
        except (InvalidKeyInput, ValueError) as error:
            print(f'vector "{vector["name"]}": could not compute it: {error}', file=sys.stderr)
            return 1
        for field, expected in vector["expected"].items():
            if computed.get(field) != expected:
                print(f'vector "{vector["name"]}": {field} differs', file=sys.stderr)
                print(f"  expected: {json.dumps(expected, ensure_ascii=False)}", file=sys.stderr)
                print(f"  computed: {json.dumps(computed.get(field), ensure_ascii=False)}", file=sys.stderr)
                return 1
    print(f"checked {len(vectors)} vectors: all match")
    return 0


def main(argv: List[str]) -> int:
    # A lone surrogate in a message is shown as its escape rather than ending the run.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    if len(argv) != 3 or argv[1] != "check":
        print(f"usage: {argv[0]} check <vectors.json>", file=sys.stderr)
        return 2
    return check(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
