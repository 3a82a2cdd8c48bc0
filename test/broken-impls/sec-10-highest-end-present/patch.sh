# BROKEN (SEC-10): "end.<g>.json, g the highest" is read as the highest end
# record present, not the highest claim generation: an invalid end record
# below an open claim leaves the whole job alone.
variant_top_end_invalid() { # JD ID
  _vt_top=0
  for _vt_f in "$1"/end.*.json; do
    _vt_n=${_vt_f##*/end.}
    _vt_n=${_vt_n%.json}
    is_gen "$_vt_n" && [ "$_vt_n" -gt "$_vt_top" ] && _vt_top=$_vt_n
  done
  [ "$_vt_top" -gt 0 ] || return 1
  rec_read "$1/end.$_vt_top.json" end "$2" "$_vt_top" && return 1
  log "$1/end.$_vt_top.json: the highest end record is invalid; the job is left alone"
  return 0
}
