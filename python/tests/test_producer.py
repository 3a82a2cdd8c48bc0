"""Enqueue, cancel, status, wait and logs through the library (spec/producer.md, spec/control.md)."""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Dict, List, Tuple

from .support import QueueCase, cli
from fsjob import DedupeHeld, FsjobError, Queue
from fsjob.records import read_record
from fsjob.names import RecordName
from fsjob.constants import PROTOCOL_VERSION


class Enqueue(QueueCase):
    def test_a_job_is_published_whole_with_every_default(self) -> None:
        job = self.queue.enqueue(["echo", "hi"], stdin=b"\x00\x01", env={"A": "1"}, cwd=self.outside, priority=7)
        self.assertEqual(self.names(job), ["spec.json", "stdin"])
        spec = read_record(os.path.join(self.job_dir(job), "spec.json"), "spec", RecordName("spec", job_id=job))
        assert spec is not None and spec.ok, spec.reason if spec else ""
        value = spec.value
        self.assertEqual(value["fsjob"], PROTOCOL_VERSION)  # VER-4: 1.1 even when no member 1.1 added is used
        self.assertEqual((value["argv"], value["env"], value["cwd"], value["priority"]), (["echo", "hi"], {"A": "1"}, self.outside, 7))
        self.assertEqual(value["stdin"]["bytes"], 2)
        defaults: List[Tuple[str, Any]] = [("timeout_ms", 3600000), ("kill_grace_ms", 5000), ("queue_deadline_ms", None), ("max_attempts", 1),
                              ("retry_delay_ms", 0), ("lane", None), ("dedupe", None), ("preemptible", False), ("max_output_bytes", 1048576), ("labels", {})]
        for name, default in defaults:
            self.assertEqual(value[name], default, name)
        self.assertEqual(os.listdir(self.queue.path("ready")), [f"0993-{job}"])
        self.assertEqual(os.listdir(self.queue.path("tmp")), [])
        for path in (self.job_dir(job), os.path.join(self.job_dir(job), "spec.json")):
            self.assertEqual(stat.S_IMODE(os.lstat(path).st_mode) & 0o077, 0)

    def test_ids_sort_in_enqueue_order(self) -> None:
        ids = [self.queue.enqueue(["true"]) for _ in range(20)]
        self.assertEqual(ids, sorted(ids))

    def test_an_invalid_request_writes_nothing(self) -> None:
        bads: List[Dict[str, Any]] = [{"argv": []}, {"argv": ["x"], "handler": "h"}, {"argv": ["x"], "timeout_ms": 1.5}, {"argv": ["x"], "env": {"FSJOB_X": "1"}},
                                      {"argv": ["x"], "surprise": 1}, {"fsjob": "2.0", "argv": ["x"]}]
        for bad in bads:
            with self.assertRaises(FsjobError) as caught:
                self.queue.enqueue_request(bad)
            self.assertIn(caught.exception.code, ("USAGE", "UNSUPPORTED_VERSION"), bad)
        self.assertEqual(os.listdir(self.queue.path("jobs")), [])
        self.assertEqual(os.listdir(self.queue.path("tmp")), [])
        self.assertEqual(os.listdir(self.queue.path("ready")), [])

    def test_a_spec_over_record_max_is_refused_naming_rec_2(self) -> None:
        with self.assertRaises(FsjobError) as caught:
            self.queue.enqueue(["echo"] + ["x" * 100000] * 12)
        self.assertEqual((caught.exception.code, caught.exception.clause), ("TOO_LARGE", "REC-2"))
        self.assertEqual(os.listdir(self.queue.path("jobs")), [])

    def test_a_held_dedupe_key_is_refused_until_the_job_finishes(self) -> None:
        first = self.queue.enqueue(["true"], dedupe="nightly")
        with self.assertRaises(DedupeHeld) as caught:
            self.queue.enqueue(["true"], dedupe="nightly")
        self.assertEqual(caught.exception.holder, first)
        self.assertEqual(self.queue.job_ids(), [first])
        self.queue.cancel(first)  # nobody owns it: finished at once (CANCEL-2)
        self.assertEqual(self.queue.wait(first, timeout=10).outcome, "cancelled")
        self.assertNotEqual(self.queue.enqueue(["true"], dedupe="nightly"), first)

    def test_the_cli_exits_3_for_a_held_key_and_prints_only_the_id(self) -> None:
        done = cli("enqueue", "--queue", self.queue.root, "--dedupe", "k", "--", "true")
        self.assertEqual(done.returncode, 0, done.stderr)
        job = done.stdout.decode().strip()
        self.assertEqual(self.queue.job_ids(), [job])
        again = cli("enqueue", "--queue", self.queue.root, "--dedupe", "k", "--", "true")
        self.assertEqual((again.returncode, again.stdout), (3, b""))
        bad = cli("enqueue", "--queue", self.queue.root, "--request", "-", stdin=b'{"argv":"not a list"}')
        self.assertNotIn(bad.returncode, (0, 3))

    def test_init_is_idempotent_and_refuses_a_bad_root(self) -> None:
        again = Queue.init(self.queue.root)
        self.assertEqual(again.queue_id, self.queue.queue_id)
        os.chmod(self.queue.root, 0o777)
        with self.assertRaises(FsjobError) as caught:
            Queue.open(self.queue.root)
        self.assertEqual(caught.exception.code, "UNSAFE_QUEUE")
        os.chmod(self.queue.root, 0o700)
        with open(os.path.join(self.base, "notq"), "w"):
            pass
        with self.assertRaises(FsjobError) as caught:
            Queue.open(self.base)
        self.assertEqual(caught.exception.code, "NOT_A_QUEUE")


class CancelAndStatus(QueueCase):
    def test_cancel_of_a_queued_job_finishes_it_and_a_second_cancel_fails(self) -> None:
        job = self.queue.enqueue(["true"])
        self.assertEqual(self.queue.status(job).status, "queued")
        self.assertTrue(self.queue.cancel(job, force=True))
        receipt = self.queue.wait(job, timeout=10)
        self.assertEqual((receipt.outcome, receipt.exit_code, receipt.status, receipt.stdout), ("cancelled", 130, None, None))
        self.assertIn("cancel-force.json", self.names(job))
        with self.assertRaises(FsjobError) as caught:
            self.queue.cancel(job)
        self.assertEqual(caught.exception.code, "FINISHED")
        self.assertEqual(self.queue.status(job).status, "finished")
        self.assertEqual(cli("cancel", "--queue", self.queue.root, job).returncode, 1)

    def test_wait_times_out_and_unknown_jobs_are_not_found(self) -> None:
        job = self.queue.enqueue(["true"])
        with self.assertRaises(FsjobError) as caught:
            self.queue.wait(job, timeout=0.2)
        # job_ids as the reference's single wait and wait_many: the one job still unfinished, also in the JSON form.
        self.assertEqual((caught.exception.code, caught.exception.job_id, caught.exception.job_ids), ("TIMEOUT", job, [job]))
        self.assertEqual(caught.exception.to_json().get("job_ids"), [job])
        with self.assertRaises(FsjobError) as caught:
            self.queue.wait("1" * 19 + "-" + "a" * 16, timeout=1)
        self.assertEqual(caught.exception.code, "NOT_FOUND")
        with self.assertRaises(FsjobError) as caught:
            self.queue.status("../etc")
        self.assertEqual(caught.exception.code, "INVALID_ID")

    def test_an_invalid_receipt_is_reported_never_trusted(self) -> None:
        job = self.queue.enqueue(["true"])
        with open(os.path.join(self.job_dir(job), "receipt.json"), "w") as handle:
            json.dump({"fsjob": "1.1", "type": "receipt"}, handle)
        os.chmod(os.path.join(self.job_dir(job), "receipt.json"), 0o600)
        with self.assertRaises(FsjobError) as caught:
            self.queue.wait(job, timeout=5)
        self.assertEqual(caught.exception.code, "INVALID_RECORD")
        self.assertEqual(self.queue.status(job).status, "finished")
