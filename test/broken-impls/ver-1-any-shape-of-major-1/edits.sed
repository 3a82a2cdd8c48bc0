# BROKEN (VER-1): any version string that starts with "1." is read as major 1 ("1.0.0", "1.00" included), not only <major>.<minor> of decimal integers without leading zeros.
s/^    1\.\[1-9\]|1\.\[1-9\]\[0-9\]|.*)$/    1.*)/
