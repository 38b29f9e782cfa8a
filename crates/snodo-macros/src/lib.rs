//! Attribute macros for [snodo](https://docs.rs/snodo), re-exported by it behind the
//! default `macros` feature: write `#[snodo::tool]`, `#[snodo::prompt]` and
//! `#[snodo::resource]`, not this crate's paths.
//!
//! Each macro leaves the function as written (callable and testable on its own) and adds
//! a module of the same name whose one function builds the component with the builder
//! API: `echo::tool()` is a [`snodo::Tool`](https://docs.rs/snodo/latest/snodo/struct.Tool.html),
//! registered like any other with `Runtime::builder(..).tool(echo::tool())`.
//!
//! ```ignore
//! /// Echoes its text.
//! #[snodo::tool(read_only, title = "Echo")]
//! async fn echo(/// The text to send back.
//!               text: String) -> String {
//!     text
//! }
//! ```

#![forbid(unsafe_code)]

mod attrs;
mod params;
mod prompt;
mod resource;
mod tool;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool: `NAME::tool()` returns the `snodo::Tool`.
///
/// - Arguments: each parameter becomes a property of the generated input schema (its
///   `///` comment is the property's description; `Option<T>` is optional; `serde` and
///   `schemars` attributes pass through), or one parameter marked `#[args]` whose type
///   derives `Deserialize` and `JsonSchema` is the whole arguments object.
/// - A parameter of type `RequestContext` (or `&RequestContext`) receives the context.
/// - A parameter of type `State<S>` (or the pattern `State(s): State<S>`) receives the state
///   registered with `RuntimeBuilder::with_state`.
/// - The doc comment is the description; a `Json<T>` (or `Result<Json<T>, E>`) return
///   derives the output schema from `T`.
/// - Arguments of the attribute: `name = ".."`, `title = ".."`, `description = ".."`,
///   `read_only`, `destructive`, `idempotent`, `open_world` (each hint also takes
///   `= true` / `= false`).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns an `async fn` into a prompt: `NAME::prompt()` returns the `snodo::Prompt`.
///
/// Parameters are the prompt's arguments: `String` (required) or `Option<String>`
/// (optional), each documented with a `///` comment (its description); a
/// `RequestContext` parameter receives the context, a `State<S>` parameter the state
/// registered with `RuntimeBuilder::with_state`. The function returns a
/// `PromptResult`, a `Vec<PromptMessage>`, a `String` (one user message), or a `Result`
/// of one. Attribute arguments: `name`, `title`, `description`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    prompt::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns an `async fn` into a resource or, when its `uri` has variables, a resource
/// template: either way `NAME::resource()` returns it, and `RuntimeBuilder::resource`
/// registers it (`NAME::template()`, the older name for a template, is deprecated).
///
/// `#[snodo::resource(uri = "file:///{+path}")]`: each `String` parameter is the
/// template variable of the same name; a `RequestContext` or `ReadRequest` parameter
/// receives that, a `State<S>` parameter the registered state. The function returns a `String` (text contents at the requested URI),
/// `ResourceContents`, `Vec<ResourceContents>`, or a `Result` of one. Attribute
/// arguments: `uri` (required), `name`, `title`, `description`, `mime_type`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    resource::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
