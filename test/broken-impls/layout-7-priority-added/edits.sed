# BROKEN (LAYOUT-7): the ready prefix adds the priority.
s|P=\$((1000 - \$1))|P=$((1000 + $1))|
