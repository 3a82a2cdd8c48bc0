# BROKEN (CANCEL-3): a forced cancel sends SIGTERM and SIGKILL a second later, like a graceful cancel with a short grace, instead of SIGKILL at once
/^run_command() {/,/^}/{/^          _rc_signal KILL$/{N;s/_rc_signal KILL\n\(          _rc_stop=force\) _rc_kill_at= ;;/_rc_signal TERM\n\1 _rc_kill_at=$((_rc_m + 1000)) ;;/;}}
