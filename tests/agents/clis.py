#!/usr/bin/python3
"""clis.py: how each of the five agent CLIs runs one non-interactive turn
against the fake model server (tests/agents/fake_model.py), for
tests/agents/agents.bats. See docs/session-policy.md, "Worked examples: the
five agent CLIs".

    clis.py spec [--mcp=command|http] CLI BASE CA [CONFIG_ROOT]
        Prints one JSON object for CLI (codex | claude-code | pi | copilot |
        opencode):
          "executable"  the adapter's executable name (in node_modules/.bin)
          "arguments"   the non-interactive command line, without argv[0]
          "environment" NAME=VALUE entries: the model endpoint BASE (an
                        https:// URL prefix), the CA bundle CA, a dummy API
                        key, PATH. Never HOME or the adapter's managed
                        variable (CODEX_HOME, COPILOT_HOME, XDG_CONFIG_HOME):
                        a managed session injects those.
          "limits"      memory_bytes, pids, disk_bytes the CLI needs
          "skills_rel"  the native skills directory relative to HOME
          "config_env"  with CONFIG_ROOT (glove exec, whose HOME is an empty
                        tmpfs): the variables that point the CLI's
                        configuration directory at CONFIG_ROOT/<its HOME
                        relative path>, so a SKILL.md prepared there is found
        With --mcp=ENDPOINT (codex, claude-code, copilot, opencode; pi has no
        MCP client): the task asks for MCP tool calls and the CLI is given
        the MCP server "glove" at Glove's in-sandbox endpoint (`glove run
        --mcp-endpoint ENDPOINT`), written with the placeholders
        @GLOVE_MCP_COMMAND@ / @GLOVE_MCP_URL@: run the executable through
        tests/agents/mcp-launch.sh, which replaces them with the variables'
        values inside the sandbox.
"""
import json
import sys

TASK = "Write the glove proof file into the workspace."
PATH = "PATH=/usr/bin:/bin"
MIB = 1 << 20


MCP_TASK = "Call the glove echo tool twice: once allowed, once to be refused."


def mcp_server(cli, endpoint):
    """CLI's configuration of the MCP server "glove" at Glove's in-sandbox
    endpoint (docs/agents.md, "MCP servers through Glove"), with the
    placeholders @GLOVE_MCP_COMMAND@ and @GLOVE_MCP_URL@ that
    mcp-launch.sh replaces with the variables' values inside the sandbox."""
    cmd, url = "@GLOVE_MCP_COMMAND@", "@GLOVE_MCP_URL@"
    if cli == "codex":
        return ['mcp_servers.glove.command="%s"' % cmd] if endpoint == "command" else \
            ['mcp_servers.glove.url="%s"' % url]
    if cli == "claude-code":
        return {"type": "stdio", "command": cmd} if endpoint == "command" else {"type": "http", "url": url}
    if cli == "copilot":
        return {"type": "local", "command": cmd, "args": [], "tools": ["*"]} if endpoint == "command" else \
            {"type": "http", "url": url, "tools": ["*"]}
    if cli == "opencode":
        return {"type": "local", "command": [cmd]} if endpoint == "command" else {"type": "remote", "url": url}
    raise SystemExit("%s has no MCP client" % cli)


def spec(cli, base, ca, mcp=None):
    s = base_spec(cli, base, ca)
    if mcp is None:
        return s
    task, srv = s["arguments"].index(TASK), mcp_server(cli, mcp)
    s["arguments"][task] = MCP_TASK
    if cli == "codex":
        s["arguments"][task:task] = ["-c", srv[0]]
    elif cli == "claude-code":
        s["arguments"] = ["-p", MCP_TASK, "--allowedTools", "mcp__glove", "--output-format", "text",
                          "--strict-mcp-config", "--mcp-config", json.dumps({"mcpServers": {"glove": srv}})]
        # MCP tools offered directly, not behind its ToolSearch tool.
        s["environment"].append("ENABLE_TOOL_SEARCH=false")
    elif cli == "copilot":
        s["arguments"] += ["--additional-mcp-config", json.dumps({"mcpServers": {"glove": srv}})]
    elif cli == "opencode":
        env = s["environment"]
        i = next(i for i, kv in enumerate(env) if kv.startswith("OPENCODE_CONFIG_CONTENT="))
        cfg = json.loads(env[i].split("=", 1)[1])
        cfg["mcp"] = {"glove": srv}
        env[i] = "OPENCODE_CONFIG_CONTENT=" + json.dumps(cfg, sort_keys=True, separators=(",", ":"))
    return s


def base_spec(cli, base, ca):
    if cli == "codex":
        return {
            "executable": "codex",
            "arguments": ["exec", "--skip-git-repo-check", "-m", "fake-model",
                          "--dangerously-bypass-approvals-and-sandbox",
                          "-c", "model_provider=fake", "-c", "model_providers.fake.name=fake",
                          "-c", 'model_providers.fake.base_url="%s/v1"' % base,
                          "-c", "model_providers.fake.env_key=FAKE_API_KEY",
                          "-c", "model_providers.fake.wire_api=responses", TASK],
            "environment": [PATH, "SHELL=/bin/bash", "CODEX_CA_CERTIFICATE=" + ca, "FAKE_API_KEY=fake-key"],
            "limits": {"memory_bytes": 768 * MIB, "pids": 128, "disk_bytes": 256 * MIB},
            "skills_rel": ".codex/skills", "config": ("CODEX_HOME", ".codex"),
        }
    if cli == "claude-code":
        return {
            "executable": "claude",
            "arguments": ["-p", TASK, "--allowedTools", "Bash", "--output-format", "text"],
            "environment": [PATH, "SHELL=/bin/bash", "ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=fake-key",
                            "NODE_EXTRA_CA_CERTS=" + ca, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"],
            "limits": {"memory_bytes": 768 * MIB, "pids": 128, "disk_bytes": 256 * MIB},
            "skills_rel": ".claude/skills", "config": ("CLAUDE_CONFIG_DIR", ".claude"),
        }
    if cli == "pi":
        # The built-in azure-openai-responses provider takes its endpoint
        # from the environment: no models.json in the private home needed.
        return {
            "executable": "pi",
            "arguments": ["-p", "--no-session", "--provider", "azure-openai-responses", "--model", "gpt-4o-mini",
                          TASK],
            "environment": [PATH, "SHELL=/bin/bash", "AZURE_OPENAI_BASE_URL=%s/v1" % base,
                            "AZURE_OPENAI_API_KEY=fake-key", "NODE_EXTRA_CA_CERTS=" + ca],
            "limits": {"memory_bytes": 768 * MIB, "pids": 128, "disk_bytes": 256 * MIB},
            "skills_rel": ".pi/agent/skills", "config": ("PI_CODING_AGENT_DIR", ".pi/agent"),
        }
    if cli == "copilot":
        # It unpacks about 234 MB into ~/.cache/copilot on every run: the
        # home tmpfs (disk_bytes) and the memory it is charged to must hold it.
        # COPILOT_OFFLINE=true: no GitHub sign-in, telemetry or update
        # traffic. Without it, a BYOK turn first tries api.github.com (the
        # proxy refuses it) and retries after 5 s and 10 s before its first
        # model request, while a metrics client re-resolves sign-in about 40
        # times a second: 22-29 s wall and 36-40 s of CPU per turn instead of
        # 3-4 s and 4 s. The model requests still go through the proxy.
        return {
            "executable": "copilot",
            "arguments": ["-p", TASK, "--allow-all-tools"],
            "environment": [PATH, "SHELL=/bin/bash", "COPILOT_PROVIDER_BASE_URL=%s/v1" % base,
                            "COPILOT_PROVIDER_API_KEY=fake-key", "COPILOT_MODEL=fake-model",
                            "NODE_EXTRA_CA_CERTS=" + ca, "COPILOT_OFFLINE=true"],
            "limits": {"memory_bytes": 1024 * MIB, "pids": 128, "disk_bytes": 512 * MIB},
            "skills_rel": ".copilot/skills", "config": ("COPILOT_HOME", ".copilot"),
        }
    if cli == "opencode":
        cfg = {"$schema": "https://opencode.ai/config.json",
               "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "fake",
                                     "options": {"baseURL": base + "/v1", "apiKey": "{env:FAKE_API_KEY}"},
                                     "models": {"fake-model": {"name": "fake-model", "tool_call": True}}}},
               "permission": {"edit": "allow", "bash": "allow"}, "autoupdate": False, "share": "disabled"}
        return {
            "executable": "opencode",
            "arguments": ["run", "--model", "fake/fake-model", TASK],
            "environment": [PATH, "SHELL=/bin/bash", "FAKE_API_KEY=fake-key", "NODE_EXTRA_CA_CERTS=" + ca,
                            "OPENCODE_CONFIG_CONTENT=" + json.dumps(cfg, sort_keys=True, separators=(",", ":"))],
            "limits": {"memory_bytes": 1024 * MIB, "pids": 128, "disk_bytes": 256 * MIB},
            "skills_rel": ".config/opencode/skills", "config": ("XDG_CONFIG_HOME", ".config"),
        }
    raise SystemExit("unknown CLI " + cli)


def main():
    a = sys.argv[1:]
    mcp = None
    if len(a) >= 2 and a[0] == "spec" and a[1].startswith("--mcp="):
        mcp = a.pop(1)[len("--mcp="):]
        if mcp not in ("command", "http"):
            raise SystemExit("--mcp= takes command or http")
    sys.argv[1:] = a
    if len(sys.argv) not in (5, 6) or sys.argv[1] != "spec":
        raise SystemExit(__doc__)
    s = spec(sys.argv[2], sys.argv[3], sys.argv[4], mcp)
    name, rel = s.pop("config")
    if len(sys.argv) == 6:
        s["config_env"] = ["%s=%s/%s" % (name, sys.argv[5], rel)]
    print(json.dumps(s, sort_keys=True))


if __name__ == "__main__":
    main()
