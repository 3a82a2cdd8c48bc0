# BROKEN (PUB-1..PUB-3, I1): write-once records are written in place, under
# their final name, instead of temp file + fsync + link. A crash between the
# open and the write leaves an empty or torn record visible to every reader.
pub_link() {
  if [ -e "$1/$2" ] || [ -L "$1/$2" ]; then
    return 1
  fi
  if ! printf '%s\n' "$3" > "$1/$2"; then
    PUB_WHY="cannot write $1/$2"
    return 2
  fi
  return 0
}
