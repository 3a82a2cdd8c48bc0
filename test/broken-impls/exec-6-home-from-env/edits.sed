# BROKEN (EXEC-6): HOME from the environment as it is, else /.
s/^  \[ "\$_rc_hashome" = 1 \] || { consumer_home; set -- "\$@" "HOME=\$HOME_DIR"; }$/  [ "$_rc_hashome" = 1 ] || set -- "$@" "HOME=${HOME:-\/}"/
