# BROKEN (SEC-3): [ -e ] instead of [ -f ], and no file type check.
/^fs_check_file() {/,/^}/s|^  if \[ ! -f "\$1" \]; then$|  if [ ! -e "$1" ]; then|
/^fs_check_file() {/,/^}/s|^  \[ "\$FS_TYPE" = regular \] \|\||  : \|\||
