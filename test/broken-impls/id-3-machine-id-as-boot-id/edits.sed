# BROKEN (ID-3): identities carry /etc/machine-id instead of the boot id, so an owner from before a reboot looks same-host
/^id_init() {/,/^}/s/< \/proc\/sys\/kernel\/random\/boot_id/< \/etc\/machine-id/
