//! The typed `params` of each method family, read once where a request is admitted.
//!
//! The envelope scan ([`SplitParams`](super::params::SplitParams)) keeps `_meta` typed,
//! `arguments` as JSON and every other member in a short list
//! ([`Members`](super::params::Members)); once the method is known,
//! [`MethodParams::read`] takes the method's own members out of it (values are moved,
//! not copied) and checks them. Every `-32602` "invalid params"
//! message of a request's own members is written here.
//!
//! A request whose members are invalid is still admitted: its error is reported when the
//! router first asks for the params, after the checks that come first on the wire (an
//! unknown or disabled method is `-32601` whatever its params).

use std::collections::HashMap;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::params::Members;
use super::{LogLevel, Method, RequestId, RpcError};

/// Most resource URIs (or task ids) one `subscriptions/listen` may watch.
pub(crate) const MAX_WATCHED: usize = 1000;

/// `-32602` with a message: the one builder of a params refusal.
pub(crate) fn invalid(message: impl Into<std::borrow::Cow<'static, str>>) -> RpcError {
    RpcError::invalid_params(message)
}

/// A member that is present, `null` included (`Option<Value>` alone reads `null` as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// An optional string member: absent is `None`; anything but a string (even `null`) is refused.
fn opt_text(key: &str, v: Option<Value>) -> Result<Option<String>, RpcError> {
    match v {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(not_a_string(key)),
    }
}

/// A required, non-empty string member.
fn text(key: &str, v: Option<Value>) -> Result<String, RpcError> {
    match opt_text(key, v)? {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(required(key)),
    }
}

fn not_a_string(key: &str) -> RpcError {
    invalid(format!("{key} must be a string"))
}

fn required(key: &str) -> RpcError {
    invalid(format!("{key} is required and must be a non-empty string"))
}

/// An optional object member: absent or `null` is `None`.
fn opt_object(key: &str, v: Option<Value>) -> Result<Option<Map<String, Value>>, RpcError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(invalid(format!("{key} must be an object"))),
    }
}

/// An object of strings (prompt arguments, completion context): absent or `null` is empty.
pub(crate) fn string_map(
    value: Option<&Value>,
    what: &str,
) -> Result<HashMap<String, String>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(HashMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(invalid(format!("{what} values must be strings"))),
            })
            .collect(),
        Some(_) => Err(invalid(format!("{what} must be an object"))),
    }
}

/// The `arguments` of a `tools/call`: an object; absent or `null` is the empty object.
pub(crate) fn tool_arguments(arguments: Option<Value>) -> Result<Value, RpcError> {
    match arguments {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(invalid("arguments must be an object")),
    }
}

/// The multi round-trip members of `tools/call`, `prompts/get` and `resources/read`
/// (2026-07-28; `task` is the 2025-11-25 tasks member, refused by the router). They
/// are checked by [`Rounds::open`]: a dialect without rounds refuses them whatever
/// their form.
///
/// Boxed, and absent on a first round: a call is moved several times on its way to the
/// handler, and two inline `Option<Value>`s made every move 64 bytes longer.
#[derive(Debug, Default)]
pub(crate) struct Rounds(Option<Box<RoundMembers>>);

/// The members [`Rounds`] holds when any is present.
#[derive(Debug)]
struct RoundMembers {
    request_state: Option<Value>,
    input_responses: Option<Value>,
}

/// A round's checked members: `requestState` and `inputResponses`.
pub(crate) type Opened<'a> = (Option<&'a str>, Option<&'a Map<String, Value>>);

impl Rounds {
    /// Whether any of `task`, `inputResponses`, `requestState` was present.
    pub(crate) fn present(&self) -> bool {
        self.0.is_some()
    }

    /// `requestState` and `inputResponses`, checked (absent or `null` is `None`).
    pub(crate) fn open(&self) -> Result<Opened<'_>, RpcError> {
        let Some(members) = self.0.as_deref() else {
            return Ok((None, None));
        };
        let state = match &members.request_state {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(invalid("requestState must be a string")),
        };
        let responses = match &members.input_responses {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(invalid("inputResponses must be an object")),
        };
        Ok((state, responses))
    }
}

/// The members of an interactive request as they arrive (present-but-`null` is `Some`).
struct RawInteractive {
    name: Option<Value>,
    uri: Option<Value>,
    task: Option<Value>,
    input_responses: Option<Value>,
    request_state: Option<Value>,
}

impl RawInteractive {
    fn take(rest: &mut Members<'_>) -> Self {
        Self {
            name: rest.take("name"),
            uri: rest.take("uri"),
            task: rest.take("task"),
            input_responses: rest.take("inputResponses"),
            request_state: rest.take("requestState"),
        }
    }
}

/// `tools/call`, `prompts/get` (`target` is `name`) and `resources/read` (`target` is `uri`).
/// Their `arguments` stay on the call, as JSON.
#[derive(Debug)]
pub(crate) struct InteractiveParams {
    /// The tool or prompt name, or the resource URI.
    pub(crate) target: String,
    /// The multi round-trip members.
    pub(crate) rounds: Rounds,
}

/// A list's checked params.
#[derive(Debug, Default)]
pub(crate) struct Page {
    /// `cursor`, when present.
    pub(crate) cursor: Option<String>,
}

/// `skills/get`, `resources/directory/read` (paginated).
#[derive(Debug)]
#[cfg_attr(not(feature = "skills"), allow(dead_code))]
pub(crate) struct UriParams {
    /// `uri`.
    pub(crate) uri: String,
    /// `cursor`, when present.
    pub(crate) cursor: Option<String>,
}

/// The members of an `initialize` (`clientInfo`: absent or `null` is `None`).
struct RawInitialize {
    protocol_version: Option<Value>,
    capabilities: Option<Value>,
    client_info: Option<Value>,
}

/// `clientInfo`: only the presence of its string members is checked.
#[derive(Deserialize)]
struct ClientInfo {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    version: Option<Value>,
}

/// `initialize`. The proposed version is read even when the rest is invalid: it picks
/// the dialect the refusal is written in.
#[derive(Debug, Default)]
pub(crate) struct InitializeParams {
    /// `protocolVersion`, when it is a string.
    pub(crate) proposed: Option<String>,
    /// `capabilities`, when it is an object.
    pub(crate) capabilities: Option<Map<String, Value>>,
    /// Whether `protocolVersion`, `capabilities` and `clientInfo` are all well-formed.
    valid: bool,
}

impl InitializeParams {
    /// `-32602` unless the required members are well-formed.
    pub(crate) fn check(&self) -> Result<(), RpcError> {
        if self.valid {
            return Ok(());
        }
        Err(invalid(
            "initialize requires protocolVersion, capabilities and clientInfo name/version",
        ))
    }
}

/// The members of a `completion/complete` (absent or `null` is `None`).
struct RawComplete {
    reference: Option<Value>,
    argument: Option<Value>,
    context: Option<Value>,
}

/// What a `completion/complete` completes.
#[derive(Debug)]
pub(crate) enum Reference {
    /// `ref/prompt`: a prompt's argument.
    Prompt(String),
    /// `ref/resource`: a resource template's variable.
    Resource(String),
}

/// `completion/complete`.
#[derive(Debug)]
pub(crate) struct CompleteParams {
    /// `ref`.
    pub(crate) reference: Reference,
    /// `argument.name`.
    pub(crate) argument: String,
    /// `argument.value` (empty when absent).
    pub(crate) value: String,
    /// `context.arguments`.
    pub(crate) context: HashMap<String, String>,
}

/// `logging/setLevel`.
#[derive(Debug)]
pub(crate) struct SetLevelParams {
    /// `level`.
    pub(crate) level: LogLevel,
}

/// `subscriptions/listen`: what the client asks to be told.
#[derive(Debug, Default)]
pub(crate) struct ListenParams {
    /// `notifications.toolsListChanged`.
    pub(crate) tools: bool,
    /// `notifications.promptsListChanged`.
    pub(crate) prompts: bool,
    /// `notifications.resourcesListChanged`.
    pub(crate) resources: bool,
    /// `notifications.resourceSubscriptions`.
    pub(crate) watched: Vec<String>,
    /// `notifications.taskIds`, when present.
    pub(crate) task_ids: Option<Vec<String>>,
}

/// The members of a task operation (present-but-`null` is `Some`).
struct RawTask {
    task_id: Option<Value>,
    input_responses: Option<Value>,
}

/// `tasks/get`, `tasks/update`, `tasks/cancel`.
#[derive(Debug)]
pub(crate) struct TaskParams {
    /// `taskId`.
    pub(crate) task_id: String,
    /// `inputResponses` (`tasks/update`; empty otherwise).
    pub(crate) input_responses: Map<String, Value>,
}

/// The request a `notifications/cancelled` names, if it is well-formed (a bad id or a
/// non-string reason names nothing).
pub(crate) fn cancelled(mut rest: Members<'_>) -> Option<RequestId> {
    let reason_ok = rest
        .take("reason")
        .is_none_or(|r| r.is_string() || r.is_null());
    let id = RequestId::deserialize(rest.take("requestId")?).ok()?;
    reason_ok.then_some(id)
}

/// The checked params of one request, by method family.
#[derive(Debug)]
pub(crate) enum MethodParams {
    /// A method whose own members are not read (`ping`, `server/discover`, …).
    None,
    /// `initialize`.
    Initialize(Box<InitializeParams>),
    /// The paginated lists.
    List(Page),
    /// `tools/call`, `prompts/get`, `resources/read`.
    Interactive(InteractiveParams),
    /// `skills/get`, `resources/directory/read`.
    #[cfg_attr(not(feature = "skills"), allow(dead_code))]
    Uri(UriParams),
    /// `completion/complete` (boxed, as the rare variants below: the call that carries
    /// this enum is moved several times per request, and the largest variant sets its size).
    Complete(Box<CompleteParams>),
    /// `logging/setLevel`.
    SetLevel(SetLevelParams),
    /// `subscriptions/listen`.
    Listen(Box<ListenParams>),
    /// The task operations.
    Task(TaskParams),
    /// Invalid members: the refusal, and the method's target member if it was a string
    /// (the 2026-07-28 `Mcp-Name` check and the request log still see it).
    Invalid {
        /// The `-32602`.
        error: Box<RpcError>,
        /// `params.name`, `params.uri` or `params.taskId`, when a string.
        target: Option<String>,
    },
}

impl MethodParams {
    /// Reads and checks the members of `params` (other than `_meta` and `arguments`)
    /// for `method`. Members the method does not define are ignored.
    pub(crate) fn read(method: Method, mut rest: Members<'_>) -> Self {
        use Method as M;
        let read = match method {
            M::Initialize => Ok(Self::Initialize(Box::new(initialize(RawInitialize {
                protocol_version: rest.take("protocolVersion"),
                capabilities: rest.take("capabilities"),
                client_info: rest.take_non_null("clientInfo"),
            })))),
            M::ToolsList
            | M::PromptsList
            | M::ResourcesList
            | M::ResourceTemplatesList
            | M::SkillsList => opt_text("cursor", rest.take("cursor"))
                .map(|cursor| Self::List(Page { cursor }))
                .map_err(Refused::from),
            M::ToolsCall | M::PromptsGet | M::ResourcesRead => {
                interactive(method, RawInteractive::take(&mut rest)).map(Self::Interactive)
            }
            M::SkillsGet | M::ResourcesDirectoryRead => text("uri", rest.take("uri"))
                .and_then(|uri| {
                    Ok(Self::Uri(UriParams {
                        uri,
                        cursor: opt_text("cursor", rest.take("cursor"))?,
                    }))
                })
                .map_err(Refused::from),
            M::CompletionComplete => complete(RawComplete {
                reference: rest.take_non_null("ref"),
                argument: rest.take_non_null("argument"),
                context: rest.take_non_null("context"),
            })
            .map(|p| Self::Complete(Box::new(p)))
            .map_err(Refused::from),
            M::LoggingSetLevel => rest
                .take_non_null("level")
                .as_ref()
                .and_then(Value::as_str)
                .and_then(LogLevel::parse)
                .map(|level| Self::SetLevel(SetLevelParams { level }))
                .ok_or_else(|| Refused::from(invalid("level must be a known log level"))),
            M::SubscriptionsListen => listen(rest.take("notifications"))
                .map(|p| Self::Listen(Box::new(p)))
                .map_err(Refused::from),
            M::TasksGet | M::TasksUpdate | M::TasksCancel => task(
                method,
                RawTask {
                    task_id: rest.take("taskId"),
                    input_responses: rest.take("inputResponses"),
                },
            )
            .map(Self::Task),
            M::Ping
            | M::Discover
            | M::ResourcesSubscribe
            | M::ResourcesUnsubscribe
            | M::Initialized
            | M::Cancelled
            | M::Unknown => Ok(Self::None),
        };
        read.unwrap_or_else(|Refused(error, target)| Self::Invalid {
            error: Box::new(error),
            target,
        })
    }

    /// The member `Mcp-Name` mirrors (`name`, `uri` or `taskId`), when it is a string.
    pub(crate) fn target(&self) -> Option<&str> {
        match self {
            Self::Interactive(p) => Some(&p.target),
            Self::Task(p) => Some(&p.task_id),
            Self::Invalid { target, .. } => target.as_deref(),
            _ => None,
        }
    }

    /// The `cursor` of a paginated request.
    pub(crate) fn cursor(&self) -> Result<Option<&str>, RpcError> {
        match self {
            Self::List(p) => Ok(p.cursor.as_deref()),
            Self::Uri(p) => Ok(p.cursor.as_deref()),
            other => Err(other.refusal()),
        }
    }

    /// The `protocolVersion` an `initialize` proposes, when it is a string.
    pub(crate) fn proposed_version(&self) -> Option<&str> {
        match self {
            Self::Initialize(p) => p.proposed.as_deref(),
            _ => None,
        }
    }
}

/// The accessors the router uses: the params of the family, or the refusal.
macro_rules! accessor {
    ($($(#[$doc:meta])* $fn:ident => $variant:ident($ty:ty);)*) => {
        impl MethodParams {
            $(
                $(#[$doc])*
                pub(crate) fn $fn(&self) -> Result<&$ty, RpcError> {
                    match self {
                        Self::$variant(p) => Ok(p),
                        other => Err(other.refusal()),
                    }
                }
            )*
        }
    };
}

accessor! {
    /// `initialize`.
    initialize => Initialize(InitializeParams);
    /// `tools/call`, `prompts/get`, `resources/read`.
    interactive => Interactive(InteractiveParams);
    /// `skills/get`, `resources/directory/read`.
    #[cfg_attr(not(feature = "skills"), allow(dead_code))]
    uri => Uri(UriParams);
    /// `logging/setLevel`.
    set_level => SetLevel(SetLevelParams);
    /// `subscriptions/listen`.
    listen => Listen(ListenParams);
    /// The task operations.
    task => Task(TaskParams);
}

impl MethodParams {
    /// Why these params are not the family asked for: the refusal of invalid members,
    /// or (a router bug) a family mismatch.
    pub(crate) fn refusal(&self) -> RpcError {
        match self {
            Self::Invalid { error, .. } => (**error).clone(),
            _ => RpcError::internal("the request's params were read for another method"),
        }
    }
}

/// A refusal, with the method's target member when it was a string.
struct Refused(RpcError, Option<String>);

impl From<RpcError> for Refused {
    fn from(e: RpcError) -> Self {
        Self(e, None)
    }
}

/// The target member (`name`, `uri`, `taskId`): required and non-empty. A string
/// refused for being empty is kept as the target.
fn target(key: &str, v: Option<Value>) -> Result<String, Refused> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(s)) => Err(Refused(required(key), Some(s))),
        Some(_) => Err(Refused(not_a_string(key), None)),
        None => Err(Refused(required(key), None)),
    }
}

fn initialize(raw: RawInitialize) -> InitializeParams {
    let proposed = raw.protocol_version.as_ref().and_then(Value::as_str);
    let client_ok = raw
        .client_info
        .and_then(|c| ClientInfo::deserialize(c).ok())
        .is_some_and(|c| {
            c.name.as_ref().is_some_and(Value::is_string)
                && c.version.as_ref().is_some_and(Value::is_string)
        });
    let capabilities = match raw.capabilities {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    InitializeParams {
        valid: proposed.is_some_and(|v| !v.is_empty()) && capabilities.is_some() && client_ok,
        proposed: proposed.map(str::to_owned),
        capabilities,
    }
}

fn interactive(method: Method, mut raw: RawInteractive) -> Result<InteractiveParams, Refused> {
    let key = method.name_field().unwrap_or("name");
    let member = if key == "uri" {
        raw.uri.take()
    } else {
        raw.name.take()
    };
    let present =
        raw.task.is_some() || raw.input_responses.is_some() || raw.request_state.is_some();
    let rounds = Rounds(present.then(|| {
        Box::new(RoundMembers {
            request_state: raw.request_state,
            input_responses: raw.input_responses,
        })
    }));
    Ok(InteractiveParams {
        target: target(key, member)?,
        rounds,
    })
}

fn complete(raw: RawComplete) -> Result<CompleteParams, RpcError> {
    let Some(Value::Object(mut reference)) = raw.reference else {
        return Err(invalid("ref is required"));
    };
    let Some(Value::Object(mut argument)) = raw.argument else {
        return Err(invalid("argument is required"));
    };
    let name = text("name", argument.remove("name"))?;
    let value = match argument.remove("value") {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let context = string_map(
        raw.context.as_ref().and_then(|c| c.get("arguments")),
        "context.arguments",
    )?;
    let reference = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => Reference::Prompt(text("name", reference.remove("name"))?),
        Some("ref/resource") => Reference::Resource(text("uri", reference.remove("uri"))?),
        _ => return Err(invalid("ref.type must be ref/prompt or ref/resource")),
    };
    Ok(CompleteParams {
        reference,
        argument: name,
        value,
        context,
    })
}

fn listen(notifications: Option<Value>) -> Result<ListenParams, RpcError> {
    let Some(Value::Object(mut requested)) = notifications else {
        return Err(invalid("notifications must be an object"));
    };
    let flag = |key: &str| match requested.get(key) {
        None | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => Ok(true),
        Some(_) => Err(invalid(format!("notifications.{key} must be a boolean"))),
    };
    let (tools, prompts, resources) = (
        flag("toolsListChanged"),
        flag("promptsListChanged"),
        flag("resourcesListChanged"),
    );
    let watched = watch_list(
        requested.remove("resourceSubscriptions"),
        |u| u.contains(':'),
        (
            "resourceSubscriptions must hold absolute URIs",
            "resourceSubscriptions",
            "URIs",
        ),
    )?
    .unwrap_or_default();
    let task_ids = watch_list(
        requested.remove("taskIds"),
        |_| true,
        ("taskIds must hold strings", "taskIds", "task ids"),
    )?;
    Ok(ListenParams {
        tools: tools?,
        prompts: prompts?,
        resources: resources?,
        watched,
        task_ids,
    })
}

/// A bounded array of strings that `accept`s (`subscriptions/listen`); `what` names the
/// refusals: (a bad item, the member, its items).
fn watch_list(
    v: Option<Value>,
    accept: impl Fn(&str) -> bool,
    (bad_item, member, items): (&'static str, &str, &str),
) -> Result<Option<Vec<String>>, RpcError> {
    match v {
        None => Ok(None),
        Some(Value::Array(list)) if list.len() <= MAX_WATCHED => list
            .into_iter()
            .map(|item| match item {
                Value::String(s) if accept(&s) => Some(s),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| invalid(bad_item)),
        Some(_) => Err(invalid(format!(
            "{member} must be an array of at most {MAX_WATCHED} {items}"
        ))),
    }
}

fn task(method: Method, raw: RawTask) -> Result<TaskParams, Refused> {
    let task_id = target("taskId", raw.task_id)?;
    let input_responses = if method == Method::TasksUpdate {
        match opt_object("inputResponses", raw.input_responses) {
            Ok(r) => r.unwrap_or_default(),
            Err(e) => return Err(Refused(e, Some(task_id))),
        }
    } else {
        Map::new()
    };
    Ok(TaskParams {
        task_id,
        input_responses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(method: &str, params: Value) -> MethodParams {
        let Value::Object(rest) = params else {
            panic!("params must be an object")
        };
        MethodParams::read(Method::parse(method), rest.into())
    }

    fn refusal(p: &MethodParams) -> String {
        match p {
            MethodParams::Invalid { error, .. } => error.message().to_owned(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn reads_each_family() {
        let p = read("tools/call", json!({"name": "echo", "extra": [1]}));
        assert_eq!(p.target(), Some("echo"));
        assert!(p.interactive().is_ok_and(|i| !i.rounds.present()));
        let p = read(
            "resources/read",
            json!({"uri": "a:b", "requestState": null}),
        );
        assert!(
            p.interactive()
                .is_ok_and(|i| i.target == "a:b" && i.rounds.present())
        );
        let p = read("tools/list", json!({}));
        assert!(p.cursor().is_ok_and(|c| c.is_none()));
        let p = read("tasks/get", json!({"taskId": "t1", "inputResponses": 1}));
        assert_eq!(p.target(), Some("t1"));
        let p = read("initialize", json!({"protocolVersion": "2025-06-18"}));
        assert_eq!(p.proposed_version(), Some("2025-06-18"));
        assert!(p.initialize().is_ok_and(|i| i.check().is_err()));
        let p = read(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a"}}),
        );
        assert!(matches!(p, MethodParams::Complete(c) if c.argument == "a" && c.value.is_empty()));
        assert!(read("ping", json!({"x": 1})).cursor().is_err());
    }

    #[test]
    fn refuses_with_the_member_named() {
        let cases = [
            (
                "tools/call",
                json!({}),
                "name is required and must be a non-empty string",
            ),
            ("tools/call", json!({"name": 1}), "name must be a string"),
            (
                "tools/list",
                json!({"cursor": null}),
                "cursor must be a string",
            ),
            (
                "tasks/update",
                json!({"taskId": "t", "inputResponses": 1}),
                "inputResponses must be an object",
            ),
            (
                "logging/setLevel",
                json!({"level": "loud"}),
                "level must be a known log level",
            ),
            (
                "completion/complete",
                json!({"argument": {}}),
                "ref is required",
            ),
            (
                "subscriptions/listen",
                json!({}),
                "notifications must be an object",
            ),
            (
                "subscriptions/listen",
                json!({"notifications": {"taskIds": [1]}}),
                "taskIds must hold strings",
            ),
        ];
        for (method, params, message) in cases {
            assert_eq!(refusal(&read(method, params)), message, "{method}");
        }
        let p = read("tools/call", json!({"name": "echo", "inputResponses": []}));
        assert_eq!(p.target(), Some("echo"));
        let opened = p.interactive().map(|i| i.rounds.open().map(|_| ()));
        assert_eq!(
            opened
                .ok()
                .and_then(Result::err)
                .map(|e| e.message().to_owned()),
            Some("inputResponses must be an object".to_owned())
        );
    }

    #[test]
    fn reads_cancellations() {
        let members = |v: Value| match v {
            Value::Object(m) => Members::from(m),
            _ => Members::default(),
        };
        assert_eq!(
            cancelled(members(json!({"requestId": 3, "reason": "x"}))),
            Some(RequestId::Number(3))
        );
        assert_eq!(
            cancelled(members(json!({"requestId": 3, "reason": 1}))),
            None
        );
        assert_eq!(cancelled(members(json!({"requestId": null}))), None);
    }
}
