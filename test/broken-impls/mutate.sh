# mutate LIB FUNCTION SED_SCRIPT: redefine FUNCTION of conformance/impls/sh/lib/LIB
# from its own text with SED_SCRIPT applied, so a variant states its bug as
# a small edit of the real code. Sourced by a variant's patch.sh. A script
# that changes nothing (the code it edits has moved on) stops every role
# with status 97, so a stale variant fails loudly instead of passing as
# the unbroken implementation.
mutate() {
  _mu_src=$(sed -n "/^$2() {/,/^}/p" "$FSJOB_SH_DIR/lib/$1")
  if [ -z "$_mu_src" ]; then
    printf 'broken variant: no function %s in lib/%s\n' "$2" "$1" >&2
    exit 97
  fi
  _mu_new=$(printf '%s\n' "$_mu_src" | sed "$3")
  if [ "$_mu_new" = "$_mu_src" ]; then
    printf 'broken variant: %s changed nothing in %s (lib/%s)\n' "$3" "$2" "$1" >&2
    exit 97
  fi
  eval "$_mu_new"
}
