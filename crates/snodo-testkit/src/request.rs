//! A request as a client of a revision sends it: the JSON-RPC message and its headers.

use std::net::SocketAddr;

use serde_json::{Map, Value, json};

use crate::Revision;
use crate::http::{Reply, literal_post, send};

/// The `_meta` key of the protocol version (2026-07-28).
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client capabilities (2026-07-28).
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the client information (2026-07-28).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// A JSON-RPC request (or notification, without an id) of one revision.
///
/// On 2026-07-28 the message carries `params._meta` with the protocol version and the
/// client capabilities (`{}` unless set), and the headers mirror the body:
/// `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for `tools/call`,
/// `prompts/get` and `resources/read`. On the initialize-era revisions the message is
/// sent as given with the `MCP-Protocol-Version` header (none on `initialize`, as
/// clients of those revisions send it). Every default can be overridden or removed.
#[derive(Clone, Debug)]
pub struct Request {
    revision: Revision,
    method: String,
    id: Option<Value>,
    params: Option<Value>,
    capabilities: Value,
    meta: Map<String, Value>,
    with_meta: bool,
    headers: Vec<(String, String)>,
    without: Vec<String>,
}

impl Request {
    /// A notification of `method` (add [`id`](Self::id) for a request).
    pub fn new(revision: Revision, method: &str) -> Self {
        let without = if method == "initialize" && !revision.is_stateless() {
            vec!["mcp-protocol-version".to_owned()]
        } else {
            Vec::new()
        };
        Self {
            revision,
            method: method.to_owned(),
            id: None,
            params: None,
            capabilities: json!({}),
            meta: Map::new(),
            with_meta: revision.is_stateless(),
            headers: Vec::new(),
            without,
        }
    }

    /// An initialize-era `initialize` proposing its revision, from client `client`.
    pub fn initialize(revision: Revision, client: &str) -> Self {
        Self::new(revision, "initialize").params(json!({
            "protocolVersion": revision.version(),
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1.0.0"}
        }))
    }

    /// The revision.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request id.
    pub fn id(mut self, id: impl Into<Value>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The params (an object; on 2026-07-28 its `_meta` members are kept and the
    /// revision's added).
    pub fn params(mut self, params: Value) -> Self {
        self.params = Some(params);
        self
    }

    /// The params if `Some`.
    pub fn params_opt(self, params: Option<Value>) -> Self {
        match params {
            Some(p) => self.params(p),
            None => self,
        }
    }

    /// The client capabilities sent in `_meta` (2026-07-28).
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The client information sent in `_meta` (2026-07-28).
    pub fn client_info(self, name: &str, version: &str) -> Self {
        self.meta(META_CLIENT_INFO, json!({"name": name, "version": version}))
    }

    /// One more `_meta` member (added on every revision).
    pub fn meta(mut self, key: &str, value: Value) -> Self {
        self.meta.insert(key.to_owned(), value);
        self
    }

    /// Every member of `members` (an object) as one more `_meta` member.
    pub fn meta_members(mut self, members: &Value) -> Self {
        let object = members
            .as_object()
            .unwrap_or_else(|| panic!("_meta members must be an object: {members}"));
        for (k, v) in object {
            self.meta.insert(k.clone(), v.clone());
        }
        self
    }

    /// Sends no revision `_meta` members (those of [`meta`](Self::meta) stay).
    pub fn without_meta(mut self) -> Self {
        self.with_meta = false;
        self
    }

    /// Sets header `name` (replacing a default of that name).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.without.retain(|w| !w.eq_ignore_ascii_case(name));
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends no header `name` (a default or one set before).
    pub fn without_header(mut self, name: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.without.push(name.to_ascii_lowercase());
        self
    }

    /// The JSON-RPC message.
    pub fn message(&self) -> Value {
        let mut m = json!({"jsonrpc": "2.0", "method": self.method});
        if let Some(id) = &self.id {
            m["id"] = id.clone();
        }
        let mut params = self.params.clone();
        if self.with_meta || !self.meta.is_empty() {
            let p = params.get_or_insert_with(|| json!({}));
            assert!(p.is_object(), "params with _meta must be an object: {p}");
            let object = p.as_object_mut().unwrap();
            let meta = object
                .entry("_meta")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .unwrap_or_else(|| panic!("_meta must be an object"));
            if self.with_meta {
                meta.insert(META_VERSION.to_owned(), json!(self.revision.version()));
                meta.insert(META_CAPABILITIES.to_owned(), self.capabilities.clone());
            }
            for (k, v) in &self.meta {
                meta.insert(k.clone(), v.clone());
            }
        }
        if let Some(p) = params {
            m["params"] = p;
        }
        m
    }

    /// The body as sent (one JSON text; also one stdio line without its newline).
    pub fn body(&self) -> String {
        self.message().to_string()
    }

    /// The name `Mcp-Name` mirrors: the params' `name` or `uri` on the methods that
    /// have one.
    fn name(&self) -> Option<String> {
        if !matches!(
            self.method.as_str(),
            "tools/call" | "prompts/get" | "resources/read"
        ) {
            return None;
        }
        let p = self.params.as_ref()?;
        p.get("name")
            .or_else(|| p.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The MCP headers (not the media types), in order.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut h = vec![(
            "MCP-Protocol-Version".to_owned(),
            self.revision.version().to_owned(),
        )];
        if self.revision.is_stateless() {
            h.push(("Mcp-Method".to_owned(), self.method.clone()));
            if let Some(n) = self.name() {
                h.push(("Mcp-Name".to_owned(), n));
            }
        }
        h.retain(|(k, _)| {
            !self.without.contains(&k.to_ascii_lowercase())
                && !self.headers.iter().any(|(o, _)| o.eq_ignore_ascii_case(k))
        });
        h.extend(self.headers.iter().cloned());
        h
    }

    /// The literal HTTP/1.1 POST to `/mcp` on `host` (media headers included), asking
    /// the server to close the connection after its answer.
    pub fn http(&self, host: &str) -> String {
        let headers = self.headers();
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        literal_post(host, &refs, &self.body(), true)
    }

    /// POSTs the request to `addr` and reads the whole answer.
    pub async fn post(&self, addr: SocketAddr) -> Reply {
        send(addr, &self.http(&addr.to_string())).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{R2025_06_18, R2026_07_28};

    #[test]
    fn a_2026_call_carries_meta_and_mirror_headers() {
        let r = R2026_07_28
            .request("tools/call")
            .id(1)
            .params(json!({"name": "echo", "arguments": {}}))
            .client_info("t", "1");
        let m = r.message();
        assert_eq!(m["params"]["_meta"][META_VERSION], "2026-07-28");
        assert_eq!(m["params"]["_meta"][META_CAPABILITIES], json!({}));
        assert_eq!(m["params"]["_meta"][META_CLIENT_INFO]["name"], "t");
        let h = r.headers();
        assert_eq!(h[1], ("Mcp-Method".to_owned(), "tools/call".to_owned()));
        assert_eq!(h[2], ("Mcp-Name".to_owned(), "echo".to_owned()));
        let h = r
            .header("Mcp-Name", "other")
            .without_header("mcp-method")
            .headers();
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(h[1].1, "other");
    }

    #[test]
    fn an_initialize_era_request_is_sent_as_given() {
        let r = R2025_06_18.request("ping").id("p");
        assert_eq!(
            r.message(),
            json!({"jsonrpc":"2.0","id":"p","method":"ping"})
        );
        assert_eq!(r.headers().len(), 1);
        assert!(Request::initialize(R2025_06_18, "c").headers().is_empty());
    }
}
