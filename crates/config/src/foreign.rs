//! Config files of other MCP hosts, named as such (with how to convert them) instead of being
//! reported as broken JSON: VS Code's `mcp.json` (`"servers"`), Codex's `config.toml`
//! (`[mcp_servers.NAME]`) and goose's `config.yaml` (`extensions:`).

/// The message for a JSON file whose servers sit under VS Code's `servers` key.
pub(crate) const VSCODE: &str = "this is VS Code's mcp.json format (`servers`), which mcp-host does not read; \
     rename `servers` to `mcpServers` (and write VS Code's `${input:NAME}` prompts as `${VAR}` environment references)";

const CODEX: &str = "this is a Codex config.toml (`[mcp_servers.NAME]` tables), not JSON; \
     convert each table to `\"mcpServers\": {\"NAME\": {\"command\": ..., \"args\": [...], \"env\": {...}}}` in a JSON file";

const GOOSE: &str = "this is a goose config.yaml (`extensions:`), not JSON; \
     write each extension as `\"mcpServers\": {\"NAME\": {\"command\": CMD, \"args\": [...], \"env\": {...}}}` \
     (goose's `cmd`, `args` and `envs`) in a JSON file";

/// For text that is not JSON: the 1-based line, key and message naming the other host's
/// format, when the text is recognisably one.
pub(crate) fn recognise(text: &str) -> Option<(usize, &'static str, &'static str)> {
    // Asked only of text that failed to parse as JSON, so a line that opens a TOML table or
    // a YAML key at the margin is enough.
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("[mcp_servers.") || trimmed == "[mcp_servers]" {
            return Some((i + 1, "mcp_servers", CODEX));
        }
        if line.starts_with("extensions:") {
            return Some((i + 1, "extensions", GOOSE));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_and_goose_files_are_recognised_where_their_servers_start() {
        let codex = "model = \"o3\"\n\n[mcp_servers.time]\ncommand = \"uvx\"\n";
        assert_eq!(
            recognise(codex).map(|r| (r.0, r.1)),
            Some((3, "mcp_servers"))
        );
        let goose = "GOOSE_PROVIDER: openai\nextensions:\n  time:\n    cmd: uvx\n";
        assert_eq!(
            recognise(goose).map(|r| (r.0, r.1)),
            Some((2, "extensions"))
        );
        assert_eq!(recognise("{ \"mcpServers\": "), None);
    }
}
