# BROKEN (MANIFEST-4): consume waits for retries due within a day.
s/FSJOB_SH_RETRY_WAIT_MAX_MS:-60000/FSJOB_SH_RETRY_WAIT_MAX_MS:-86400000/
