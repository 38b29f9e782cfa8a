//! Version negotiation as the 2026-07-28 `basic/versioning` page asks of a dual-era
//! client: pinned, or auto — probe `server/discover`; a recognised modern error means a
//! modern server (`-32022`: retry with a version it lists); any other answer or a
//! timeout means an initialize-era server: `initialize`, then the version header on
//! every later request.

use std::time::Duration;

use serde_json::{Map, Value, json};
use snodo::protocol::ALL;
use snodo::protocol::ErrorCode;

use crate::builder::{CallOptions, Protocol};
use crate::client::Client;
use crate::error::ClientError;
use crate::types::ServerDetails;

/// Initialize-era versions this client accepts besides snodo's dialects.
const EXTRA_LEGACY: &[&str] = &["2025-03-26"];

/// Every version this client speaks, newest first.
pub(crate) fn known_versions() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = ALL.iter().map(|d| d.version()).collect();
    for x in EXTRA_LEGACY {
        if !v.contains(x) {
            v.push(x);
        }
    }
    v
}

pub(crate) fn is_known(v: &str) -> bool {
    known_versions().contains(&v)
}

fn is_modern(v: &str) -> bool {
    ALL.iter().any(|d| d.version() == v && d.is_stateless())
}

fn modern_versions() -> Vec<&'static str> {
    known_versions()
        .into_iter()
        .filter(|v| is_modern(v))
        .collect()
}

fn legacy_versions() -> Vec<&'static str> {
    known_versions()
        .into_iter()
        .filter(|v| !is_modern(v))
        .collect()
}

fn listed(data: Option<&Value>, key: &str) -> Vec<String> {
    data.and_then(|d| d.get(key))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The newest modern version both sides speak, from a `-32022` error's data.
pub(crate) fn pick_modern(data: Option<&Value>) -> Option<String> {
    let theirs = listed(data, "supported");
    modern_versions()
        .into_iter()
        .find(|v| theirs.iter().any(|t| t == v))
        .map(str::to_owned)
}

fn pick_legacy(theirs: &[String]) -> Option<String> {
    legacy_versions()
        .into_iter()
        .find(|v| theirs.iter().any(|t| t == v))
        .map(str::to_owned)
}

/// Whether an error is one only a modern server sends.
fn is_modern_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_CLIENT_CAPABILITY
    )
}

impl Client {
    pub(crate) async fn negotiate(
        &self,
        protocol: &Protocol,
        probe: Duration,
    ) -> Result<(), ClientError> {
        match protocol {
            Protocol::Pinned(v) if is_modern(v) => {
                self.set_state(|s| {
                    s.version.clone_from(v);
                    s.stateless = true;
                    s.pinned = true;
                });
                match self.discover(probe).await {
                    Ok(d) => {
                        self.adopt(d);
                        Ok(())
                    }
                    Err(ClientError::Protocol(e))
                        if e.code() == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
                    {
                        Err(ClientError::Version(format!(
                            "the server does not speak {v} (it lists {:?})",
                            listed(e.data(), "supported")
                        )))
                    }
                    Err(e) => Err(e),
                }
            }
            Protocol::Pinned(v) => self.initialize(v, true).await,
            Protocol::Auto => {
                let first = modern_versions().first().copied().unwrap_or("2026-07-28");
                self.set_state(|s| {
                    s.version = first.to_owned();
                    s.stateless = true;
                    s.pinned = false;
                });
                match self.discover(probe).await {
                    Ok(d) => {
                        if d.supported_versions.is_empty()
                            || d.supported_versions.iter().any(|v| is_modern(v))
                        {
                            self.adopt(d);
                            return Ok(());
                        }
                        match pick_legacy(&d.supported_versions) {
                            Some(v) => self.initialize(&v, false).await,
                            None => Err(ClientError::Version(format!(
                                "the server lists {:?}",
                                d.supported_versions
                            ))),
                        }
                    }
                    Err(ClientError::Protocol(e))
                        if e.code() == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
                    {
                        // Modern, but no modern version in common (the request core
                        // already retried with one it lists): its legacy versions,
                        // if it offers any, are reached through initialize.
                        match pick_legacy(&listed(e.data(), "supported")) {
                            Some(v) => self.initialize(&v, false).await,
                            None => Err(ClientError::Version(format!(
                                "the server lists {:?}",
                                listed(e.data(), "supported")
                            ))),
                        }
                    }
                    Err(ClientError::Protocol(e)) if is_modern_error(e.code()) => {
                        // A modern server refusing the probe itself: stay modern.
                        Ok(())
                    }
                    // An authorization that failed or was refused says nothing about
                    // the server's era: trying `initialize` would only authorize again.
                    Err(e @ ClientError::Auth(_)) => Err(e),
                    Err(e) => {
                        tracing::debug!(%e, "server/discover failed: an initialize-era server");
                        let offer = legacy_versions().first().copied().unwrap_or("2025-11-25");
                        self.initialize(offer, false).await
                    }
                }
            }
        }
    }

    async fn discover(&self, probe: Duration) -> Result<ServerDetails, ClientError> {
        let opts = CallOptions::default().timeout(probe);
        let r = self.call("server/discover", Map::new(), &opts).await?;
        let st = self.state();
        let server_info = r
            .get("serverInfo")
            .or_else(|| r.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
            .cloned();
        Ok(ServerDetails {
            protocol_version: st.version,
            stateless: true,
            server_info,
            capabilities: r.get("capabilities").cloned().unwrap_or_else(|| json!({})),
            instructions: r
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
            supported_versions: listed(Some(&r), "supportedVersions"),
        })
    }

    fn adopt(&self, d: ServerDetails) {
        let version = d.supported_versions.iter().find(|v| is_modern(v)).cloned();
        self.set_state(|s| {
            if let Some(v) =
                version.filter(|_| !s.pinned && !d.supported_versions.contains(&s.version))
            {
                s.version = v;
            }
            s.details = ServerDetails {
                protocol_version: s.version.clone(),
                ..d
            };
        });
    }

    pub(crate) async fn initialize(&self, offer: &str, pinned: bool) -> Result<(), ClientError> {
        self.set_state(|s| {
            s.version = offer.to_owned();
            s.stateless = false;
            s.pinned = pinned;
        });
        let mut params = Map::new();
        params.insert("protocolVersion".into(), json!(offer));
        params.insert("capabilities".into(), self.inner.capabilities.clone());
        params.insert("clientInfo".into(), self.inner.client_info.clone());
        let r = self
            .call("initialize", params, &CallOptions::default())
            .await?;
        let answered = r
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if (pinned && answered != offer) || !is_known(&answered) || is_modern(&answered) {
            return Err(ClientError::Version(format!(
                "offered {offer}, the server answered {answered:?}"
            )));
        }
        self.set_state(|s| {
            s.version.clone_from(&answered);
            s.details = ServerDetails {
                protocol_version: answered.clone(),
                stateless: false,
                server_info: r.get("serverInfo").cloned(),
                capabilities: r.get("capabilities").cloned().unwrap_or_else(|| json!({})),
                instructions: r
                    .get("instructions")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                supported_versions: Vec::new(),
            };
        });
        self.notify("notifications/initialized", None).await?;
        self.inner.transport.listen().await;
        if let Some(level) = self.inner.log_level.clone() {
            let has_logging = r.pointer("/capabilities/logging").is_some();
            if has_logging {
                let _ = self
                    .request("logging/setLevel", json!({ "level": level }))
                    .await;
            }
        }
        Ok(())
    }
}
