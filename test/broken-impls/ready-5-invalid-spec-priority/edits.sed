# BROKEN (READY-5): the wrong priority for an entry rebuilt without a valid spec.
s/^    _rb_prio=0$/    _rb_prio=1000/
