"""`sessiondag acp`: an Agent Client Protocol agent on stdio, a thin adapter over the daemon.

It speaks ACP (newline-delimited JSON-RPC, the official `agent-client-protocol` SDK) to an editor and
the sessiondag wire protocol to the daemon (`sessiondag_client.connect(auto_start=True)`): every turn
runs on the daemon's agent loop through `agent/prompt`, so ACP clients, the editor plugins and the CLI
all see one live session. Imports: the SDK, the Python client and the wire protocol, never daemon
internals.

    transport.py        stdio NDJSON transport that answers malformed input with JSON-RPC errors
    content.py          ACP content blocks <-> daemon content / node outputs
    updates.py          daemon events and branch nodes -> ACP session/update payloads
    turns.py            per-session state: the running prompt, sub-agents, remembered permissions
    agent.py            the ACP Agent: initialize, session/*, prompt, cancel, modes, config options
    connection.py       the SDK's agent connection plus the routes its router lacks (session/delete)
    modes.py            session modes: ask / auto-edit / plan (what permission requests get)
    config_options.py   the model config option (category model_config): the session's provider
    commands.py         slash commands (available_commands_update): /retry /branches /checkout /usage
    daemon_requests.py  the daemon's requests during a turn (permissions, client fs) -> the ACP client
    extensions.py       the `_sessiondag/` extension methods
    errors.py           daemon errors -> ACP (JSON-RPC) errors carrying sessiondag's typed data
    agent_api.py        the agent as the modules below agent.py use it (a Protocol: no import cycle)
    daemon_calls.py     what asking the daemon takes: `call(method, params)` (a Protocol)
"""
