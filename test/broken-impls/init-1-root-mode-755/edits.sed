# BROKEN (INIT-1): the queue root is created with mode 0755.
s|mkdir -p -m 700 -- "\$1"|mkdir -p -m 755 -- "$1"|
