/* SPDX-License-Identifier: Apache-2.0 */
/*
 * glove-keeper: the session keeper of a gloved managed session
 * (include/glove/keeper/keeper.h; docs/recovery.md, "The keeper"). gloved
 * starts it with its launch on descriptor 3 (a sealed memfd) and the
 * session's descriptors after it; it takes no arguments and reads no
 * environment. Installed in LIBEXECDIR/glove, where gloved looks for it
 * (beside itself first); not a command for people.
 */
#include "glove/keeper/keeper.h"

int main(void) {
        glove_keeper_main();
}
