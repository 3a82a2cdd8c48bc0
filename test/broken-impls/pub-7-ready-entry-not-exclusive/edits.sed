# BROKEN (PUB-7): create_excl checks the name, then opens without O_EXCL.
/^create_excl() {/,/^}/s/^  set -C$/  set +C/
