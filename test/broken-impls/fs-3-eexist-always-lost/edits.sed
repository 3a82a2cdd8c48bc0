# BROKEN (FS-3): EEXIST from link() is always a lost race, also when the name is the writer's own record (a retransmission).
s/^  elif \[ -f "\$1\/\$2" \] && \[ ! -L "\$1\/\$2" \] && { \[ "\$_pl_tmp" -ef "\$1\/\$2" \] || cmp -s -- "\$_pl_tmp" "\$1\/\$2"; }; then$/  elif false; then/
