//! The `search` tool: case-insensitive text search across the files of the root.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use snodo::{HandlerError, IntoToolResult, Json, RequestContext, ToolResult};

use super::errors::tool_error;
use super::fs::{Refusal, Root};

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

/// The `search` tool's handler: the walk runs on a blocking thread and stops when the
/// call is cancelled; a folder or file the system cannot read now fails the call with a
/// retryable tool error rather than answering fewer matches.
pub(crate) async fn run(
    root: Root,
    args: SearchArgs,
    ctx: RequestContext,
) -> Result<ToolResult, HandlerError> {
    if args.query.trim().is_empty() {
        return Err(HandlerError::new("query must not be empty"));
    }
    let cancel = ctx.cancellation().clone();
    let out = tokio::task::spawn_blocking(move || search(&root, &args, &|| cancel.is_cancelled()))
        .await
        .map_err(|_| HandlerError::new("search failed"))?;
    match out {
        Ok(out) => Json(out).into_tool_result(),
        Err((refusal, what)) => Ok(tool_error(refusal, &what)),
    }
}

/// Runs a search; `cancelled` is polled between files. A file that vanished, is too
/// large or is not text is skipped; a system short of resources stops the search
/// (with what it could not read).
pub(crate) fn search(
    root: &Root,
    args: &SearchArgs,
    cancelled: &dyn Fn() -> bool,
) -> Result<SearchOutput, (Refusal, String)> {
    let needle = args.query.to_lowercase();
    let limit = args.max_results.unwrap_or(50).clamp(1, 500) as usize;
    let mut out = SearchOutput {
        matches: Vec::new(),
        files_searched: 0,
        truncated: false,
    };
    let files = root.files().map_err(|r| (r, "the folder".to_owned()))?;
    for rel in files {
        if cancelled() {
            break;
        }
        if args.path.as_deref().is_some_and(|p| !rel.starts_with(p)) {
            continue;
        }
        let path = match root.resolve(&rel) {
            Ok(path) => path,
            Err(unavailable @ Refusal::Unavailable(_)) => return Err((unavailable, rel)),
            Err(_) => continue,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => match Refusal::from_io(&e) {
                unavailable @ Refusal::Unavailable(_) => return Err((unavailable, rel)),
                _ => continue,
            },
        };
        out.files_searched += 1;
        for (i, line) in text.lines().enumerate() {
            if line.to_lowercase().contains(&needle) {
                if out.matches.len() == limit {
                    out.truncated = true;
                    return Ok(out);
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
    Ok(out)
}
