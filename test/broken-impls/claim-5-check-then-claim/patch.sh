# BROKEN (CLAIM-5, I2): a claim is taken by checking that the name is free
# and then moving a file there (mv replaces), instead of an exclusive link.
# Two consumers can both pass the check, and both run the job.
claim_job() {
  now_ms
  CLAIM_MS=$NOW_MS CLAIM_LEASE_MS=$LEASE_DEFAULT
  rec_claim "$2" "$3" "$CLAIM_MS" "$CLAIM_LEASE_MS"
  if [ -e "$1/claim.$3.json" ] || [ -L "$1/claim.$3.json" ]; then
    return 1
  fi
  _pub_tmp "$1" "claim.$3.json" "$REC" || return 2
  sync -- "$_pl_tmp" 2>/dev/null
  mv -f -- "$_pl_tmp" "$1/claim.$3.json" || return 2
  return 0
}
