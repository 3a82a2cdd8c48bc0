# BROKEN (WORKER-1): a long-running consumer leaves its registration in
# workers/ when it exits cleanly (the Python implementation, patched).
import sys

from fsjob import cli, worker

worker.Worker._unregister = lambda self: None

sys.exit(cli.run(prog="fsjob-py (worker-1 variant)"))
