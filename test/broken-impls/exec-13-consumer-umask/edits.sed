# BROKEN (EXEC-13): no umask 022 before the command: it inherits 077.
/^umask 022$/d
