/* SPDX-License-Identifier: Apache-2.0 */
/* gloved: the owner-local Glove control service (see glove/control/service.h). */
#include "glove/control/service.h"

int main(int argc, char **argv) {
        return glove_control_service_main(argc, argv);
}
