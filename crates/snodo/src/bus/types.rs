//! What travels on a [`Bus`](super::Bus): change events, addressed messages, counts, and
//! the errors and states of the bus itself.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest [`InstanceId`], in bytes (a PostgreSQL or Redis channel name is built from it).
pub const MAX_INSTANCE_ID: usize = 48;
/// The separator between an id something on one instance gave out and the instance
/// that holds it (`ID@INSTANCE`): a forwarded server request's id, a gateway's parked
/// call's id. See [`InstanceId::holding`].
pub const HOLDER: char = '@';
/// The longest counter key, in bytes.
pub const MAX_KEY: usize = 256;
/// The largest encoded [`Message`], in bytes.
pub const MAX_MESSAGE: usize = 1 << 20;

/// The identity of one running instance (one process) of a deployment: where addressed
/// [`Message`]s go. 1 to [`MAX_INSTANCE_ID`] bytes of ASCII letters, digits, `-`, `_`, `.`.
///
/// ```
/// use snodo::bus::InstanceId;
///
/// let id = InstanceId::new("web-1")?;
/// assert_eq!(id.as_str(), "web-1");
/// assert!(InstanceId::new("no spaces").is_err());
/// assert_ne!(InstanceId::random(), InstanceId::random());
/// # Ok::<(), snodo::bus::BusError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(Arc<str>);

impl InstanceId {
    /// An id that names its holder (`ID@INSTANCE`, [`HOLDER`]) split into its own part
    /// and the instance; `None` when it names none (or no valid instance id).
    ///
    /// ```
    /// use snodo::bus::InstanceId;
    /// let (own, at) = InstanceId::holding("n.1@gw-2").expect("names one");
    /// assert_eq!((own, at.as_str()), ("n.1", "gw-2"));
    /// assert!(InstanceId::holding("n.1").is_none());
    /// ```
    #[must_use]
    pub fn holding(id: &str) -> Option<(&str, Self)> {
        let (own, instance) = id.rsplit_once(HOLDER)?;
        Some((own, Self::new(instance).ok()?))
    }

    /// An instance id from its text.
    ///
    /// # Errors
    /// [`BusError::Invalid`] when empty, longer than [`MAX_INSTANCE_ID`] or with another
    /// character than ASCII letters, digits, `-`, `_`, `.`.
    pub fn new(id: impl AsRef<str>) -> Result<Self, BusError> {
        let id = id.as_ref();
        let ok = !id.is_empty()
            && id.len() <= MAX_INSTANCE_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if ok {
            Ok(Self(id.into()))
        } else {
            Err(BusError::Invalid(format!(
                "instance id {id:?}: 1 to {MAX_INSTANCE_ID} ASCII letters, digits, '-', '_', '.'"
            )))
        }
    }

    /// A fresh id of 128 random bits (32 hex digits), from the OS random source.
    #[must_use]
    pub fn random() -> Self {
        let mut bytes = [0u8; 16];
        // The OS source does not fail on the systems snodo runs on; were it to, the time
        // and process id still tell instances apart.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = (nanos ^ (u128::from(std::process::id()) << 96)).to_le_bytes();
        }
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self(hex.into())
    }

    /// The id's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A change an application announced, heard by every instance's `subscriptions/listen`
/// streams (the same changes the runtime publishes to its own listeners).
///
/// ```
/// use snodo::bus::Event;
///
/// let e = Event::ResourceUpdated("file:///a.txt".into());
/// assert_eq!(Event::decode(&e.encode()), Some(e));
/// assert_eq!(Event::decode("resync"), Some(Event::Resync));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource list changed.
    ResourcesListChanged,
    /// The contents of the resource at this URI changed.
    ResourceUpdated(Arc<str>),
    /// Anything may have changed: every listener, on every instance, is told that every
    /// list it watches changed and every resource it watches was updated. An instance
    /// publishes it when its own connection to the bus is back after an outage (the
    /// changes it made meanwhile reached its own listeners only), and after a change it
    /// could not publish (refused by the bus, or its outbox full). Subscribers receive it
    /// as [`Received::Resync`](super::Received::Resync), never as an item.
    Resync,
}

impl Event {
    /// The wire form: `tools`, `prompts`, `resources`, `resource:` and the URI, or
    /// `resync`.
    #[must_use]
    pub fn encode(&self) -> String {
        match self {
            Self::ToolsListChanged => "tools".to_owned(),
            Self::PromptsListChanged => "prompts".to_owned(),
            Self::ResourcesListChanged => "resources".to_owned(),
            Self::ResourceUpdated(uri) => format!("resource:{uri}"),
            Self::Resync => "resync".to_owned(),
        }
    }

    /// Reads the wire form back; `None` for anything else.
    #[must_use]
    pub fn decode(text: &str) -> Option<Self> {
        Some(match text {
            "tools" => Self::ToolsListChanged,
            "prompts" => Self::PromptsListChanged,
            "resources" => Self::ResourcesListChanged,
            "resync" => Self::Resync,
            _ => Self::ResourceUpdated(text.strip_prefix("resource:")?.into()),
        })
    }
}

/// A message for the instance that holds a request (initialize era: the request a
/// `notifications/cancelled` names, or the server request a client's answer is for),
/// or a call between instances and its reply ([`Peers`](super::Peers)).
///
/// `request` is an opaque key the runtime chooses (for instance the principal and the
/// JSON-RPC id); the bus only carries it.
///
/// ```
/// use snodo::bus::Message;
///
/// let m = Message::Answer { request: "7".into(), response: serde_json::json!({"ok": true}) };
/// assert_eq!(Message::decode(&m.encode()), Some(m));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// Cancel the request with this key.
    Cancel {
        /// The request's key.
        request: String,
        /// Why, as the client said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The client's answer (a JSON-RPC response object) to the server request with this key.
    Answer {
        /// The server request's key.
        request: String,
        /// The JSON-RPC response (result or error).
        response: Value,
    },
    /// A call for a service the instance it is sent to serves
    /// ([`Peers`](super::Peers)): `topic` names it, `body` is its input.
    Call {
        /// The caller's key for the call (its reply carries it back).
        request: String,
        /// The calling instance (where the reply goes).
        from: String,
        /// The service.
        topic: String,
        /// The caller's principal: its id and scope.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        principal: Option<(String, Option<String>)>,
        /// The input.
        body: Value,
        /// How long the caller waits, in milliseconds.
        within_ms: u64,
    },
    /// A reply to a [`Message::Call`]: `{"accepted": true}` when the instance took it,
    /// then `{"result": …}` or `{"error": …}`.
    Reply {
        /// The call's key.
        request: String,
        /// What the service answered.
        body: Value,
    },
}

impl Message {
    /// The wire form (JSON).
    #[must_use]
    pub fn encode(&self) -> String {
        // A Message is strings and a serde_json::Value: serialising it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The wire form, refused above [`MAX_MESSAGE`] bytes.
    ///
    /// # Errors
    /// [`BusError::Invalid`] for a message too large to carry.
    pub fn encode_checked(&self) -> Result<String, BusError> {
        let text = self.encode();
        if text.len() > MAX_MESSAGE {
            return Err(BusError::Invalid(format!(
                "a message of {} bytes (at most {MAX_MESSAGE})",
                text.len()
            )));
        }
        Ok(text)
    }

    /// Reads the wire form back; `None` if it is not a message.
    #[must_use]
    pub fn decode(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

/// Where a [`Message`] goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Address {
    /// The one instance with this id (nobody, if it is not subscribed).
    Instance(InstanceId),
    /// Every instance subscribed to messages (a cancellation whose holder is unknown).
    Every,
}

/// What [`Bus::count`](super::Bus::count) returns: the counter's value after the
/// increment and how long until it starts again from zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// The count in the current window, this increment included.
    pub value: u64,
    /// How long the current window still lasts (at most the window, more than zero).
    pub resets_in: Duration,
}

/// Whether a bus is connected to its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusState {
    /// Connected: what is published reaches the other instances.
    Up,
    /// Not connected: events and messages published elsewhere are lost to this instance
    /// until it is back (its subscribers then receive [`Received::Resync`](super::Received::Resync)).
    Down,
}

/// Why a bus operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// The server cannot be reached or refused the operation.
    #[error("bus unavailable: {0}")]
    Unavailable(String),
    /// The operation did not finish within the bus's deadline.
    #[error("bus operation timed out after {0:?}")]
    Timeout(Duration),
    /// The input cannot be carried (a bad key, window, id, or a message too large).
    #[error("bus input: {0}")]
    Invalid(String),
}

/// Checks a counter key and window (what every implementation refuses the same way).
///
/// # Errors
/// [`BusError::Invalid`] for an empty key, one longer than [`MAX_KEY`] bytes, or a window
/// under a millisecond or over a day.
pub fn check_count(key: &str, window: Duration) -> Result<(), BusError> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(BusError::Invalid(format!(
            "a counter key has 1 to {MAX_KEY} bytes, not {}",
            key.len()
        )));
    }
    if window < Duration::from_millis(1) || window > Duration::from_secs(86_400) {
        return Err(BusError::Invalid(format!(
            "a counter window is 1 ms to 1 day, not {window:?}"
        )));
    }
    Ok(())
}
