# BROKEN (CLAIM-1): reverse order
/^consume_pass() {/,/^}/s/^  for _cp_e in "\$Q"\/ready\/\*; do$/  for _cp_e in $(ls -r -- "$Q\/ready" | sed "s|^|$Q\/ready\/|"); do/
