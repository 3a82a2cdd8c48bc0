"""Errors: one exception class whose codes are the reference's closed set (src/base/errors.ts)."""

from __future__ import annotations

import os
import re
import unittest

from .support import REPO, QueueCase
from fsjob import ERROR_CODES, DedupeHeld, FsjobError


class Codes(unittest.TestCase):
    def test_the_codes_are_the_references_in_its_order(self) -> None:
        with open(os.path.join(REPO, "src", "base", "errors.ts"), encoding="utf-8") as handle:
            text = handle.read()
        block = re.search(r"ERROR_CODES = \[(.*?)\] as const", text, re.S)
        assert block is not None, "src/base/errors.ts no longer declares ERROR_CODES = [...] as const"
        self.assertEqual(tuple(re.findall(r"'([A-Z_]+)'", block.group(1))), ERROR_CODES)

    def test_a_code_outside_the_set_is_refused_and_the_json_form_is_the_references(self) -> None:
        with self.assertRaises(ValueError):
            FsjobError("NOPE", "x")
        error = FsjobError("NOT_FOUND", "no such job", path="/q/jobs/x", job_id="x")
        self.assertEqual(error.to_json(), {"code": "NOT_FOUND", "message": "no such job", "path": "/q/jobs/x", "job_id": "x"})


class Dedupe(QueueCase):
    def test_a_held_key_raises_dedupe_held_naming_the_holder(self) -> None:
        first = self.queue.enqueue(["true"], dedupe="nightly", cwd=self.outside)
        with self.assertRaises(DedupeHeld) as caught:
            self.queue.enqueue(["true"], dedupe="nightly", cwd=self.outside)
        held = caught.exception
        self.assertIsInstance(held, FsjobError)
        self.assertEqual((held.code, held.holder, held.job_id, held.key, held.clause), ("DEDUPE_HELD", first, first, "nightly", "DEDUPE-1"))
        # The holder's status (STATUS-1) as data, as the reference's job_status: queued, so waiting for it ends.
        self.assertEqual((held.job_status, held.to_json()["job_status"]), ("queued", "queued"))
