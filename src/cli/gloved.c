/* SPDX-License-Identifier: Apache-2.0 */
/* gloved: the owner-local Glove control service (see glove/server/service.h). */
#include "glove/server/service.h"

int main(int argc, char **argv) {
        return glove_server_service_main(argc, argv);
}
