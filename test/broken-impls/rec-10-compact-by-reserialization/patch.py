# BROKEN (REC-10): compact form is judged by parsing a record and comparing
# a re-serialization with its bytes, so a payload number written 1e5 or 1.50
# (compact as it stands) makes the record invalid.
import json
import sys

from fsjob import jsontext

_parse = jsontext.parse_bytes


def _reserialized(data, form="record", keep_payload=False):
    value = _parse(data, form, keep_payload)
    if form == "record" and isinstance(value, dict):
        again = (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        if again != data:
            return jsontext.ParseFailure("RECORD_NOT_COMPACT", "not compact: a re-serialization differs from the bytes", 0)
    return value


jsontext.parse_bytes = _reserialized

from fsjob.cli import run  # noqa: E402

sys.exit(run(prog="fsjob-py (rec-10 variant)"))
