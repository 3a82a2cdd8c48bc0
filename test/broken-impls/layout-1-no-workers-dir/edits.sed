# BROKEN (LAYOUT-1): init leaves out workers/.
s|for _in_d in tmp jobs ready dedupe lanes workers; do|for _in_d in tmp jobs ready dedupe lanes; do|
