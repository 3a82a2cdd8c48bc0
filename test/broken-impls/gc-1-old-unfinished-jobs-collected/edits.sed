# BROKEN (GC-1): recover starts with _gc_by_age (patch.sh).
/^cmd_recover() {/,/^}/s|^  ready_rebuild$|  _gc_by_age; ready_rebuild|
