# BROKEN (ID-3): identities carry /etc/machine-id instead of the boot id,
# which survives reboots: an owner from before a reboot looks same-host.
. "$_broken_dir/../mutate.sh"
mutate ident.sh id_init 's/< \/proc\/sys\/kernel\/random\/boot_id/< \/etc\/machine-id/'
