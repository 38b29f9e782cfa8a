//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): Agent Skills
//! served as `skill://` resources, enumerated by `skills/list`, fetched by `skills/get`,
//! browsed by `resources/directory/read` (feature `skills`).
//!
//! A skill is a folder holding a `SKILL.md` whose YAML frontmatter has at least `name`
//! (equal to the folder's name) and `description`. Each of its files is a resource
//! `skill://<skill-path>/<file>`, read through the ordinary `resources/read`; a skill's
//! entry lists every file with its SHA-256 digest and size, so a host can verify what
//! it reads. The files are read once, when the [`Skills`] value is made: digests and
//! contents always agree.
//!
//! The extension is declared under `capabilities.extensions`, which only 2026-07-28 has;
//! the methods are served only by dialects that have extensions.

mod builder;
mod frontmatter;
mod load;
mod router;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

pub use load::SkillsError;

use crate::model::ResourceContents;
use crate::runtime::resource::Resource;

/// The extension's identifier (the key under `capabilities.extensions`).
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";

/// The `mimeType` of a directory in `resources/directory/read`.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// At most this many files per skill (SKILL.md included); a larger skill is refused.
pub const MAX_FILES_PER_SKILL: usize = 512;

/// At most this many bytes per skill, summed over its files; a larger skill is refused.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// One file of a skill.
#[derive(Debug)]
struct SkillFile {
    uri: String,
    /// The path inside the skill (`SKILL.md`, `references/FORMS.md`).
    path: String,
    bytes: Arc<[u8]>,
    digest: String,
    mime_type: &'static str,
}

/// One skill: its path, frontmatter and files.
#[derive(Debug)]
struct Skill {
    uri: String,
    frontmatter: Map<String, Value>,
    files: Vec<SkillFile>,
}

impl Skill {
    /// The skill entry of `skills/list` and `skills/get`.
    fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|f| json!({"uri": f.uri, "digest": f.digest, "size": f.bytes.len()}))
            .collect();
        json!({"uri": self.uri, "frontmatter": self.frontmatter, "resources": resources})
    }
}

/// A set of skills, served by a runtime given it with
/// [`RuntimeBuilder::skills`](crate::RuntimeBuilder::skills) or
/// [`RuntimeBuilder::skills_dir`](crate::RuntimeBuilder::skills_dir).
#[derive(Debug, Default)]
pub struct Skills {
    skills: Vec<Skill>,
    /// Every skill entry, serialised, in `skills/list` order.
    entries: Vec<Value>,
    /// Directory URI → its direct children (as `Resource` objects).
    directories: BTreeMap<String, Vec<Value>>,
    /// Binds `skills/list` cursors to this set.
    hash: u64,
    /// Why skills found in a folder were left out.
    skipped: Vec<String>,
}

/// The MIME type of a skill file, by its extension.
fn mime_for(path: &str, text: bool) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ if text => "text/plain",
        _ => "application/octet-stream",
    }
}

/// Percent-encodes what is not an RFC 3986 unreserved character or `/`: a path as it
/// goes into a `skill://` or `file://` URI.
///
/// ```
/// assert_eq!(snodo::skills::encode_path("a b/ç.md"), "a%20b/%C3%A7.md");
/// ```
#[must_use]
pub fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Skills {
    /// No skills; add some with [`skill`](Self::skill).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Every skill under `root`: each folder that holds a `SKILL.md` (hidden folders,
    /// `target` and `node_modules` are not searched; symbolic links are not followed).
    /// A skill that breaks the format's rules is left out with a warning (see
    /// [`skipped`](Self::skipped)); `Err` only when `root` cannot be read.
    pub fn from_dir(root: impl AsRef<std::path::Path>) -> Result<Self, SkillsError> {
        let mut skills = Self::new();
        for found in load::find(root.as_ref())? {
            match found {
                Ok((path, files)) => {
                    if let Err(e) = skills.add(&path, files) {
                        tracing::warn!(skill = %path, reason = %e, "skill left out");
                        skills.skipped.push(format!("{path}: {e}"));
                    }
                }
                Err(e) => {
                    tracing::warn!(reason = %e, "skill left out");
                    skills.skipped.push(e);
                }
            }
        }
        Ok(skills)
    }

    /// Adds the skill at `path` (`pdf-processing`, or nested: `acme/pdf-processing`) from
    /// its files (path inside the skill → bytes; one must be `SKILL.md`).
    pub fn skill<P, B>(
        mut self,
        path: &str,
        files: impl IntoIterator<Item = (P, B)>,
    ) -> Result<Self, SkillsError>
    where
        P: Into<String>,
        B: Into<Vec<u8>>,
    {
        let files = files
            .into_iter()
            .map(|(p, b)| (p.into(), b.into()))
            .collect();
        self.add(path, files)
            .map_err(|reason| SkillsError::Invalid {
                skill: path.to_owned(),
                reason,
            })?;
        Ok(self)
    }

    fn add(&mut self, path: &str, mut files: Vec<(String, Vec<u8>)>) -> Result<(), String> {
        let path = path.trim_matches('/');
        let segments: Vec<&str> = path.split('/').collect();
        let name = segments.last().copied().unwrap_or_default();
        if !frontmatter::valid_name(name) {
            return Err(format!(
                "the skill name {name:?} breaks the naming rules (1-64 of a-z 0-9 -, no leading, trailing or doubled -)"
            ));
        }
        if segments
            .iter()
            .any(|s| s.is_empty() || *s == "." || *s == "..")
        {
            return Err(format!(
                "the skill path {path:?} has an empty or relative segment"
            ));
        }
        if files.len() > MAX_FILES_PER_SKILL {
            return Err(format!(
                "{} files: more than {MAX_FILES_PER_SKILL}",
                files.len()
            ));
        }
        let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        if total > MAX_SKILL_BYTES {
            return Err(format!("{total} bytes: more than {MAX_SKILL_BYTES}"));
        }
        let manifest = files
            .iter()
            .find(|(p, _)| p == "SKILL.md")
            .ok_or("no SKILL.md")?;
        let text = std::str::from_utf8(&manifest.1).map_err(|_| "SKILL.md is not UTF-8")?;
        let fm = frontmatter::parse(text)?;
        if fm.get("name").and_then(Value::as_str) != Some(name) {
            return Err(format!(
                "the frontmatter name {} differs from the folder name {name:?}",
                fm.get("name").unwrap_or(&Value::Null)
            ));
        }
        let base = format!("skill://{}", encode_path(path));
        let uri = format!("{base}/SKILL.md");
        if self.skills.iter().any(|s| s.uri == uri) {
            return Err(format!("{uri} is served twice"));
        }
        // SKILL.md first, then the others by path.
        files.sort_by(|a, b| (a.0 != "SKILL.md", &a.0).cmp(&(b.0 != "SKILL.md", &b.0)));
        let mut skill_files = Vec::with_capacity(files.len());
        for (p, bytes) in files {
            if p.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
                return Err(format!(
                    "the file path {p:?} has an empty or relative segment"
                ));
            }
            let text = std::str::from_utf8(&bytes).is_ok();
            let digest = format!("sha256:{:x}", Sha256::digest(&bytes));
            skill_files.push(SkillFile {
                uri: format!("{base}/{}", encode_path(&p)),
                mime_type: mime_for(&p, text),
                path: p,
                bytes: Arc::from(bytes),
                digest,
            });
        }
        let skill = Skill {
            uri,
            frontmatter: fm,
            files: skill_files,
        };
        self.index_directories(&base, &skill);
        self.entries.push(skill.entry());
        self.skills.push(skill);
        self.rehash();
        Ok(())
    }

    /// Records the skill's folder and subfolders with their direct children.
    fn index_directories(&mut self, base: &str, skill: &Skill) {
        self.directories.entry(base.to_owned()).or_default();
        for f in &skill.files {
            let mut dir = base.to_owned();
            let parts: Vec<&str> = f.path.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                let child = format!("{dir}/{}", encode_path(part));
                let children = self.directories.entry(dir.clone()).or_default();
                if i + 1 == parts.len() {
                    children.push(json!({
                        "uri": f.uri, "name": part, "mimeType": f.mime_type, "size": f.bytes.len()
                    }));
                } else if !children.iter().any(|c| c["uri"] == child) {
                    children
                        .push(json!({"uri": child, "name": part, "mimeType": DIRECTORY_MIME_TYPE}));
                }
                dir = child;
            }
        }
    }

    fn rehash(&mut self) {
        let mut h = Sha256::new();
        for e in &self.entries {
            h.update(e.to_string());
        }
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        self.hash = u64::from_be_bytes(first);
    }

    /// How many skills.
    #[must_use]
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The `SKILL.md` URIs, in listing order.
    pub fn uris(&self) -> impl Iterator<Item = &str> {
        self.skills.iter().map(|s| s.uri.as_str())
    }

    /// Why skills found by [`from_dir`](Self::from_dir) were left out.
    #[must_use]
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Every file as a resource: `SKILL.md` named and described by its frontmatter,
    /// `text/markdown`; the others named by their path in the skill.
    pub(crate) fn resources(&self) -> Vec<Resource> {
        let mut out = Vec::new();
        for s in &self.skills {
            for f in &s.files {
                let mut r = if f.path == "SKILL.md" {
                    let fm = |k: &str| {
                        s.frontmatter
                            .get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    Resource::new(&f.uri, fm("name")).description(fm("description"))
                } else {
                    Resource::new(&f.uri, &f.path)
                };
                let bytes = Arc::clone(&f.bytes);
                let mime = f.mime_type;
                r = r.mime_type(mime).reader(move |req, _ctx| {
                    let contents = match std::str::from_utf8(&bytes) {
                        Ok(text) => ResourceContents::text(req.uri, text),
                        Err(_) => ResourceContents::blob(req.uri, &bytes),
                    };
                    async move { Ok(vec![contents.mime_type(mime)]) }
                });
                out.push(r);
            }
        }
        out
    }

    /// The entries, in listing order.
    pub(crate) fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// The entry of the skill whose `SKILL.md` is `uri`.
    pub(crate) fn entry(&self, uri: &str) -> Option<&Value> {
        self.skills
            .iter()
            .position(|s| s.uri == uri)
            .map(|i| &self.entries[i])
    }

    /// The direct children of the directory `uri` (a skill's folder or one inside it).
    pub(crate) fn directory(&self, uri: &str) -> Option<&[Value]> {
        self.directories.get(uri).map(Vec::as_slice)
    }

    /// Binds `skills/list` cursors to exactly this set.
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "---\nname: pdf-processing\ndescription: Fill PDFs\n---\nSkill body.\n";

    #[test]
    fn entries_and_directories() {
        let s = Skills::new()
            .skill(
                "pdf-processing",
                [("references/FORMS.md", "forms"), ("SKILL.md", MD)],
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let e = &s.entries()[0];
        assert_eq!(e["uri"], "skill://pdf-processing/SKILL.md");
        assert_eq!(e["resources"][0]["uri"], "skill://pdf-processing/SKILL.md");
        assert_eq!(e["resources"][0]["size"], MD.len());
        assert!(
            e["resources"][1]["digest"]
                .as_str()
                .is_some_and(|d| d.len() == 71 && d.starts_with("sha256:"))
        );
        let root = s.directory("skill://pdf-processing").unwrap_or_default();
        assert_eq!(root.len(), 2);
        assert_eq!(root[1]["mimeType"], DIRECTORY_MIME_TYPE);
        assert_eq!(
            s.directory("skill://pdf-processing/references")
                .map(<[Value]>::len),
            Some(1)
        );
        assert!(s.directory("skill://pdf-processing/SKILL.md").is_none());
    }

    #[test]
    fn refusals() {
        let bad = |path: &str, md: &str| Skills::new().skill(path, [("SKILL.md", md)]).is_err();
        assert!(bad("other-name", MD));
        assert!(bad("PDF", MD));
        assert!(bad("pdf-processing", "no frontmatter"));
        assert!(
            Skills::new()
                .skill("pdf-processing", [("README.md", "x")])
                .is_err()
        );
        assert!(
            Skills::new()
                .skill("pdf-processing", [("SKILL.md", MD), ("../escape", "x")])
                .is_err()
        );
        assert!(
            Skills::new()
                .skill("acme/pdf-processing", [("SKILL.md", MD)])
                .is_ok()
        );
    }
}
