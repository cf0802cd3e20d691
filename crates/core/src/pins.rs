//! The seam between tool-definition pins and where they are kept: [`PinRecords`] is what
//! the registry's pin checks (`mcp_host_registry::pins`: hashing, comparing, drift diffs)
//! read and write, and what the store's pin file (`mcp_host_store::pins::PinStore`)
//! implements. It lives here so that neither crate depends on the other: the registry stays
//! free of I/O, and the store of catalogue logic.

/// One pinned definition, as kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinRecord {
    /// The definition's hash (`mcp_host_registry::pins::definition_hash`).
    pub hash: String,
    /// The definition as canonical JSON text (sorted keys), for drift diffs.
    pub definition: String,
}

/// Pins one server may have before those of tools it no longer lists are forgotten: twice
/// the tools one listing keeps. Pins are kept for tools that went away (one that comes back
/// changed is a drift, not a new tool), but a server that lists new names at every
/// `list_changed` would otherwise grow the pin file, and every start's read of it, without
/// end. Past the bound, a tool that went away and comes back is pinned anew.
pub const MAX_PINS_PER_SERVER: usize = 10_000;

/// Pinned hashes: server, then tool, then the hash.
pub type PinnedHashes =
    std::collections::HashMap<String, std::collections::HashMap<String, String>>;

/// Where pins are kept: at most one per (server, tool).
pub trait PinRecords {
    type Error;

    /// The pin of (server, tool), if there is one.
    fn pinned(
        &self,
        server: &str,
        tool: &str,
    ) -> impl Future<Output = Result<Option<PinRecord>, Self::Error>> + Send;

    /// Every pin's hash, by server and tool: a catalogue checks all its tools against one
    /// read, and asks [`PinRecords::pinned`] only for what differs.
    fn hashes(&self) -> impl Future<Output = Result<PinnedHashes, Self::Error>> + Send;

    /// Pins `record` for (server, tool), replacing an earlier pin.
    fn pin(
        &self,
        server: &str,
        tool: &str,
        record: &PinRecord,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Forgets the pins of `server` for every tool not in `listed`: called only past
    /// [`MAX_PINS_PER_SERVER`], when a server has renamed its tools over and over.
    fn forget_unlisted(
        &self,
        server: &str,
        listed: &[&str],
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
