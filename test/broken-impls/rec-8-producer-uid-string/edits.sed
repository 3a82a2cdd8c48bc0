# BROKEN (REC-8): an identity member of the wrong type.
s|\\"uid\\":\$ID_UID}"|\\"uid\\":\\"$ID_UID\\"}"|
