# BROKEN (RETRY-1): an end record's counted flag is taken from its bytes, valid or not, so an invalid one that says counted false gives the attempt back.
s/^    if \[ -e "\$1\/end\.\$_ja_g\.json" \] \&\& rec_read "\$1\/end\.\$_ja_g\.json" end "\$2" "\$_ja_g" \&\& \[ "\$R_counted" = false \]; then$/    if [ -e "$1\/end.$_ja_g.json" ] \&\& grep -q '"counted":false' "$1\/end.$_ja_g.json"; then/
