# BROKEN (INIT-2): an existing invalid queue record is replaced instead of making init fail.
s|^    rec_read "\$Q/fsjob.json" queue && return 0$|    rec_read "$Q/fsjob.json" queue \&\& return 0; rm -f -- "$Q/fsjob.json"; cmd_init "$1"; return|
