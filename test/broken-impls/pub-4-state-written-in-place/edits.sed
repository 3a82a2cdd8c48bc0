# BROKEN (PUB-4): a reader may see a torn or empty state record.
/^pub_rename() {/,/^}/s|^  _pub_tmp "\$1" "\$2" "\$3" \|\| { PUB_WHY="cannot create a temporary file in \$1"; return 2; }$|  printf '%s\\n' "$3" > "$1/$2" \|\| return 2; sync -- "$1/$2"; return 0|
