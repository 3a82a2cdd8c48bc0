# BROKEN (RETRY-4): how long to wait for a retry is read from retry_at_ms on the wall clock alone, so a clock that jumped back an hour makes a 5 s retry "an hour away".
s/^        _cp_due=\$((NOW_MS + RETRY_LEFT))$/        _cp_due=$R_retry_at_ms/
