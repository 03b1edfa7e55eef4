/* SPDX-License-Identifier: Apache-2.0 */
/* The native adapter table (include/glove/supervisor/adapter.h). */
#include <string.h>

#include "glove/supervisor/adapter.h"

#define HOME GLOVE_SUPERVISOR_ADAPTER_HOME

/* Sorted by runtime_id. */
static const struct glove_supervisor_adapter adapters[] = {
        { "claude-code", "claude", HOME "/.claude/skills", NULL },
        { "codex", "codex", HOME "/.codex/skills", "CODEX_HOME=" HOME "/.codex" },
        { "copilot", "copilot", HOME "/.copilot/skills", "COPILOT_HOME=" HOME "/.copilot" },
        { "opencode", "opencode", HOME "/.config/opencode/skills", "XDG_CONFIG_HOME=" HOME "/.config" },
        { "pi", "pi", HOME "/.pi/agent/skills", NULL },
};

const struct glove_supervisor_adapter *glove_supervisor_adapter_find(const char *runtime_id) {
        if (!runtime_id)
                return NULL;
        for (size_t i = 0; i < sizeof(adapters) / sizeof(adapters[0]); i++)
                if (strcmp(adapters[i].runtime_id, runtime_id) == 0)
                        return &adapters[i];
        return NULL;
}

const struct glove_supervisor_adapter *glove_supervisor_adapters(size_t *n) {
        *n = sizeof(adapters) / sizeof(adapters[0]);
        return adapters;
}
