"""FS-1..FS-3: a filesystem without the operations fsjob needs is refused, and a retransmitted link is recognised.

The filesystems are simulated by replacing os.link / os.rename for the
duration of a test: vfat (no hard links), sshfs without its extensions
(hard links as copies, no rename over), an NFS client whose reply was lost
(EEXIST for the link it made).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import unittest
from typing import Any, Callable
from unittest import mock

from .support import QueueCase, quiet
from fsjob import FsjobError, Queue, work
from fsjob.safefs import publish_link

_real_link: Callable[..., Any] = os.link


def _fail(code: int) -> Callable[..., None]:
    def link(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(code, os.strerror(code))
    return link


class Probe(unittest.TestCase):
    def setUp(self) -> None:
        self.base = tempfile.mkdtemp(prefix="fsjob-py-fs-")
        os.chmod(self.base, 0o700)
        self.root = os.path.join(self.base, "q")

    def tearDown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def test_init_refuses_a_filesystem_without_hard_links(self) -> None:
        with mock.patch("os.link", _fail(errno.EPERM)):
            with self.assertRaises(FsjobError) as caught:
                Queue.init(self.root)
        self.assertEqual((caught.exception.code, caught.exception.clause, caught.exception.errno), ("IO", "FS-2", "EPERM"))
        self.assertIn("link() to a new name", caught.exception.message)
        self.assertFalse(os.path.exists(os.path.join(self.root, "fsjob.json")), "no queue record: not a queue")
        self.assertEqual(os.listdir(os.path.join(self.root, "tmp")), [], "the probe removed its files")

    def test_init_of_an_existing_queue_does_not_probe(self) -> None:
        Queue.init(self.root)
        with mock.patch("os.link", _fail(errno.EROFS)):
            Queue.init(self.root)

    def test_init_refuses_rename_that_cannot_replace(self) -> None:
        real = os.rename

        def rename(src: str, dst: str) -> None:
            if os.path.exists(dst):
                raise OSError(errno.EPERM, "no posix-rename")
            real(src, dst)

        with mock.patch("os.rename", rename):
            with self.assertRaises(FsjobError) as caught:
                Queue.init(self.root)
        self.assertEqual(caught.exception.clause, "FS-2")
        self.assertIn("rename() over an existing file", caught.exception.message)

    def test_hard_links_shown_as_copies_pass(self) -> None:
        def link(src: str, dst: str, **_kwargs: Any) -> None:
            if os.path.lexists(dst):
                raise FileExistsError(errno.EEXIST, "exists")
            shutil.copyfile(src, dst)

        with mock.patch("os.link", link):
            Queue.init(self.root)
        self.assertTrue(os.path.exists(os.path.join(self.root, "fsjob.json")))


class Publication(QueueCase):
    def test_a_worker_refuses_a_queue_whose_filesystem_lost_its_links(self) -> None:
        with mock.patch("os.link", _fail(errno.ENOSYS)):
            with self.assertRaises(FsjobError) as caught:
                work(self.queue, drain=True, install_signals=False, log=quiet)
        self.assertEqual((caught.exception.clause, caught.exception.errno), ("FS-2", "ENOSYS"))

    def test_a_link_refused_with_eopnotsupp_is_the_filesystems_lack(self) -> None:
        with mock.patch("os.link", _fail(errno.EOPNOTSUPP)):
            with self.assertRaises(FsjobError) as caught:
                publish_link(self.outside, "claim.1.json", b"{}\n")
        self.assertEqual(caught.exception.clause, "FS-2")
        self.assertEqual(os.listdir(self.outside), [], "the temporary file is removed")

    def test_eexist_for_the_link_it_made_is_a_publication(self) -> None:
        for copies in (False, True):
            directory = os.path.join(self.outside, f"copies-{copies}")
            os.mkdir(directory, 0o700)

            def link(src: str, dst: str, **kwargs: Any) -> None:
                if copies:
                    shutil.copyfile(src, dst)
                else:
                    _real_link(src, dst, **kwargs)
                raise FileExistsError(errno.EEXIST, "exists (retransmitted)")

            with mock.patch("os.link", link):
                self.assertTrue(publish_link(directory, "claim.1.json", b'{"mine":true}\n'))
            self.assertEqual(os.listdir(directory), ["claim.1.json"])

    def test_eexist_for_another_writers_record_is_lost(self) -> None:
        self.assertTrue(publish_link(self.outside, "claim.1.json", b'{"theirs":true}\n'))
        self.assertFalse(publish_link(self.outside, "claim.1.json", b'{"mine!":true}\n'))
        with open(os.path.join(self.outside, "claim.1.json"), "rb") as handle:
            self.assertEqual(handle.read(), b'{"theirs":true}\n')


if __name__ == "__main__":
    unittest.main()
