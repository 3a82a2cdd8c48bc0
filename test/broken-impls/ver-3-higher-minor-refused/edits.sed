# BROKEN (VER-3): only 1.0 is read.
/^_rr_version() {/,/^}/s|^      _rr_minor=\${R_fsjob#1.}; return 0 ;;$|      return 1 ;;|
