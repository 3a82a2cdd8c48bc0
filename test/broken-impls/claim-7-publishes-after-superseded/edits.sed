# BROKEN (CLAIM-7): a superseded owner kills its command, then reports the attempt as failed and publishes the receipt without looking for claim.<g+1>.json first
/^run_command() {/,/^}/s/superseded) RUN_OUTCOME=superseded ;;/superseded) RUN_OUTCOME=failed ;;/
/^finish_receipt() {/,/^}/s/^  if \[ -e "\$1\/claim.\$((\$3 + 1)).json" \] || \[ -L "\$1\/claim.\$((\$3 + 1)).json" \]; then$/  if false; then/
/^finish_end() {/,/^}/s/^  if \[ -e "\$1\/claim.\$((\$3 + 1)).json" \] || \[ -L "\$1\/claim.\$((\$3 + 1)).json" \]; then$/  if false; then/
