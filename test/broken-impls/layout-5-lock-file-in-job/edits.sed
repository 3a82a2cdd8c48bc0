# BROKEN (LAYOUT-5): a name the layout does not list, written into a job directory.
/^claim_job() {/,/^}/s|^    0) return 0 ;;$|    0) : > "$1/owner.lock"; return 0 ;;|
