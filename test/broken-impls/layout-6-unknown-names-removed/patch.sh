# BROKEN (LAYOUT-6): every name of the job directory the layout does not list is removed.
_tidy_job() {
  for _tj_f in "$Q/jobs/$1"/*; do
    case ${_tj_f##*/} in
      spec.json|stdin|claim.*.json|exec.*.json|state.*.json|end.*.json|stdout.*|stderr.*|cancel.json|cancel-force.json|receipt.json) ;;
      *) [ -f "$_tj_f" ] && [ ! -L "$_tj_f" ] && rm -f -- "$_tj_f" ;;
    esac
  done
}
