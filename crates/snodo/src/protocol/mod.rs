//! The protocol model shared by every dialect: JSON-RPC envelope, errors, methods,
//! dialects and request metadata.

pub(crate) mod dialect;
pub(crate) mod error;
pub(crate) mod json_text;
pub(crate) mod jsonrpc;
pub(crate) mod meta;
pub(crate) mod method;
pub(crate) mod method_params;
pub(crate) mod object_scan;
pub(crate) mod params;
pub(crate) mod trace;

pub use dialect::{ALL, Dialect, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28};
pub(crate) use dialect::{Asking, LogLevels, StructuredOutput};
pub use error::ErrorCode;
/// Re-exported at the crate root ([`crate::RpcError`]).
pub(crate) use error::RpcError;
pub use jsonrpc::RequestId;
pub use meta::{LogLevel, ProgressToken, RequestMeta};
pub use method::Method;
