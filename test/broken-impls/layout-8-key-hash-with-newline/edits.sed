# BROKEN (LAYOUT-8): the classic echo "$key" | sha256sum.
s|SHA=\$(printf '%s' "\$1" \| sha256sum)|SHA=$(printf '%s\\n' "$1" \| sha256sum)|
