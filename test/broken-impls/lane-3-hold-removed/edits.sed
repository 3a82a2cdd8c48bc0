# BROKEN (LANE-3): the highest hold is removed after the receipt
/^finish_receipt() {/,/^}/s/^    0) ready_remove "\$_fr_id"; return 0 ;;$/    0) ready_remove "$_fr_id"; [ -n "$S_lane" ] \&\& hold_dir_of lane "$S_lane" \&\& hold_top \&\& rm -f -- "$HOLD_DIR\/$HOLD_N.json"; return 0 ;;/
