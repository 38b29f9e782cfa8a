//! The `search` tool: case-insensitive text search across the files of the root.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::fs::{MAX_FILE_BYTES, Root};

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SearchArgs {
    /// Text to look for (case-insensitive).
    pub(crate) query: String,
    /// Only search files whose relative path starts with this prefix.
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// Most matches to return (default 50, at most 500).
    #[serde(default)]
    pub(crate) max_results: Option<u32>,
}

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Match {
    /// File path relative to the root.
    pub(crate) path: String,
    /// 1-based line number.
    pub(crate) line: u32,
    /// The line (trimmed, at most 200 characters).
    pub(crate) text: String,
}

/// Result of `search`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchOutput {
    /// Matching lines in path order.
    pub(crate) matches: Vec<Match>,
    /// Number of files searched.
    pub(crate) files_searched: u32,
    /// Whether more matches exist than were returned.
    pub(crate) truncated: bool,
}

/// Runs a search; `cancelled` is polled between files.
pub(crate) fn search(root: &Root, args: &SearchArgs, cancelled: &dyn Fn() -> bool) -> SearchOutput {
    let needle = args.query.to_lowercase();
    let limit = args.max_results.unwrap_or(50).clamp(1, 500) as usize;
    let mut out = SearchOutput {
        matches: Vec::new(),
        files_searched: 0,
        truncated: false,
    };
    for rel in root.files() {
        if cancelled() {
            break;
        }
        if args.path.as_deref().is_some_and(|p| !rel.starts_with(p)) {
            continue;
        }
        let Ok(path) = root.resolve(&rel) else {
            continue;
        };
        if path.metadata().map(|m| m.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        out.files_searched += 1;
        for (i, line) in text.lines().enumerate() {
            if line.to_lowercase().contains(&needle) {
                if out.matches.len() == limit {
                    out.truncated = true;
                    return out;
                }
                let trimmed: String = line.trim().chars().take(200).collect();
                out.matches.push(Match {
                    path: rel.clone(),
                    line: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    text: trimmed,
                });
            }
        }
    }
    out
}
