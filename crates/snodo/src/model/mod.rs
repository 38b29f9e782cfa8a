//! Result and component data types shared by every dialect: content blocks, resource
//! contents, implementation info, prompt messages, annotations and completion values.

mod annotations;
mod content;
mod info;

pub use annotations::{Annotations, ToolAnnotations};
pub use content::{Content, PromptMessage, PromptResult, ResourceContents, Role, ToolResult};
pub use info::{CacheHint, CacheScope, Icon, ServerInfo};
