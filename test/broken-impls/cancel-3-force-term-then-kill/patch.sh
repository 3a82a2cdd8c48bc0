# BROKEN (CANCEL-3): a forced cancel is handled like a graceful one with a
# short grace: SIGTERM, then SIGKILL a second later, instead of SIGKILL at once.
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command '/^          _rc_signal KILL$/{N;s/_rc_signal KILL\n\(          _rc_stop=force\) _rc_kill_at= ;;/_rc_signal TERM\n\1 _rc_kill_at=$((NOW_MS + 1000)) ;;/;}'
