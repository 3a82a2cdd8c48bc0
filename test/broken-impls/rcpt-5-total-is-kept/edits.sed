# BROKEN (RCPT-5): bytes_total of a truncated stream is the kept size
/^_rc_output_json() {/,/^}/s/\*) output_json "\$_rc_g" \$((\$2 + \$3)) "\$2" true "\$1" ;;/*) output_json "$_rc_g" "$2" "$2" true "$1" ;;/
