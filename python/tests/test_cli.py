"""The command line's units and defaults (fsjob/units.py, fsjob/cli.py), as the
reference's: durations, byte counts and pairs read exactly or refused with
USAGE naming the option; FSJOB_QUEUE as the default queue. (That both
command lines take the same arguments to the same records is
test/python/cli-options.test.ts's.)"""

from __future__ import annotations

import json
import os
import unittest
from typing import Dict, List, Optional, Tuple

from fsjob import FsjobError
from fsjob.units import format_bytes, format_duration, parse_bytes, parse_duration, parse_integer, parse_pairs

from .support import QueueCase, cli


class UnitsTest(unittest.TestCase):
    def test_durations_read_as_the_reference_reads_them(self) -> None:
        cases = {"30": 30_000, "1.5": 1500, "250ms": 250, "30s": 30_000, "10m": 600_000, "2h": 7_200_000, "7d": 604_800_000, " 5s ": 5000}
        for text, ms in cases.items():
            self.assertEqual(parse_duration(text, "timeout"), ms, text)
        for bad in ("10x", "", "1 h", "-1s", "1e3", "s"):
            with self.assertRaises(FsjobError) as raised:
                parse_duration(bad, "timeout")
            self.assertEqual(raised.exception.code, "USAGE")
            self.assertIn("--timeout", raised.exception.message)

    def test_bounds_are_said_in_the_option_s_unit(self) -> None:
        with self.assertRaises(FsjobError) as raised:
            parse_duration("8d", "timeout", 1, 604_800_000)
        self.assertEqual(raised.exception.message, "--timeout 8d is too large: at most 7d")
        with self.assertRaises(FsjobError) as raised:
            parse_bytes("65M", "max-output", 0, 64 * 1024 * 1024)
        self.assertEqual(raised.exception.message, "--max-output 65M is too large: at most 64M")
        self.assertEqual((format_duration(1500), format_duration(250), format_bytes(65536), format_bytes(1000)), ("1.5s", "250ms", "64k", "1000"))

    def test_bytes_integers_and_pairs(self) -> None:
        self.assertEqual([parse_bytes(t, "max-output") for t in ("1048576", "64k", "1M", "1MiB", "2G", "10b")], [1048576, 65536, 1048576, 1048576, 2 * 1024 ** 3, 10])
        self.assertEqual(parse_integer("-5", "priority", -1000, 1000), -5)
        for bad in ("1.5", "x"):
            with self.assertRaises(FsjobError):
                parse_integer(bad, "priority")
        self.assertEqual(parse_pairs(["A=1", "B", "C=x=y"], "env", {"B": "from-env"}), {"A": "1", "B": "from-env", "C": "x=y"})
        self.assertIsNone(parse_pairs([], "env", {}))
        mistakes: List[Tuple[List[str], Optional[Dict[str, str]]]] = [(["A=1", "A=2"], {}), (["B"], {}), (["=1"], {}), (["B"], None)]
        for items, environment in mistakes:
            with self.assertRaises(FsjobError) as raised:
                parse_pairs(items, "env", environment)
            self.assertEqual(raised.exception.code, "USAGE")


class CommandLineTest(QueueCase):
    def test_units_go_into_the_spec_and_fsjob_queue_names_the_queue(self) -> None:
        env = dict(os.environ, FSJOB_QUEUE=self.queue.root)
        made = cli("enqueue", "--json", "--timeout", "10m", "--max-output", "64k", "--kill-grace", "250ms", "--", "true", env=env)
        self.assertEqual(made.returncode, 0, made.stderr)
        spec = json.loads(made.stdout)
        self.assertEqual((spec["timeout_ms"], spec["max_output_bytes"], spec["kill_grace_ms"]), (600_000, 65536, 250))
        self.assertEqual(self.names(spec["id"])[-1], "spec.json")

    def test_a_bad_unit_is_a_usage_error_that_names_the_option_and_writes_nothing(self) -> None:
        bad = cli("enqueue", "--queue", self.queue.root, "--timeout", "10 minutes", "--", "true")
        self.assertEqual(bad.returncode, 2)
        self.assertIn(b"--timeout", bad.stderr)
        self.assertEqual(os.listdir(os.path.join(self.queue.root, "jobs")), [])

    def test_wait_that_times_out_exits_75_and_says_no_worker_serves_the_queue(self) -> None:
        made = cli("enqueue", "--queue", self.queue.root, "--", "true")
        waited = cli("wait", "--queue", self.queue.root, "--timeout", "200ms", made.stdout.decode().strip())
        self.assertEqual(waited.returncode, 75, waited.stderr)
        self.assertIn(f"no live worker serves {self.queue.root}".encode(), waited.stderr)

    def test_an_empty_queue_option_is_refused_and_the_default_queue_gets_nothing(self) -> None:
        # An empty shell variable (-q "$Q"): never FSJOB_QUEUE or the default in its place, as the reference refuses it.
        env = dict(os.environ, FSJOB_QUEUE=self.queue.root)
        for args in (("enqueue", "-q", "", "--", "true"), ("init", "-q", ""), ("status", "--queue=")):
            ran = cli(*args, env=env)
            self.assertEqual(ran.returncode, 2, (args, ran.stderr))
        self.assertEqual(os.listdir(os.path.join(self.queue.root, "jobs")), [])

    def test_a_typed_id_is_a_whole_id_or_a_unique_prefix_and_anything_else_is_a_usage_error(self) -> None:
        first = self.queue.enqueue(["true"])
        second = self.queue.enqueue(["true"], hold=True)
        q = ("--queue", self.queue.root)
        for command in (("status",), ("cancel",), ("release",), ("logs",), ("wait", "--timeout", "0")):
            for typed in ("../jobs", "", "abc", "x" * 36):
                ran = cli(*command, *q, typed)
                self.assertEqual(ran.returncode, 2, (command, typed, ran.stderr))
            self.assertEqual(cli(*command, *q, "0000").returncode, 4, command)  # a prefix of no id: no such job
        self.assertEqual(cli("status", *q, first[:4]).returncode, 2)  # the start of both ids: ambiguous
        shown = cli("status", *q, "--json", second[20:28])  # a unique start of the random part
        self.assertEqual((shown.returncode, json.loads(shown.stdout)["id"]), (0, second), shown.stderr)
        after = cli("enqueue", *q, "--json", "--after", second[20:28], "--", "true")
        self.assertEqual(json.loads(after.stdout)["after"], [{"job_id": second, "when": "succeeded"}], after.stderr)
        self.assertEqual(cli("cancel", *q, first[20:28]).returncode, 0)
        receipt = self.queue.status(first).receipt
        self.assertEqual(None if receipt is None else receipt.outcome, "cancelled")

    def test_status_shows_a_held_job_s_priority_and_labels_and_selects_it_by_label(self) -> None:
        held = self.queue.enqueue(["true"], hold=True, priority=7, labels={"batch": "1"})
        q = ("--queue", self.queue.root)
        report = json.loads(cli("status", *q, "--json", held).stdout)
        self.assertEqual((report["status"], report["spec"]["priority"], report["dir"]), ("held", 7, self.job_dir(held) + ".gated"))
        listed = json.loads(cli("status", *q, "--json", "--label", "batch=1").stdout)["jobs"]
        self.assertEqual([(job["id"], job["priority"], job["labels"]) for job in listed], [(held, 7, {"batch": "1"})])
        self.assertEqual((cli("logs", *q, held).returncode, self.queue.logs(held).gen), (0, 0))  # no output yet, not "no such job"

    def test_recover_says_what_it_did_on_stdout_even_when_nothing_needed_it(self) -> None:
        ran = cli("recover", "--queue", self.queue.root)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertIn(self.queue.root.encode(), ran.stdout)  # not silence, which reads as "nothing ran"

    def test_work_refuses_handlers_it_cannot_import_with_a_usage_error_and_claims_nothing(self) -> None:
        job = self.queue.enqueue(handler="resize", payload=None)
        for spec in ("fsjob_no_such_module:HANDLERS", "fsjob:NO_SUCH_NAME", "fsjob:__version__", ":HANDLERS"):
            ran = cli("work", "--queue", self.queue.root, "--drain", "--handlers", spec)
            self.assertEqual(ran.returncode, 2, (spec, ran.stderr))
            self.assertNotIn(b"Traceback", ran.stderr)
        self.assertEqual((self.queue.status(job).status, self.queue.status(job).gen), ("queued", 0))

    def test_check_record_refuses_what_it_cannot_check_with_a_usage_error_and_never_opens_a_fifo(self) -> None:
        fifo = os.path.join(self.base, "fifo")
        os.mkfifo(fifo, 0o600)
        spec = os.path.join(self.base, "spec.json")
        job = self.queue.enqueue(["true"])
        with open(os.path.join(self.job_dir(job), "spec.json"), "rb") as source, open(spec, "wb") as copy:
            copy.write(source.read())
        for args in (("check-record", "spec", os.path.join(self.base, "missing")), ("check-record", "bogus", spec),
                     ("check-record", "spec", fifo), ("check-request", fifo), ("check-request", self.base)):
            self.assertEqual(cli(*args, timeout=60).returncode, 2, args)
        self.assertEqual(cli("check-record", "spec", spec).returncode, 0)
        self.assertEqual(cli("check-record", "claim", spec).returncode, 1)  # a finding, not a usage error

    def test_release_of_several_ids_releases_each_on_its_own_and_an_empty_lane_is_refused(self) -> None:
        held = [self.queue.enqueue(["true"], hold=True) for _ in range(2)]
        never = self.queue.enqueue(["true"])
        q = ("--queue", self.queue.root)
        ran = cli("release", *q, "--json", held[0], never, held[1])
        self.assertEqual(ran.returncode, 1, ran.stderr)  # NOT_HELD, the first refusal
        out = json.loads(ran.stdout)
        self.assertEqual(([r["id"] for r in out["released"]], [(r["id"], r["error"]["code"]) for r in out["refused"]]), (held, [(never, "NOT_HELD")]))
        self.assertEqual([self.queue.status(job_id).status for job_id in held], ["queued", "queued"])
        for args in (("release", *q, "--lane", ""), ("wait", *q, "--lane", "", "--timeout", "0")):
            self.assertEqual(cli(*args).returncode, 2, args)

    def test_a_wait_on_a_job_blocked_behind_a_held_one_names_the_held_one(self) -> None:
        held = self.queue.enqueue(["true"], hold=True)
        blocked = self.queue.enqueue(["true"], after=[held])
        waited = cli("wait", "--queue", self.queue.root, "--timeout", "2s", blocked)
        self.assertEqual(waited.returncode, 75, waited.stderr)
        self.assertIn(f"fsjob release -q {self.queue.root} {held}".encode(), waited.stderr)  # what to run, not prose

    def test_enqueue_warns_of_a_job_that_will_fail_or_never_run_and_accepts_it(self) -> None:
        failed = self.queue.enqueue(["sh", "-c", "exit 3"], cwd=self.base)
        self.assertEqual(cli("work", "--queue", self.queue.root, "--drain").returncode, 0)
        missing = os.path.join(self.base, "gone")
        q = ("--queue", self.queue.root)
        for args, named in ((("--cwd", missing, "--", "true"), missing), (("--cwd", self.base, "--", "fsjob-no-such-program"), "fsjob-no-such-program"),
                            (("--cwd", self.base, "--after", failed, "--", "true"), failed)):
            ran = cli("enqueue", *q, *args)
            self.assertEqual(ran.returncode, 0, ran.stderr)
            self.assertTrue(os.path.isdir(self.job_dir(ran.stdout.decode().strip())) or os.path.isdir(self.job_dir(ran.stdout.decode().strip()) + ".gated"))
            self.assertIn(named.encode(), ran.stderr)  # the warning names what will fail
        quiet = cli("enqueue", *q, "--cwd", self.base, "--", "true")
        self.assertEqual((quiet.returncode, quiet.stderr), (0, b""))


if __name__ == "__main__":
    unittest.main()
