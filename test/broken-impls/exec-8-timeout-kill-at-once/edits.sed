# BROKEN (EXEC-8): SIGKILL at the timeout, no grace
/^    # EXEC-8\.$/,/_rc_stop=timeout/s/_rc_signal TERM/_rc_signal KILL/
