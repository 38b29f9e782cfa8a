//! The protocol model shared by every dialect: JSON-RPC envelope, errors, methods,
//! dialects and request metadata.

pub mod dialect;
pub mod error;
pub(crate) mod json_text;
pub mod jsonrpc;
pub mod meta;
pub mod method;
pub(crate) mod method_params;
pub(crate) mod params;

pub use dialect::{
    Asking, Dialect, Elicitation, Era, LogLevels, StructuredOutput, V2025_03_26, V2025_06_18,
    V2025_11_25, V2026_07_28,
};
pub use error::{ErrorCode, RpcError};
pub use jsonrpc::RequestId;
pub use meta::{LogLevel, ProgressToken, RequestMeta};
pub use method::Method;
