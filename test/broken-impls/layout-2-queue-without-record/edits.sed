# BROKEN (LAYOUT-2): fsjob.json is only checked when it exists.
/^queue_open() {/,/^}/s|^  rec_read "\$Q/fsjob.json" queue \|\| {$|  [ ! -e "$Q/fsjob.json" ] \|\| rec_read "$Q/fsjob.json" queue \|\| {|
