# BROKEN (PUB-2): the temporary file is not fsynced before its link; only the
# files fsynced with it (outputs, a pending directory) still are.
/^pub_link() {/,/^}/s|^  if ! sync -- "\$_pl_tmp" "\$@"; then$|  if [ $# -gt 0 ] \&\& ! sync -- "$@"; then|
