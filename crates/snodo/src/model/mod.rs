//! Result and component data types shared by every dialect: content blocks, resource
//! contents, implementation info, prompt messages and completion values.

mod content;
mod info;

pub use content::{
    Annotations, Content, PromptMessage, PromptResult, ResourceContents, Role, ToolResult,
};
pub use info::{CacheHint, CacheScope, Icon, ServerInfo};
