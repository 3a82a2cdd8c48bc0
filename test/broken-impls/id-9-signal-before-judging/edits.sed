# BROKEN (ID-9): recovery sends SIGTERM to the recorded pgid before judging the group, so a process that now leads a group under that number is signalled
/^orphan_stoppable() {/,/^}/s/^  exec_group_state "\$1" "\$2" "\$J_G"$/  exec_group_state "$1" "$2" "$J_G"; [ -n "$EXEC_PGID" ] \&\& kill -s TERM -- "-$EXEC_PGID" 2>\/dev\/null/
