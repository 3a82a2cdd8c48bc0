"""Bytes that are not UTF-8 (SPEC-3).

A command's arguments and environment values are bytes (file names often are
not UTF-8); a record is UTF-8 text (REC-1). An element of ``argv`` and a value
of ``env`` is a string when its bytes are valid UTF-8 and otherwise
``{"base64": ...}``: canonical padded base64 of bytes that hold no NUL and
are not valid UTF-8, one form per value. Python hands such bytes around as
str with surrogate escapes (``sys.argv``, ``os.environ``, ``os.getcwd()``:
PEP 383) or as bytes; both are carried exactly, never as U+FFFD.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Dict, Optional, Union

#: An argument or environment value as a record holds it.
RecordText = Union[str, Dict[str, str]]


def text_of_bytes(data: bytes) -> RecordText:
    """The record's form of ``data``: the string when it is UTF-8, else the base64 form."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def text_of(value: Union[str, bytes], what: str) -> RecordText:
    """A producer's argument or value (str, surrogate escapes kept, or bytes) in the record's form; USAGE for what has no bytes."""
    if isinstance(value, (bytes, bytearray)):
        return text_of_bytes(bytes(value))
    if isinstance(value, dict):
        return value  # already the record's form; the request schema checks it
    if not isinstance(value, str):
        raise _refusal(f"{what} must be a string or bytes, not {type(value).__name__}")
    try:
        return text_of_bytes(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise _refusal(f"{what} holds a lone surrogate that stands for no byte, so it has no UTF-8 form") from None


def require_text(value: Optional[str], what: str) -> Optional[str]:
    """A value that must be text (a path, a key, a label): USAGE naming it when it holds bytes that are not UTF-8."""
    if value is None or not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace") if _escapes_only(value) else ascii(value)
        raise _refusal(f"{what} is not valid UTF-8 ({shown}): only a job's command and env values may hold other bytes") from None
    return value


def bytes_of_text(text: Any) -> bytes:
    """The exact bytes an argument or environment value of a record stands for."""
    if isinstance(text, str):
        return text.encode("utf-8")
    return base64.b64decode(text["base64"], validate=True)


def non_utf8_base64_problem(text: str, limit: int) -> Optional[str]:
    """Why ``text`` is not the base64 form SPEC-3 allows for at most ``limit`` bytes (the schemas' nonUtf8Base64), or None."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return "is not padded base64 (RFC 4648)"
    if base64.b64encode(data).decode("ascii") != text:
        return "is not canonical padded base64 (RFC 4648)"
    if len(data) > limit:
        return f"decodes to {len(data)} bytes, over the bound of {limit}"
    if b"\0" in data:
        return "decodes to bytes that hold a NUL"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "decodes to valid UTF-8, which a record holds as a string"


def _escapes_only(value: str) -> bool:
    try:
        value.encode("utf-8", "surrogateescape")
        return True
    except UnicodeEncodeError:
        return False


def _refusal(message: str) -> Exception:
    from .errors import FsjobError

    return FsjobError("USAGE", f"{message} (SPEC-3)", clause="SPEC-3")
