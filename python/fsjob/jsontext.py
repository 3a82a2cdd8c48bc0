"""The byte form of records (REC-1, REC-10) and requests (REQ-1, REQ-2).

Reading is a scan of the text, token by token, never a comparison of
``json.dumps(json.loads(x))`` with ``x`` (REC-10 forbids that: it would
reject ``1e5`` in a payload and silently keep the last of two duplicate
members). The scanner checks the grammar, compact form and duplicate names
in one pass and builds the value as it goes. Failures are reported in the
order the reference reports them: empty, not UTF-8, byte order mark, not
JSON (or nested too deep), trailing data, no final line feed, not an
object, duplicate member names, not compact.

Writing is ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``,
which REC-1 names as one of the serializers that produce compact form, after
a walk that refuses what has no compact form.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

from .constants import NEST_MAX, RECORD_MAX
from .errors import FsjobError

JsonValue = Any
JsonObject = Dict[str, Any]

#: Top-level members whose values are free JSON: the only place a number may have a fraction or exponent.
FREE_JSON_MEMBERS = frozenset(("payload", "result"))

_WS = re.compile(r"[ \t\n\r]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_PLAIN_INTEGER = re.compile(r"(?:0|-?[1-9][0-9]*)\Z")
# A string body without escapes or control characters, then either the closing quote or something else.
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HAS_SHORT_ESCAPE = frozenset((0x08, 0x09, 0x0A, 0x0C, 0x0D))


class ParseFailure(NamedTuple):
    """Why bytes are not a record (or request): a finding code, what, where."""

    code: str
    detail: str
    offset: int
    field: Optional[str] = None


class _Stop(Exception):
    def __init__(self, code: str, detail: str, at: int) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.at = at


def json_pointer(segments: List[Union[str, int]]) -> str:
    """RFC 6901 pointer of a member path ("~" is "~0", "/" is "~1")."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in segments)


class RawJson:
    """A payload kept as written (REQ-2): its compact text, and the value Python makes of it.

    A producer copies a request's payload into the spec number for number
    (``1e400``, ``1.50`` and ``-0`` stay so), which a Python value cannot
    always carry (``float("1e400")`` is infinite, ``json.dumps`` writes 1e5 as
    100000.0). :func:`serialize_record` writes ``text``; anything else uses
    ``value``.
    """

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: JsonValue) -> None:
        self.text = text
        self.value = value


def parse_payload_text(text: str) -> Union[RawJson, str]:
    """A payload given as JSON text (the CLI's --payload), kept as written (REQ-2); a string saying what is wrong when it is not one JSON value."""
    parsed = parse_bytes(('{"payload":' + text + "\n}").encode("utf-8", "surrogatepass"), "request")
    if isinstance(parsed, ParseFailure):
        return parsed.detail
    payload = parsed["payload"]
    assert isinstance(payload, RawJson)
    return payload


def _compact_text(text: str) -> str:
    """Compact form (REC-1) of a valid JSON text: whitespace dropped, strings as json.dumps writes them, every other token as it stands."""
    out: List[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in " \t\n\r":
            i += 1
        elif c == '"':
            scanner = _Scanner(text, False)
            scanner.i = i
            out.append(json.dumps(scanner.string(), ensure_ascii=False))
            i = scanner.i
        else:
            j = i + 1
            while j < len(text) and text[j] not in ' \t\n\r"':
                j += 1
            out.append(text[i:j])
            i = j
    return "".join(out)


class _Scanner:
    """Recursive descent over a decoded text; depth is bounded by NEST_MAX, so recursion is too."""

    def __init__(self, text: str, compact: bool, keep_payload: bool = False) -> None:
        self.text = text
        self.compact = compact
        #: Keep the top-level payload as written (RawJson): a request's always (REQ-2), a record's when it is copied.
        self.keep_payload = keep_payload
        self.i = 0
        self.not_compact: Optional[Tuple[str, int, str]] = None
        self.duplicate: Optional[Tuple[str, int, str]] = None
        self.path: List[Union[str, int]] = []

    def note(self, detail: str, at: int) -> None:
        if self.compact and self.not_compact is None:
            self.not_compact = (detail, at, json_pointer(self.path))

    def fail(self, detail: str, at: Optional[int] = None) -> "_Stop":
        return _Stop("RECORD_BAD_JSON", detail, self.i if at is None else at)

    def skip_ws(self) -> None:
        match = _WS.match(self.text, self.i)
        if match is not None:
            self.note("whitespace outside strings", self.i)
            self.i = match.end()

    def value(self, depth: int) -> JsonValue:
        text = self.text
        if self.i >= len(text):
            raise self.fail("the text ends where a value should start")
        c = text[self.i]
        if c == "{":
            return self.object(depth + 1)
        if c == "[":
            return self.array(depth + 1)
        if c == '"':
            return self.string()
        if c == "t":
            return self.literal("true", True)
        if c == "f":
            return self.literal("false", False)
        if c == "n":
            return self.literal("null", None)
        if c == "-" or "0" <= c <= "9":
            return self.number()
        raise self.fail(f"unexpected character {json.dumps(c)} where a value should start")

    def literal(self, word: str, value: JsonValue) -> JsonValue:
        if not self.text.startswith(word, self.i):
            raise self.fail(f"invalid literal (expected {word})")
        self.i += len(word)
        return value

    def number(self) -> Union[int, float]:
        match = _NUMBER.match(self.text, self.i)
        if match is None:
            raise self.fail("invalid number")
        token = match.group(0)
        at = self.i
        self.i = match.end()
        top = self.path[0] if self.path else None
        free = isinstance(top, str) and top in FREE_JSON_MEMBERS
        plain = _PLAIN_INTEGER.match(token) is not None
        if not free and not plain:
            if not self.compact:
                # REQ-2 (1.1): outside payload a request writes integers as records do: 1.0, 6e5 and -0
                # are refused although JSON Schema calls their values integers.
                raise self.fail(f"number {token} is not an integer as records write it (REQ-2: no fraction, exponent or -0 outside payload)", at)
            self.note(f"number {token} is not a plain integer (no fraction, exponent or -0 outside payload and result)", at)
        if plain:
            return int(token)
        return float(token)

    def string(self) -> str:
        text = self.text
        opened = self.i
        self.i += 1
        parts: List[str] = []
        while True:
            run = _STRING_RUN.match(text, self.i)
            end = run.end() if run is not None else self.i
            if end > self.i:
                parts.append(text[self.i:end])
                self.i = end
            if self.i >= len(text):
                raise self.fail("unterminated string", opened)
            c = text[self.i]
            if c == '"':
                self.i += 1
                return "".join(parts)
            if c != "\\":
                raise self.fail("unescaped control character in a string")
            at = self.i
            if at + 1 >= len(text):
                raise self.fail("unterminated escape", at)
            e = text[at + 1]
            if e == "u":
                parts.append(self.unicode_escape(at))
                continue
            replacement = _SHORT_ESCAPES.get(e)
            if replacement is None:
                raise self.fail(f"invalid escape \\{e}", at)
            if e == "/":
                self.note('escape \\/ (write "/" unescaped)', at)
            parts.append(replacement)
            self.i = at + 2

    def hex4(self, at: int) -> int:
        if _HEX4.fullmatch(self.text, at + 2, at + 6) is None:
            raise self.fail("invalid \\u escape", at)
        return int(self.text[at + 2:at + 6], 16)

    def unicode_escape(self, at: int) -> str:
        code = self.hex4(at)
        digits = self.text[at + 2:at + 6]
        self.i = at + 6
        if 0xD800 <= code <= 0xDBFF and self.text.startswith("\\u", self.i):
            low = self.hex4(self.i)
            if 0xDC00 <= low <= 0xDFFF:
                self.note("\\u escape of a character outside U+0000..U+001F (write it as UTF-8)", at)
                self.i += 6
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
        if 0xD800 <= code <= 0xDFFF:
            raise self.fail("\\u escape of a lone surrogate", at)
        if code >= 0x20:
            self.note("\\u escape of a character outside U+0000..U+001F (write it as UTF-8)", at)
        elif code in _HAS_SHORT_ESCAPE:
            self.note(f"\\u{digits} where a short escape (\\b \\t \\n \\f \\r) exists", at)
        elif digits != digits.lower():
            self.note(f"\\u{digits} with uppercase hex digits", at)
        return chr(code)

    def enter(self, depth: int) -> None:
        if depth > NEST_MAX:
            raise _Stop("RECORD_TOO_DEEP", f"arrays and objects nest deeper than {NEST_MAX}", self.i)
        self.i += 1

    def array(self, depth: int) -> List[JsonValue]:
        self.enter(depth)
        out: List[JsonValue] = []
        self.skip_ws()
        if self.text.startswith("]", self.i):
            self.i += 1
            return out
        while True:
            self.path.append(len(out))
            out.append(self.value(depth))
            self.path.pop()
            self.skip_ws()
            c = self.text[self.i:self.i + 1]
            self.i += 1
            if c == "]":
                return out
            if c != ",":
                raise self.fail('expected "," or "]" in an array', self.i - 1)
            self.skip_ws()

    def object(self, depth: int) -> JsonObject:
        self.enter(depth)
        out: JsonObject = {}
        self.skip_ws()
        if self.text.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            if not self.text.startswith('"', self.i):
                raise self.fail("expected a member name in double quotes")
            at = self.i
            key = self.string()
            self.path.append(key)
            if key in out and self.duplicate is None:
                self.duplicate = (f"member name {json.dumps(key, ensure_ascii=False)} appears twice in one object", at, json_pointer(self.path))
            self.skip_ws()
            if not self.text.startswith(":", self.i):
                raise self.fail('expected ":" after a member name')
            self.i += 1
            self.skip_ws()
            start = self.i
            value = self.value(depth)
            if depth == 1 and key == "payload" and self.keep_payload:
                written = self.text[start:self.i]
                value = RawJson(written if self.compact else _compact_text(written), value)
            if key not in out:
                out[key] = value
            else:
                # The last one wins, as JSON.parse keeps it; the duplicate is reported anyway.
                del out[key]
                out[key] = value
            self.path.pop()
            self.skip_ws()
            c = self.text[self.i:self.i + 1]
            self.i += 1
            if c == "}":
                return out
            if c != ",":
                raise self.fail('expected "," or "}" in an object', self.i - 1)
            self.skip_ws()


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8", "surrogatepass"))


def parse_bytes(data: bytes, form: str = "record", keep_payload: bool = False) -> Union[JsonObject, ParseFailure]:
    """Parse the bytes of a record (REC-1), or of a request with ``form="request"`` (REQ-1).

    Returns the object, or a :class:`ParseFailure`; never raises for bad input.
    """
    if len(data) == 0:
        return ParseFailure("RECORD_EMPTY", "the file is empty", 0)
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError as error:
        return ParseFailure("RECORD_BAD_UTF8", "the bytes are not valid UTF-8", error.start)
    if text.startswith("\ufeff"):
        return ParseFailure("RECORD_BOM", "the file starts with a byte order mark", 0)
    compact = form == "record"
    scanner = _Scanner(text, compact, not compact or keep_payload)
    try:
        scanner.skip_ws()
        value = scanner.value(0)
    except _Stop as stop:
        return ParseFailure(stop.code, stop.detail, _byte_offset(text, stop.at))
    end = scanner.i
    rest = text[end:]
    trimmed = rest.lstrip(" \t\r\n")
    if trimmed != "":
        at = end + (len(rest) - len(trimmed))
        return ParseFailure("RECORD_TRAILING_DATA", "there is more after the JSON value", _byte_offset(text, at))
    if compact:
        if not rest.endswith("\n"):
            return ParseFailure("RECORD_NO_FINAL_LF", "the record does not end with a line feed", len(data))
        if len(rest) >= 2 and rest.strip("\n") == "":
            return ParseFailure("RECORD_TRAILING_DATA", "there is more than one line feed after the JSON object", _byte_offset(text, end + 1))
        if rest != "\n" and scanner.not_compact is None:
            scanner.not_compact = ("whitespace after the JSON object", end, "")
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else "null" if value is None else f"a {type(value).__name__}"
        return ParseFailure("RECORD_NOT_OBJECT", f"the JSON value is {kind}, not an object", 0)
    if scanner.duplicate is not None:
        detail, at, field = scanner.duplicate
        return ParseFailure("RECORD_DUPLICATE_KEY", detail, _byte_offset(text, at), field)
    if scanner.not_compact is not None:
        detail, at, field = scanner.not_compact
        return ParseFailure("RECORD_NOT_COMPACT", f"not compact: {detail}", _byte_offset(text, at), field)
    return value


def _invalid(message: str, path: List[Union[str, int]]) -> FsjobError:
    where = "the record" if not path else json_pointer(path)
    return FsjobError("INVALID_RECORD", f"cannot serialize {where}: {message}", clause="REC-1")


def _check_serializable(value: JsonValue, path: List[Union[str, int]], depth: int, free: bool) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, RawJson):
        if not free:
            raise _invalid("only payload and result are kept as written", path)
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _invalid("string holds a lone surrogate, which UTF-8 cannot encode", path) from None
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _invalid(f"{value} is not a JSON number", path)
        if not free:
            raise _invalid(f"{value} is not an integer; numbers outside payload and result are integers", path)
        return
    if depth >= NEST_MAX:
        raise _invalid(f"arrays and objects nest deeper than {NEST_MAX}", path)
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_serializable(item, path + [index], depth + 1, free)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _invalid("member names are strings", path)
            _check_serializable(key, path + [key], depth + 1, free)
            _check_serializable(item, path + [key], depth + 1, free or (depth == 0 and key in FREE_JSON_MEMBERS))
        return
    raise _invalid(f"a {type(value).__name__} is not a JSON value", path)


def dumps_compact(value: JsonValue) -> str:
    """Compact JSON text of a value (REC-1), without the final line feed; a RawJson is written as its text (REQ-2)."""
    texts: List[str] = []

    def raw(item: object) -> str:
        if not isinstance(item, RawJson):
            raise TypeError(f"a {type(item).__name__} is not a JSON value")
        texts.append(item.text)
        return f"\x00{nonce}:{len(texts) - 1}"

    nonce = secrets.token_hex(12)
    out = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=raw)
    if not texts:
        return out
    return re.sub('"\\\\u0000' + nonce + ':([0-9]+)"', lambda match: texts[int(match.group(1))], out)


def serialize_record(value: JsonObject) -> bytes:
    """The bytes of a record: compact JSON and one line feed (REC-1).

    Raises INVALID_RECORD for what has no compact form and TOO_LARGE over
    RECORD_MAX (REC-2). It does not check the schema (see records.encode_record).
    """
    if not isinstance(value, dict):
        raise FsjobError("INVALID_RECORD", "cannot serialize: a record is a JSON object", clause="REC-1")
    _check_serializable(value, [], 0, False)
    data = (dumps_compact(value) + "\n").encode("utf-8")
    if len(data) > RECORD_MAX:
        raise FsjobError("TOO_LARGE", f"the record is {len(data)} bytes, over RECORD_MAX ({RECORD_MAX})", clause="REC-2")
    return data


def compact_size(value: JsonValue) -> int:
    """Bytes of the compact serialization of a value (the schemas' maxJsonBytes)."""
    return len(dumps_compact(value).encode("utf-8", "surrogatepass"))
