# BROKEN (WORKER-2): the consumer starts no guardian, so the commands of a
# consumer that dies run on until recovery finds them.
guardian_start() { return 0; }
