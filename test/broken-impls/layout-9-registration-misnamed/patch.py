# BROKEN (LAYOUT-9): a long-running consumer's registration is named
# workers/worker-<w>.json instead of workers/<w>.json (the Python
# implementation, patched), and so also outlives its exit.
import sys

from fsjob import cli, worker

_publish_rename = worker.publish_rename


def _misnamed(directory, name, data):
    return _publish_rename(directory, "worker-" + name if directory.rstrip("/").endswith("/workers") else name, data)


worker.publish_rename = _misnamed

sys.exit(cli.run(prog="fsjob-py (layout-9 variant)"))
