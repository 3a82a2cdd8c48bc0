# BROKEN (SEC-5): files readable by everyone (directories still get -m 700).
umask 022
