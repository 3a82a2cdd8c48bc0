# BROKEN (LAYOUT-10): queue_open leaves lanes/ out of its checks.
s/^  for _qo_d in tmp jobs ready dedupe lanes workers; do$/  for _qo_d in tmp jobs ready dedupe workers; do/
s/^  _qo_out=\$(stat -c '%u %a' -- "\$Q\/tmp" "\$Q\/jobs" "\$Q\/ready" "\$Q\/dedupe" "\$Q\/lanes" "\$Q\/workers") || return 1$/  _qo_out=$(stat -c '%u %a' -- "$Q\/tmp" "$Q\/jobs" "$Q\/ready" "$Q\/dedupe" "$Q\/workers") || return 1/
