# BROKEN (SEC-5): only the consumer's files (claims, execs, ends, receipts, outputs) are 0644.
s|^cmd_consume() {$|cmd_consume() { umask 022|
