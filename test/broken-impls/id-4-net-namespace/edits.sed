# BROKEN (ID-4): identities carry the network namespace instead of the pid namespace, so two containers sharing a network look same-host
/^id_init() {/,/^}/s/readlink \/proc\/self\/ns\/pid/readlink \/proc\/self\/ns\/net/
