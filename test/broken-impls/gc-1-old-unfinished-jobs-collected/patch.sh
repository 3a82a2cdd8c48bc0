# BROKEN (GC-1): a job is judged garbage by its age, not by its receipt.
_gc_by_age() {
  now_ms
  for _ga_d in "$Q"/jobs/*; do
    is_job_id "${_ga_d##*/}" && [ -d "$_ga_d" ] && [ ! -L "$_ga_d" ] || continue
    fs_stat "$_ga_d" || continue
    [ $((NOW_MS / 1000 - FS_MTIME)) -gt $((TEMP_MAX_AGE / 1000)) ] || continue
    mv -T -- "$_ga_d" "$Q/tmp/.gc-${_ga_d##*/}" && rm -rf -- "$Q/tmp/.gc-${_ga_d##*/}"
  done
}
