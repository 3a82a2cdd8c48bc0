# BROKEN (PUB-11): every linked record is made read-only after the link ("write-once"), a mode change of a published name
/^pub_link() {/,/^}/s|^  pub_trash "\$_pl_tmp"$|  pub_trash "$_pl_tmp"; chmod 400 -- "$1/$2"|
