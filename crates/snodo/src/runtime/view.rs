//! What one dialect publishes of a catalogue: its lists, shaped for the dialect and
//! serialised, and the server info. Built per dialect by the first request that needs it
//! (`Catalogue::view`), so a process pays only for the dialects its clients speak.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::Dialect;

/// One list as a dialect publishes it: definitions in order, and a hash that binds
/// cursors to exactly this list.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) items: Vec<Value>,
    /// The same items serialised, for building pages without re-serialising.
    pub(crate) raw: Vec<Arc<str>>,
    /// What the hash covers besides the items: the dialect's version and the method.
    salt: (&'static str, &'static str),
    /// Computed when first needed (a cursor issued or read, a catalogue compared): a list
    /// that fits one page never pays for it, nor does the process start.
    hash: OnceLock<u64>,
    /// The first page's result members, serialised by the first request that needs it
    /// (the router's page size is fixed for the runtime).
    pub(crate) first_page: OnceLock<Arc<str>>,
}

impl Listing {
    fn new(items: Vec<Value>, dialect: &Dialect, method: &'static str) -> Self {
        let raw: Vec<Arc<str>> = items.iter().map(|i| Arc::from(i.to_string())).collect();
        Self {
            items,
            raw,
            salt: (dialect.version(), method),
            hash: OnceLock::new(),
            first_page: OnceLock::new(),
        }
    }

    /// A hash of exactly this list (SHA-256 of the dialect, the method and the items, cut
    /// to 64 bits): the same on every instance that serves the same catalogue, so a cursor
    /// one instance issued is good at another.
    pub(crate) fn hash(&self) -> u64 {
        *self.hash.get_or_init(|| {
            let mut h = Sha256::new();
            h.update(self.salt.0);
            h.update(self.salt.1);
            for item in &self.raw {
                h.update(item.as_bytes());
            }
            let digest = h.finalize();
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            u64::from_be_bytes(first)
        })
    }
}

/// Everything a dialect publishes, computed at build time.
#[derive(Debug)]
pub(crate) struct DialectView {
    pub(crate) tools: Listing,
    pub(crate) prompts: Listing,
    pub(crate) resources: Listing,
    pub(crate) templates: Listing,
    pub(crate) server_info: Value,
    /// `{"io.modelcontextprotocol/serverInfo": …}` serialised (2026-07-28 results).
    pub(crate) result_meta: Arc<str>,
}

impl DialectView {
    /// Shapes the unshaped definitions (tools, prompts, resources, templates, in that
    /// order) and the server info for `dialect`.
    pub(super) fn new(
        dialect: &'static Dialect,
        mut server_info: Map<String, Value>,
        [tools, prompts, resources, templates]: [Vec<Map<String, Value>>; 4],
    ) -> Self {
        let shape_with = |items: Vec<Map<String, Value>>,
                          shape: fn(&Dialect, &mut Map<String, Value>)|
         -> Vec<Value> {
            items
                .into_iter()
                .map(|mut m| {
                    shape(dialect, &mut m);
                    Value::Object(m)
                })
                .collect()
        };
        let shaped = |items| shape_with(items, Dialect::shape_component);
        dialect.shape_implementation(&mut server_info);
        Self {
            tools: Listing::new(
                shape_with(tools, Dialect::shape_tool),
                dialect,
                "tools/list",
            ),
            prompts: Listing::new(shaped(prompts), dialect, "prompts/list"),
            resources: Listing::new(shaped(resources), dialect, "resources/list"),
            templates: Listing::new(shaped(templates), dialect, "resources/templates/list"),
            result_meta: Arc::from(
                serde_json::json!({ crate::protocol::meta::SERVER_INFO_KEY: &server_info })
                    .to_string(),
            ),
            server_info: Value::Object(server_info),
        }
    }
}
