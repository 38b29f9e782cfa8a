//! The typed calls: lists (every page, or a stream of items), tools, resources,
//! prompts, completion, and `listen`.

use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::builder::CallOptions;
use crate::client::{Client, META_CAPS, META_INFO, META_VERSION};
use crate::error::ClientError;
use crate::message::{self, Incoming};
use crate::transport::{Message, Outgoing};
use crate::types::{
    CallToolResult, Completion, GetPromptResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, ServerEvent, Subscriptions, Tool,
};

/// Most pages one list call follows (a server that never ends its cursors is an error).
const MAX_PAGES: usize = 10_000;

/// The list methods and the member holding their items.
pub(crate) fn list_key(method: &str) -> Option<&'static str> {
    match method {
        "tools/list" => Some("tools"),
        "prompts/list" => Some("prompts"),
        "resources/list" => Some("resources"),
        "resources/templates/list" => Some("resourceTemplates"),
        _ => None,
    }
}

fn decode<T: DeserializeOwned>(v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Unexpected(e.to_string()))
}

struct Pages {
    client: Client,
    method: String,
    key: &'static str,
    cursor: Option<Option<String>>,
    items: std::collections::VecDeque<Value>,
    pages: usize,
    seen: std::collections::HashSet<String>,
}

impl Client {
    /// The items of a list method, one at a time, fetching pages as the stream is read.
    pub fn list_stream(&self, method: &str) -> BoxStream<'static, Result<Value, ClientError>> {
        let Some(key) = list_key(method) else {
            let m = method.to_owned();
            return futures_util::stream::once(async move {
                Err(ClientError::Unexpected(format!("{m} is not a list method")))
            })
            .boxed();
        };
        let st = Pages {
            client: self.clone(),
            method: method.to_owned(),
            key,
            cursor: Some(None),
            items: Default::default(),
            pages: 0,
            seen: Default::default(),
        };
        futures_util::stream::unfold(st, |mut st| async move {
            loop {
                if let Some(v) = st.items.pop_front() {
                    return Some((Ok(v), st));
                }
                let cursor = st.cursor.take()?;
                st.pages += 1;
                if st.pages > MAX_PAGES {
                    return Some((Err(ClientError::Unexpected("too many pages".into())), st));
                }
                let params = match &cursor {
                    Some(c) => json!({ "cursor": c }),
                    None => json!({}),
                };
                match st.client.request(&st.method, params).await {
                    Ok(mut r) => {
                        match r.get_mut(st.key).map(Value::take) {
                            Some(Value::Array(items)) => st.items.extend(items),
                            _ => {
                                let e = format!("{} has no {} array", st.method, st.key);
                                st.cursor = None;
                                return Some((Err(ClientError::Unexpected(e)), st));
                            }
                        }
                        let next = r
                            .get("nextCursor")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                        st.cursor = match next {
                            Some(n) if st.seen.insert(n.clone()) => Some(Some(n)),
                            Some(_) => {
                                return Some((
                                    Err(ClientError::Unexpected(
                                        "the server repeated a cursor".into(),
                                    )),
                                    st,
                                ));
                            }
                            None => None,
                        };
                    }
                    Err(e) => return Some((Err(e), st)),
                }
            }
        })
        .boxed()
    }

    /// Every item of a list method (every page followed).
    pub async fn list_all(&self, method: &str) -> Result<Vec<Value>, ClientError> {
        let mut s = self.list_stream(method);
        let mut out = Vec::new();
        while let Some(v) = s.next().await {
            out.push(v?);
        }
        Ok(out)
    }

    /// Every tool. Malformed tools and tools with invalid `x-mcp-header` annotations
    /// are left out (with a warning); the others' annotations are remembered for
    /// `call_tool`'s `Mcp-Param-*` headers.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut out = Vec::new();
        for v in self.list_all("tools/list").await? {
            let t: Tool = match decode(v) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(%e, "leaving out a malformed tool");
                    continue;
                }
            };
            if self.learn_tool(&t.name, &t.input_schema) {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_all("prompts/list")
            .await?
            .into_iter()
            .map(decode)
            .collect()
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_all("resources/list")
            .await?
            .into_iter()
            .map(decode)
            .collect()
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_all("resources/templates/list")
            .await?
            .into_iter()
            .map(decode)
            .collect()
    }

    /// Calls a tool. A tool that reports failure is `Ok` with `is_error` set.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, &CallOptions::default())
            .await
    }

    /// [`call_tool`](Self::call_tool) with options (progress, timeout).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        decode(self.call_tool_raw(name, arguments, opts).await?)
    }

    /// [`call_tool`](Self::call_tool), the result as sent.
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let mut p = Map::new();
        p.insert("name".into(), json!(name));
        if !arguments.is_null() {
            p.insert("arguments".into(), arguments);
        }
        self.call("tools/call", p, opts).await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        decode(
            self.request("resources/read", json!({ "uri": uri }))
                .await?,
        )
    }

    /// Gets a prompt with string arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<GetPromptResult, ClientError> {
        let mut p = Map::new();
        p.insert("name".into(), json!(name));
        if !arguments.is_null() {
            p.insert("arguments".into(), arguments);
        }
        decode(self.call("prompts/get", p, &CallOptions::default()).await?)
    }

    /// Completes an argument of a prompt (`{"type":"ref/prompt","name":…}`) or a
    /// resource template (`{"type":"ref/resource","uri":…}`).
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        let r = self
            .request(
                "completion/complete",
                json!({"ref": reference, "argument": {"name": argument, "value": value}}),
            )
            .await?;
        decode(r.get("completion").cloned().unwrap_or(Value::Null))
    }

    /// Opens a `subscriptions/listen` stream (2026-07-28): the change events the server
    /// announces, until it ends the subscription or the stream is dropped.
    pub async fn listen(
        &self,
        subscriptions: &Subscriptions,
    ) -> Result<BoxStream<'static, Result<ServerEvent, ClientError>>, ClientError> {
        let st = self.state();
        if !st.stateless {
            return Err(ClientError::Unexpected(format!(
                "subscriptions/listen needs 2026-07-28 (this connection speaks {})",
                st.version
            )));
        }
        let id = snodo::protocol::RequestId::String(format!("listen-{}", uniq()).into());
        let params = json!({
            "notifications": subscriptions,
            "_meta": {
                META_VERSION: st.version,
                META_CAPS: self.inner.capabilities,
                META_INFO: self.inner.client_info,
            }
        });
        let mut p = Map::new();
        if let Value::Object(m) = params {
            p = m;
        }
        let out = Outgoing {
            body: message::request(&id, "subscriptions/listen", &p),
            id: Some(id),
            method: "subscriptions/listen".into(),
            version: Some(st.version.clone()),
            mirrors: true,
            ..Outgoing::default()
        };
        let msgs = self.inner.transport.request(out).await?;
        Ok(msgs
            .filter_map(|m| async move {
                match m {
                    Err(e) => Some(Err(e)),
                    // (An answer with a result ends the listen stream: nothing to report.)
                    Ok(Message::Answer(..)) => None,
                    Ok(Message::Tree(v)) => match Incoming::classify(v) {
                        Some(Incoming::Notification { method, params })
                            if method != "notifications/subscriptions/acknowledged" =>
                        {
                            Some(Ok(ServerEvent::from_notification(&method, &params)))
                        }
                        Some(Incoming::Response {
                            outcome: Err(e), ..
                        }) => Some(Err(ClientError::Protocol(e))),
                        _ => None,
                    },
                }
            })
            .boxed())
    }
}

fn uniq() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}
