# BROKEN (READY-2): ready_remove removes nothing.
/^ready_remove() {/,/^}/s|^      pub_trash "\$_rm_e"$|      :|
