# BROKEN (LAYOUT-6): unknown names are deleted (_tidy_job, patch.sh).
s|^ready_remove() {$|ready_remove() { _tidy_job "$1"|
