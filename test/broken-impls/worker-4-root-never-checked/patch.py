# BROKEN (WORKER-4): a long-running consumer never looks whether its queue
# root still holds the queue it opened (the Python implementation, patched),
# so it goes on serving a queue that was moved away.
import sys

from fsjob import cli, queue

queue.Queue.still_here = lambda self: True

sys.exit(cli.run(prog="fsjob-py (worker-4 variant)"))
