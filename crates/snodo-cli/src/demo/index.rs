//! The `index_folder` tool: a long, task-capable walk of the served folder that reports
//! its progress (a task's `statusMessage`) and returns a summary.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use snodo::{HandlerError, IntoToolResult, Json, RequestContext, ToolResult};

use super::errors::tool_error;
use super::fs::{Refusal, Root};

/// Files read between two progress reports (and cancellation checks).
const BATCH: usize = 64;

/// Arguments of `index_folder`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct IndexArgs {
    /// Only index files whose relative path starts with this prefix.
    #[serde(default)]
    pub(crate) path: Option<String>,
}

/// Totals for one file extension.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct Kind {
    /// Files with the extension.
    pub(crate) files: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Their lines (text files only).
    pub(crate) lines: u64,
}

/// One large file.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Large {
    /// Path relative to the root.
    pub(crate) path: String,
    /// Size in bytes.
    pub(crate) bytes: u64,
}

/// Result of `index_folder`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct IndexOutput {
    /// Files indexed.
    pub(crate) files: u64,
    /// Total bytes.
    pub(crate) bytes: u64,
    /// Total lines of the text files.
    pub(crate) lines: u64,
    /// Files that are not UTF-8 text.
    pub(crate) binary_files: u64,
    /// Totals per extension (`""` for none).
    pub(crate) by_extension: BTreeMap<String, Kind>,
    /// The ten largest files.
    pub(crate) largest: Vec<Large>,
}

/// Adds one file; one that vanished or cannot be read is skipped, but a system short of
/// resources stops the walk (an index that silently misses files would be wrong).
fn add(out: &mut IndexOutput, root: &Root, path: &str) -> Result<(), Refusal> {
    let real = match root.resolve(path) {
        Ok(real) => real,
        Err(unavailable @ Refusal::Unavailable(_)) => return Err(unavailable),
        Err(_) => return Ok(()),
    };
    let bytes = match std::fs::read(&real) {
        Ok(bytes) => bytes,
        Err(e) => match Refusal::from_io(&e) {
            unavailable @ Refusal::Unavailable(_) => return Err(unavailable),
            _ => return Ok(()),
        },
    };
    let size = bytes.len() as u64;
    let ext = path
        .rsplit_once('.')
        .filter(|(_, e)| !e.contains('/'))
        .map_or("", |(_, e)| e)
        .to_ascii_lowercase();
    let kind = out.by_extension.entry(ext).or_default();
    kind.files += 1;
    kind.bytes += size;
    out.files += 1;
    out.bytes += size;
    match std::str::from_utf8(&bytes) {
        Ok(text) => {
            let lines = text.lines().count() as u64;
            kind.lines += lines;
            out.lines += lines;
        }
        Err(_) => out.binary_files += 1,
    }
    out.largest.push(Large {
        path: path.to_owned(),
        bytes: size,
    });
    out.largest.sort_by_key(|l| std::cmp::Reverse(l.bytes));
    out.largest.truncate(10);
    Ok(())
}

/// Indexes the folder in batches, reporting progress between them.
pub(crate) async fn index(
    root: Root,
    args: IndexArgs,
    ctx: RequestContext,
) -> Result<ToolResult, HandlerError> {
    let prefix = args.path.unwrap_or_default();
    let listing = root.clone();
    let files = tokio::task::spawn_blocking(move || listing.files())
        .await
        .map_err(|_| HandlerError::new("listing the folder failed"))?;
    let files: Vec<String> = match files {
        Ok(files) => files
            .into_iter()
            .filter(|f| f.starts_with(&prefix))
            .collect(),
        Err(refusal) => return Ok(tool_error(refusal, "the folder")),
    };
    let total = files.len();
    let mut out = IndexOutput::default();
    for (done, batch) in files.chunks(BATCH).enumerate() {
        if ctx.is_cancelled() {
            return Err(HandlerError::new("indexing was cancelled"));
        }
        let (root, batch, mut part) = (root.clone(), batch.to_vec(), std::mem::take(&mut out));
        let indexed = tokio::task::spawn_blocking(move || {
            for path in &batch {
                add(&mut part, &root, path).map_err(|r| (r, path.clone()))?;
            }
            Ok(part)
        })
        .await
        .map_err(|_| HandlerError::new("indexing failed"))?;
        out = match indexed {
            Ok(part) => part,
            Err((refusal, path)) => return Ok(tool_error(refusal, &path)),
        };
        let seen = ((done + 1) * BATCH).min(total);
        let message = format!(
            "indexed {seen} of {total} files ({} MiB)",
            out.bytes / (1024 * 1024)
        );
        ctx.progress(seen as f64, Some(total as f64), Some(&message))
            .await;
    }
    Json(out).into_tool_result()
}
