# BROKEN (PUB-6): pub_link keeps the temporary name next to the record it linked.
s|^  pub_trash "\$_pl_tmp"$|  : "$_pl_tmp"|
