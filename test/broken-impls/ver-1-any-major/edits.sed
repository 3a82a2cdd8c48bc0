# BROKEN (VER-1): the major is not checked.
/^_rr_version() {/,/^}/s|^    1\.0) _rr_minor=0; return 0 ;;$|    [0-9].0) _rr_minor=0; return 0 ;;|
