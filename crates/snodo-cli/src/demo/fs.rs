//! Read-only access to one folder: every path is resolved inside the root or refused.

use std::io;
use std::path::{Component, Path, PathBuf};

use snodo::skills::encode_path;

/// Most files listed or searched.
pub(crate) const MAX_FILES: usize = 10_000;
/// Largest file read or searched, in bytes.
pub(crate) const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The exposed folder.
#[derive(Clone, Debug)]
pub(crate) struct Root {
    dir: PathBuf,
}

/// Why a path was refused, or the folder could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a path inside the root (`..`, absolute, symlink escaping the root…).
    Outside,
    /// Nothing there, not a regular file, or hidden (see [`is_hidden`]): a hidden file
    /// is refused exactly as a missing one, so that a guess learns nothing.
    NotFound,
    /// Larger than [`MAX_FILE_BYTES`].
    TooLarge,
    /// The system could not do it now (out of file descriptors or memory): worth a
    /// retry. The text is the system's error.
    Unavailable(String),
    /// Any other system error (permissions, I/O): the text is the system's error.
    Failed(String),
}

impl Refusal {
    /// Classifies a system error met while resolving, listing or reading.
    pub(crate) fn from_io(e: &io::Error) -> Self {
        use rustix::io::Errno;
        match Errno::from_io_error(e) {
            Some(
                Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::NAMETOOLONG | Errno::ISDIR,
            ) => Self::NotFound,
            Some(
                Errno::MFILE
                | Errno::NFILE
                | Errno::NOMEM
                | Errno::NOBUFS
                | Errno::AGAIN
                | Errno::INTR,
            ) => Self::Unavailable(e.to_string()),
            _ if e.kind() == io::ErrorKind::NotFound => Self::NotFound,
            _ if e.kind() == io::ErrorKind::OutOfMemory => Self::Unavailable(e.to_string()),
            _ => Self::Failed(e.to_string()),
        }
    }
}

/// Entries the demo never exposes: dot files and folders (`.env`, `.git`…), build
/// output (`target`) and dependencies (`node_modules`). Left out of listings and
/// search, refused on read.
pub(crate) fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

fn has_hidden_part(rel: &Path) -> bool {
    rel.components().any(|c| match c {
        Component::Normal(name) => name.to_str().is_none_or(is_hidden),
        _ => false,
    })
}

impl Root {
    pub(crate) fn new(dir: &Path) -> io::Result<Self> {
        let dir = dir.canonicalize()?;
        if !dir.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a folder", dir.display()),
            ));
        }
        Ok(Self { dir })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Resolves a relative path (from a URI or an argument) to a file inside the root.
    pub(crate) fn resolve(&self, relative: &str) -> Result<PathBuf, Refusal> {
        if relative.is_empty() || relative.contains('\0') || relative.contains('\\') {
            return Err(Refusal::Outside);
        }
        let rel = Path::new(relative);
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(Refusal::Outside);
        }
        if has_hidden_part(rel) {
            return Err(Refusal::NotFound);
        }
        let joined = self.dir.join(rel);
        let real = joined.canonicalize().map_err(|e| Refusal::from_io(&e))?;
        let Ok(inside) = real.strip_prefix(&self.dir) else {
            return Err(Refusal::Outside);
        };
        // A visible link to a hidden file is the hidden file.
        if has_hidden_part(inside) {
            return Err(Refusal::NotFound);
        }
        let meta = real.metadata().map_err(|e| Refusal::from_io(&e))?;
        if !meta.is_file() {
            return Err(Refusal::NotFound);
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(Refusal::TooLarge);
        }
        Ok(real)
    }

    /// Relative paths (with `/`) of the regular files under the root, sorted; hidden
    /// entries and symlinks are skipped, and so are folders that cannot be read
    /// (permissions). A folder the system cannot open *now* (out of descriptors or
    /// memory) fails the whole listing: a partial one would be a silent lie.
    pub(crate) fn files(&self) -> Result<Vec<String>, Refusal> {
        let mut out = Vec::new();
        let mut stack = vec![self.dir.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) => match Refusal::from_io(&e) {
                    unavailable @ Refusal::Unavailable(_) => return Err(unavailable),
                    _ => continue,
                },
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if is_hidden(name) {
                    continue;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() {
                    if let Some(rel) = path.strip_prefix(&self.dir).ok().and_then(Path::to_str) {
                        out.push(rel.replace(std::path::MAIN_SEPARATOR, "/"));
                        if out.len() >= MAX_FILES {
                            out.sort();
                            return Ok(out);
                        }
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The `file://` URI of a relative path.
    pub(crate) fn uri(&self, relative: &str) -> String {
        format!("{}/{}", self.base_uri(), encode_path(relative))
    }

    /// `file://` + the root's absolute path (percent-encoded).
    pub(crate) fn base_uri(&self) -> String {
        format!("file://{}", encode_path(&self.dir.to_string_lossy()))
    }
}

/// A MIME type guessed from the extension.
pub(crate) fn mime_type(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "rs" => "text/x-rust",
        "toml" => "application/toml",
        "json" => "application/json",
        "yml" | "yaml" => "application/yaml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "txt" | "text" | "log" | "csv" | "lock" | "" => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!("snodo-fs-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(d.join("sub"));
        let _ = std::fs::write(d.join("a.txt"), "hello");
        let _ = std::fs::write(d.join("sub/b.md"), "# b");
        d
    }

    #[test]
    fn resolves_inside_only() {
        let dir = tmp();
        let root = Root::new(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(root.resolve("a.txt").is_ok());
        assert!(root.resolve("sub/b.md").is_ok());
        assert_eq!(root.resolve("../etc/passwd"), Err(Refusal::Outside));
        assert_eq!(root.resolve("/etc/passwd"), Err(Refusal::Outside));
        assert_eq!(root.resolve("sub/../a.txt"), Err(Refusal::Outside));
        assert_eq!(root.resolve("missing"), Err(Refusal::NotFound));
        assert_eq!(root.resolve("sub"), Err(Refusal::NotFound));
        #[cfg(unix)]
        {
            let _ = std::os::unix::fs::symlink("/etc/hostname", dir.join("link"));
            assert_eq!(root.resolve("link"), Err(Refusal::Outside));
        }
        assert_eq!(
            root.files(),
            Ok(vec!["a.txt".to_owned(), "sub/b.md".to_owned()])
        );
        assert_eq!(encode_path("a b/ç"), "a%20b/%C3%A7");
    }

    #[test]
    fn hidden_is_missing_and_no_descriptors_is_unavailable() {
        let d = std::env::temp_dir().join(format!("snodo-fs-hidden-{}", std::process::id()));
        let _ = std::fs::create_dir_all(d.join(".git"));
        let _ = std::fs::create_dir_all(d.join("node_modules/p"));
        let _ = std::fs::write(d.join(".env"), "x");
        let _ = std::fs::write(d.join(".git/config"), "x");
        let _ = std::fs::write(d.join("node_modules/p/i.js"), "x");
        let _ = std::fs::write(d.join("ok.txt"), "x");
        let root = Root::new(&d).unwrap_or_else(|e| panic!("{e}"));
        for hidden in [
            ".env",
            ".git/config",
            "node_modules/p/i.js",
            ".git",
            "ok.txt/.x",
        ] {
            assert_eq!(root.resolve(hidden), Err(Refusal::NotFound), "{hidden}");
        }
        assert!(root.resolve("ok.txt").is_ok());
        assert_eq!(root.files(), Ok(vec!["ok.txt".to_owned()]));
        let emfile = io::Error::from_raw_os_error(24);
        assert!(matches!(Refusal::from_io(&emfile), Refusal::Unavailable(_)));
        let enoent = io::Error::from_raw_os_error(2);
        assert_eq!(Refusal::from_io(&enoent), Refusal::NotFound);
        let eacces = io::Error::from_raw_os_error(13);
        assert!(matches!(Refusal::from_io(&eacces), Refusal::Failed(_)));
        let _ = std::fs::remove_dir_all(&d);
    }
}
