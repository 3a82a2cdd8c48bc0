# BROKEN (EXEC-11): members left in the group when the leader exits are
# sent SIGKILL at once, without the SIGTERM and the kill_grace_ms a command
# is promised before it is killed.
. "$_broken_dir/../mutate.sh"
mutate runner.sh run_command 's/kill -s TERM -- "-\$_rc_lp" 2>\/dev\/null/kill -s KILL -- "-$_rc_lp" 2>\/dev\/null/'
