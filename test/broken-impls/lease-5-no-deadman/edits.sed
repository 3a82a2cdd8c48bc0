# BROKEN (LEASE-5): the guardian never acts on a passed deadline; it only
# stops groups when the consumer dies (the 1.0 guardian).
s/^      _gm_deadman$/      :/
