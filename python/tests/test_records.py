"""The record layer against conformance/vectors (REC-4 order, finding codes) and the vendored schemas."""

from __future__ import annotations

import base64
import glob
import json
import os
import subprocess
import sys
import unittest
from typing import Any, Dict, List

from .support import PYTHON_DIR, REPO
from fsjob import jsontext
from fsjob._schemas import DOCUMENTS
from fsjob.names import record_name_of
from fsjob.records import encode_record, inspect_bytes
from fsjob.schema import check_schema_support
from fsjob.errors import FsjobError


def vector_bytes(case: dict) -> bytes:  # type: ignore[type-arg]
    if "raw" in case:
        return case["raw"].encode("utf-8", "surrogatepass")  # type: ignore[no-any-return]
    if "raw_base64" in case:
        return base64.b64decode(case["raw_base64"])
    return (json.dumps(case["data"], ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass")


class Vectors(unittest.TestCase):
    def test_every_vector_gets_its_verdict_and_its_first_finding(self) -> None:
        files = sorted(glob.glob(os.path.join(REPO, "conformance", "vectors", "*.json")))
        self.assertGreater(len(files), 5)
        count = 0
        for path in files:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            for case in document["tests"]:
                count += 1
                type_ = document["record_type"]
                expect = None
                if "file_name" in case:
                    expect = record_name_of(case["file_name"])
                    if expect is None:
                        self.assertFalse(case["valid"], f"{path}: {case['description']}: the name is no record")
                        continue
                    type_ = expect.type
                with self.subTest(file=os.path.basename(path), case=case["description"]):
                    result = inspect_bytes(type_, vector_bytes(case), case.get("file_name", "-"), expect)
                    self.assertEqual(result.ok, case["valid"], result.reason)
                    if not result.ok and "finding" in case:
                        first = [f for f in result.findings if f.severity == "error"][0]
                        self.assertEqual(first.code, case["finding"], result.reason)
        self.assertGreater(count, 400)


class Schemas(unittest.TestCase):
    def test_the_vendored_schemas_are_those_of_schemas(self) -> None:
        done = subprocess.run([sys.executable, os.path.join(PYTHON_DIR, "tools", "gen_schemas.py"), "--check"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_every_keyword_of_the_schemas_is_implemented(self) -> None:
        for name, document in DOCUMENTS.items():
            self.assertEqual(check_schema_support(document), [], name)


class CompactForm(unittest.TestCase):
    def parse(self, text: str, form: str = "record") -> object:
        return jsontext.parse_bytes(text.encode("utf-8"), form)

    def test_payload_numbers_keep_their_text_and_are_compact(self) -> None:
        for number in ("1e5", "-0", "1.50", "1E+2"):
            value = self.parse('{"payload":[' + number + ']}\n')
            self.assertIsInstance(value, dict, number)

    def test_numbers_outside_payload_are_plain_integers(self) -> None:
        for number in ("1.0", "6e5", "-0"):
            failure = self.parse('{"a":' + number + '}\n')
            self.assertIsInstance(failure, jsontext.ParseFailure)
            assert isinstance(failure, jsontext.ParseFailure)
            self.assertEqual(failure.code, "RECORD_NOT_COMPACT")

    def test_requests_refuse_fractions_and_keep_payload_numbers_as_written(self) -> None:
        for text in ('{"timeout_ms":1.0}', '{"timeout_ms":6e5}', '{"timeout_ms":1.5}', '{"timeout_ms":6.5e-1}', '{"timeout_ms":-0}'):
            self.assertIsInstance(self.parse(text, "request"), jsontext.ParseFailure, text)
        # REQ-2: a payload is copied as written, whatever value Python makes of it.
        parsed = self.parse('{ "payload" : [1e400, 12345678901234567890, 1.50, -0, 1e5, "\\u0041\\/"] , "x": 2 }', "request")
        assert isinstance(parsed, dict)
        payload = parsed["payload"]
        assert isinstance(payload, jsontext.RawJson)
        self.assertEqual(payload.text, '[1e400,12345678901234567890,1.50,-0,1e5,"A/"]')
        self.assertEqual(jsontext.serialize_record({"payload": payload, "x": 2}), b'{"payload":[1e400,12345678901234567890,1.50,-0,1e5,"A/"],"x":2}\n')

    def test_escapes_duplicates_and_framing(self) -> None:
        cases = {
            '{"a":"\\/"}\n': "RECORD_NOT_COMPACT",
            '{"a":"\\u0041"}\n': "RECORD_NOT_COMPACT",
            '{"a":"\\u000A"}\n': "RECORD_NOT_COMPACT",
            '{"a":"\\u001F"}\n': "RECORD_NOT_COMPACT",
            '{"a":"\\ud800"}\n': "RECORD_BAD_JSON",
            '{"a":1,"a":2}\n': "RECORD_DUPLICATE_KEY",
            '{"a":1}': "RECORD_NO_FINAL_LF",
            '{"a":1}\n\n': "RECORD_TRAILING_DATA",
            '[1]\n': "RECORD_NOT_OBJECT",
            '\ufeff{}\n': "RECORD_BOM",
            '': "RECORD_EMPTY",
            '[' * 200 + ']' * 200 + '\n': "RECORD_TOO_DEEP",
        }
        for text, code in cases.items():
            failure = self.parse(text)
            self.assertIsInstance(failure, jsontext.ParseFailure, text)
            assert isinstance(failure, jsontext.ParseFailure)
            self.assertEqual(failure.code, code, text)
        self.assertEqual(self.parse('{"a":"\\u001f\\n"}\n'), {"a": "\x1f\n"})

    def test_a_deep_record_is_refused_without_recursion_trouble(self) -> None:
        failure = jsontext.parse_bytes(b"[" * 200_000 + b"\n")
        assert isinstance(failure, jsontext.ParseFailure)
        self.assertEqual(failure.code, "RECORD_TOO_DEEP")

    def test_the_serializer_writes_what_the_reader_accepts_and_refuses_the_rest(self) -> None:
        value = {"fsjob": "1.1", "type": "queue", "queue_id": "0123456789abcdef", "created_ms": 1}
        self.assertEqual(encode_record("queue", value), b'{"fsjob":"1.1","type":"queue","queue_id":"0123456789abcdef","created_ms":1}\n')
        bads: List[Dict[str, Any]] = [{"a": 1.5}, {"a": "\ud800"}, {"a": float("nan")}]
        for bad in bads:
            with self.assertRaises(FsjobError) as caught:
                jsontext.serialize_record(bad)
            self.assertEqual(caught.exception.code, "INVALID_RECORD")
        with self.assertRaises(FsjobError) as caught:
            encode_record("queue", dict(value, queue_id="nope"))
        self.assertEqual(caught.exception.code, "INVALID_RECORD")
