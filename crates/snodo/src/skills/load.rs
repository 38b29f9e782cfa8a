//! Finding skills in a folder.

use std::fs;
use std::path::Path;

use super::{MAX_FILES_PER_SKILL, MAX_SKILL_BYTES};

/// Why skills could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// The folder cannot be read.
    #[error("cannot read the skills folder {path}: {source}")]
    Io {
        /// The folder.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
    /// A skill breaks the format's rules.
    #[error("skill {skill:?}: {reason}")]
    Invalid {
        /// The skill's path.
        skill: String,
        /// What is wrong.
        reason: String,
    },
}

/// How deep below the root skills are looked for.
const MAX_DEPTH: usize = 8;

/// A skill found: its path below the root and its files, or why it was refused.
pub(super) type Found = Result<(String, Vec<(String, Vec<u8>)>), String>;

/// Folders never searched for skills.
fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

/// Every folder below `root` holding a `SKILL.md`, with its files.
pub(super) fn find(root: &Path) -> Result<Vec<Found>, SkillsError> {
    let io = |source| SkillsError::Io {
        path: root.display().to_string(),
        source,
    };
    fs::read_dir(root).map_err(io)?;
    let mut out = Vec::new();
    walk(root, "", 0, &mut out);
    Ok(out)
}

fn walk(dir: &Path, rel: &str, depth: usize, out: &mut Vec<Found>) {
    if dir.join("SKILL.md").is_file() && !rel.is_empty() {
        out.push(read_skill(dir, rel));
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !skipped_dir(n))
        .collect();
    names.sort();
    for name in names {
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        walk(&dir.join(&name), &child_rel, depth + 1, out);
    }
}

/// Every regular file below a skill's folder (no symbolic links, no hidden files).
fn read_skill(dir: &Path, rel: &str) -> Found {
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, prefix)) = stack.pop() {
        let entries = fs::read_dir(&d).map_err(|e| format!("{rel}: {e}"))?;
        for entry in entries.filter_map(Result::ok) {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_dir() {
                stack.push((entry.path(), path));
            } else if kind.is_file() {
                if files.len() >= MAX_FILES_PER_SKILL {
                    return Err(format!("{rel}: more than {MAX_FILES_PER_SKILL} files"));
                }
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                total += len;
                if total > MAX_SKILL_BYTES {
                    return Err(format!("{rel}: more than {MAX_SKILL_BYTES} bytes"));
                }
                let bytes = fs::read(entry.path()).map_err(|e| format!("{rel}/{path}: {e}"))?;
                files.push((path, bytes));
            }
        }
    }
    Ok((rel.to_owned(), files))
}
