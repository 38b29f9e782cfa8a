//! The closed set of MCP method names, parsed once into [`Method`].

/// Every MCP method any supported revision defines, plus `Unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// `initialize` (initialize era).
    Initialize,
    /// `ping` (initialize era).
    Ping,
    /// `server/discover` (2026-07-28).
    Discover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe` (initialize era; not served by a stateless server).
    ResourcesSubscribe,
    /// `resources/unsubscribe` (initialize era; not served by a stateless server).
    ResourcesUnsubscribe,
    /// `completion/complete`.
    CompletionComplete,
    /// `logging/setLevel` (initialize era).
    LoggingSetLevel,
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen,
    /// `tasks/get` (2026-07-28, tasks extension).
    TasksGet,
    /// `tasks/update` (2026-07-28, tasks extension).
    TasksUpdate,
    /// `tasks/cancel` (2026-07-28, tasks extension).
    TasksCancel,
    /// `notifications/initialized` (initialize era).
    Initialized,
    /// `notifications/cancelled`.
    Cancelled,
    /// `skills/list` (Skills extension).
    SkillsList,
    /// `skills/get` (Skills extension).
    SkillsGet,
    /// `resources/directory/read` (Skills extension).
    ResourcesDirectoryRead,
    /// Any other name.
    Unknown,
}

impl Method {
    /// Parses a method name. Names are case-sensitive.
    #[must_use]
    pub fn parse(name: &str) -> Self {
        match name {
            "initialize" => Self::Initialize,
            "ping" => Self::Ping,
            "server/discover" => Self::Discover,
            "tools/list" => Self::ToolsList,
            "tools/call" => Self::ToolsCall,
            "prompts/list" => Self::PromptsList,
            "prompts/get" => Self::PromptsGet,
            "resources/list" => Self::ResourcesList,
            "resources/templates/list" => Self::ResourceTemplatesList,
            "resources/read" => Self::ResourcesRead,
            "resources/subscribe" => Self::ResourcesSubscribe,
            "resources/unsubscribe" => Self::ResourcesUnsubscribe,
            "completion/complete" => Self::CompletionComplete,
            "logging/setLevel" => Self::LoggingSetLevel,
            "subscriptions/listen" => Self::SubscriptionsListen,
            "tasks/get" => Self::TasksGet,
            "tasks/update" => Self::TasksUpdate,
            "tasks/cancel" => Self::TasksCancel,
            "notifications/initialized" => Self::Initialized,
            "notifications/cancelled" => Self::Cancelled,
            "skills/list" => Self::SkillsList,
            "skills/get" => Self::SkillsGet,
            "resources/directory/read" => Self::ResourcesDirectoryRead,
            _ => Self::Unknown,
        }
    }

    /// The method's name; `"unknown"` for any other name (a bounded set, fit for a
    /// metric label).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initialize => "initialize",
            Self::Ping => "ping",
            Self::Discover => "server/discover",
            Self::ToolsList => "tools/list",
            Self::ToolsCall => "tools/call",
            Self::PromptsList => "prompts/list",
            Self::PromptsGet => "prompts/get",
            Self::ResourcesList => "resources/list",
            Self::ResourceTemplatesList => "resources/templates/list",
            Self::ResourcesRead => "resources/read",
            Self::ResourcesSubscribe => "resources/subscribe",
            Self::ResourcesUnsubscribe => "resources/unsubscribe",
            Self::CompletionComplete => "completion/complete",
            Self::LoggingSetLevel => "logging/setLevel",
            Self::SubscriptionsListen => "subscriptions/listen",
            Self::TasksGet => "tasks/get",
            Self::TasksUpdate => "tasks/update",
            Self::TasksCancel => "tasks/cancel",
            Self::Initialized => "notifications/initialized",
            Self::Cancelled => "notifications/cancelled",
            Self::SkillsList => "skills/list",
            Self::SkillsGet => "skills/get",
            Self::ResourcesDirectoryRead => "resources/directory/read",
            Self::Unknown => "unknown",
        }
    }

    /// The header `Mcp-Name` mirrors for this method, if any: `params.name` for
    /// `tools/call` and `prompts/get`, `params.uri` for `resources/read`,
    /// `params.taskId` for `tasks/get`, `tasks/update` and `tasks/cancel`.
    #[must_use]
    pub fn name_field(self) -> Option<&'static str> {
        match self {
            Self::ToolsCall | Self::PromptsGet => Some("name"),
            Self::ResourcesRead => Some("uri"),
            Self::TasksGet | Self::TasksUpdate | Self::TasksCancel => Some("taskId"),
            _ => None,
        }
    }

    /// Whether a 2026-07-28 result of this method carries `ttlMs` and `cacheScope`.
    #[must_use]
    pub fn is_cacheable(self) -> bool {
        matches!(
            self,
            Self::Discover
                | Self::ToolsList
                | Self::PromptsList
                | Self::ResourcesList
                | Self::ResourceTemplatesList
                | Self::ResourcesRead
                | Self::SkillsList
                | Self::SkillsGet
                | Self::ResourcesDirectoryRead
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_and_unknown() {
        assert_eq!(Method::parse("tools/call"), Method::ToolsCall);
        assert_eq!(Method::parse("Tools/Call"), Method::Unknown);
        assert_eq!(
            Method::parse("resources/templates/list"),
            Method::ResourceTemplatesList
        );
        assert_eq!(Method::ToolsCall.name_field(), Some("name"));
        assert!(Method::ResourcesRead.is_cacheable());
        assert!(!Method::ToolsCall.is_cacheable());
        assert_eq!(Method::parse("tasks/get").name_field(), Some("taskId"));
        assert_eq!(Method::parse("tasks/list"), Method::Unknown);
        assert_eq!(Method::parse("tasks/result"), Method::Unknown);
    }
}
