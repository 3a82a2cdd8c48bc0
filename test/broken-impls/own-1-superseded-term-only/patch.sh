# BROKEN (OWN-1): a superseded owner asks its execution to stop with SIGTERM
# instead of killing it at once, so a command that ignores SIGTERM runs on
# beside the new owner's.
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command '/superseded by generation/{n;s/_rc_signal KILL/_rc_signal TERM/;}'
