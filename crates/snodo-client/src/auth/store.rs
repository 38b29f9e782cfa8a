//! Where tokens and client registrations live between requests and between runs: the
//! [`TokenStore`] trait, an in-memory store and a file store (mode 0600, replaced
//! atomically: a crash leaves the old file or the new one, never half of one).
//!
//! Tokens are filed under the MCP server's URL and carry the issuer, client and
//! resource they were issued for: the client uses a stored token only while discovery
//! still names that issuer and resource, so a token never follows a server to another
//! authorization server. Registrations are filed under their issuer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::ClientError;

/// A token set and what it is bound to. Its `Debug` shows no secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// The authorization server that issued it.
    pub issuer: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The resource indicator it was issued for (empty: none was sent).
    pub resource: String,
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When it was issued (seconds since the Unix epoch): a short-lived token is
    /// refreshed in the last half of its life, not in the last 30 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scopes requested (space-separated), for step-up unions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// For a DPoP-bound token: the private key it is bound to (PKCS#8 PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("resource", &self.resource)
            .field("token_type", &self.token_type)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| ".."))
            .field("expires_at", &self.expires_at)
            .field("issued_at", &self.issued_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A client registration at one authorization server (dynamic, or pre-registered).
/// Its `Debug` shows no secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// The issuer that registered the client; never presented to another.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
    /// The redirect URI registered with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// Keeps tokens (by MCP server URL) and registrations (by issuer).
///
/// Implementations must make [`save`](Self::save) durable before returning: a rotated
/// refresh token is saved before the new access token is used, so a crash right after
/// cannot leave only the spent refresh token behind.
pub trait TokenStore: Send + Sync + std::fmt::Debug {
    /// The tokens filed for `server`.
    fn load(&self, server: &str) -> Result<Option<Tokens>, ClientError>;
    /// Files `tokens` for `server`, replacing what was there.
    fn save(&self, server: &str, tokens: &Tokens) -> Result<(), ClientError>;
    /// Forgets the tokens filed for `server`.
    fn remove(&self, server: &str) -> Result<(), ClientError>;
    /// The registration made at `issuer`.
    fn load_registration(&self, issuer: &str) -> Result<Option<Registration>, ClientError>;
    /// Files a registration under its issuer.
    fn save_registration(&self, r: &Registration) -> Result<(), ClientError>;
}

#[derive(Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    tokens: BTreeMap<String, Tokens>,
    #[serde(default)]
    registrations: BTreeMap<String, Registration>,
}

/// Keeps everything in memory, for the life of the process.
#[derive(Default)]
pub struct MemoryStore(Mutex<Contents>);

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Contents) -> T) -> T {
        match self.0.lock() {
            Ok(mut g) => f(&mut g),
            Err(e) => f(&mut e.into_inner()),
        }
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, server: &str) -> Result<Option<Tokens>, ClientError> {
        Ok(self.with(|c| c.tokens.get(server).cloned()))
    }
    fn save(&self, server: &str, tokens: &Tokens) -> Result<(), ClientError> {
        self.with(|c| c.tokens.insert(server.to_owned(), tokens.clone()));
        Ok(())
    }
    fn remove(&self, server: &str) -> Result<(), ClientError> {
        self.with(|c| c.tokens.remove(server));
        Ok(())
    }
    fn load_registration(&self, issuer: &str) -> Result<Option<Registration>, ClientError> {
        Ok(self.with(|c| c.registrations.get(issuer).cloned()))
    }
    fn save_registration(&self, r: &Registration) -> Result<(), ClientError> {
        self.with(|c| c.registrations.insert(r.issuer.clone(), r.clone()));
        Ok(())
    }
}

/// Keeps everything in one JSON file, readable by its owner only (mode 0600 on Unix),
/// rewritten through a temporary file and a rename.
pub struct FileStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl std::fmt::Debug for FileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStore")
            .field("path", &self.path)
            .finish()
    }
}

fn io_err(what: &str, path: &Path, e: &dyn std::fmt::Display) -> ClientError {
    ClientError::Auth(format!("token file {}: {what}: {e}", path.display()))
}

impl FileStore {
    /// A store in `path` (created at the first save).
    ///
    /// ```
    /// use snodo_client::auth::{FileStore, TokenStore, Tokens};
    ///
    /// let dir = std::env::temp_dir().join(format!("snodo-doc-{}", std::process::id()));
    /// let store = FileStore::new(dir.join("tokens.json"));
    /// let t = Tokens { issuer: "https://as".into(), access_token: "at".into(), ..Tokens::default() };
    /// store.save("https://mcp.example/mcp", &t).unwrap();
    /// assert_eq!(store.load("https://mcp.example/mcp").unwrap(), Some(t));
    /// # std::fs::remove_dir_all(dir).ok();
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> Result<Contents, ClientError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| io_err("not a token file", &self.path, &e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contents::default()),
            Err(e) => Err(io_err("read", &self.path, &e)),
        }
    }

    fn write(&self, c: &Contents) -> Result<(), ClientError> {
        use std::io::Write as _;
        let bytes = serde_json::to_vec_pretty(c).map_err(|e| io_err("encode", &self.path, &e))?;
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io_err("create its folder", &self.path, &e))?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tokens".into());
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            opts.mode(0o600);
        }
        let result = (|| {
            let mut f = opts.open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_err("write", &self.path, &e));
        }
        Ok(())
    }

    fn update<T>(&self, f: impl FnOnce(&mut Contents) -> T) -> Result<T, ClientError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = self.read()?;
        let out = f(&mut c);
        self.write(&c)?;
        Ok(out)
    }
}

impl TokenStore for FileStore {
    fn load(&self, server: &str) -> Result<Option<Tokens>, ClientError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(self.read()?.tokens.remove(server))
    }
    fn save(&self, server: &str, tokens: &Tokens) -> Result<(), ClientError> {
        self.update(|c| {
            c.tokens.insert(server.to_owned(), tokens.clone());
        })
    }
    fn remove(&self, server: &str) -> Result<(), ClientError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = self.read()?;
        if c.tokens.remove(server).is_some() {
            self.write(&c)?;
        }
        Ok(())
    }
    fn load_registration(&self, issuer: &str) -> Result<Option<Registration>, ClientError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(self.read()?.registrations.remove(issuer))
    }
    fn save_registration(&self, r: &Registration) -> Result<(), ClientError> {
        self.update(|c| {
            c.registrations.insert(r.issuer.clone(), r.clone());
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_store_round_trip_mode_and_no_leftovers() {
        let dir =
            std::env::temp_dir().join(format!("snodo-store-{}", crate::auth::crypto::random(6)));
        let path = dir.join("t.json");
        let s = FileStore::new(&path);
        assert_eq!(s.load("x").unwrap(), None);
        let t = Tokens {
            access_token: "secret-at".into(),
            refresh_token: Some("secret-rt".into()),
            ..Tokens::default()
        };
        s.save("x", &t).unwrap();
        s.save_registration(&Registration {
            issuer: "i".into(),
            client_id: "c".into(),
            ..Registration::default()
        })
        .unwrap();
        let s2 = FileStore::new(&path);
        assert_eq!(s2.load("x").unwrap(), Some(t.clone()));
        assert_eq!(s2.load_registration("i").unwrap().unwrap().client_id, "c");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert!(!format!("{t:?}").contains("secret"));
        s2.remove("x").unwrap();
        assert_eq!(s.load("x").unwrap(), None);
        std::fs::write(&path, "garbage").unwrap();
        assert!(s.load("x").is_err());
        std::fs::remove_dir_all(dir).ok();
    }
}
