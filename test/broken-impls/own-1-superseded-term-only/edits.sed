# BROKEN (OWN-1): a superseded owner asks its execution to stop with SIGTERM instead of killing it at once, so a command ignoring SIGTERM runs on beside the new owner's
/^run_command() {/,/^}/{/superseded by generation/{n;s/_rc_signal KILL/_rc_signal TERM/;}}
