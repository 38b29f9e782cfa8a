//! The function a macro is put on: its checks, and its parameters sorted into the
//! context, the request, and the values the component receives.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned as _;
use syn::{Attribute, FnArg, ItemFn, Pat, Type};

/// What one parameter of the function receives.
pub(crate) enum Kind {
    /// The `RequestContext` (`by_ref`: `&RequestContext`).
    Context { by_ref: bool },
    /// The resource `ReadRequest`.
    Request,
    /// Shared state (`State<S>`).
    State,
    /// The whole arguments object (a parameter marked `#[args]`).
    Whole,
    /// One named value (a tool argument, a prompt argument, a template variable).
    Value,
}

/// One parameter.
pub(crate) struct Param {
    pub(crate) kind: Kind,
    /// The name (a binding for `Whole`).
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// `///`, `serde` and `schemars` attributes (for a generated field).
    pub(crate) field_attrs: Vec<Attribute>,
    pub(crate) span: Span,
}

/// The last path segment's name of a type (through one `&`).
pub(crate) fn type_name(ty: &Type) -> Option<(String, bool)> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| (s.ident.to_string(), false)),
        Type::Reference(r) => type_name(&r.elem).map(|(n, _)| (n, true)),
        _ => None,
    }
}

/// The single generic type argument of `ty` when its last segment is `name`
/// (`Json<T>` → `T`).
pub(crate) fn generic_of<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != name {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// Checks the function's shape and sorts its parameters; strips every parameter
/// attribute from `item` (so the function compiles as written, docs and all).
pub(crate) fn take(macro_name: &str, item: &mut ItemFn) -> syn::Result<Vec<Param>> {
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            format!("#[snodo::{macro_name}] goes on an `async fn`"),
        ));
    }
    if let Some(r) = sig.receiver() {
        return Err(syn::Error::new(
            r.span(),
            format!(
                "#[snodo::{macro_name}] goes on a free `async fn`, not a method: move it out of the `impl` block"
            ),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            format!("#[snodo::{macro_name}] cannot be generic: the schema is fixed at build time"),
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(
            v.span(),
            "variadic functions are not supported",
        ));
    }
    let mut params = Vec::new();
    let mut context_seen = false;
    let mut state_seen = false;
    for (i, input) in item.sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(pt) = input else { continue };
        let mut whole = false;
        let mut field_attrs = Vec::new();
        for a in std::mem::take(&mut pt.attrs) {
            if a.path().is_ident("args") {
                whole = true;
            } else if a.path().is_ident("doc")
                || a.path().is_ident("serde")
                || a.path().is_ident("schemars")
            {
                field_attrs.push(a);
            } else {
                return Err(syn::Error::new(
                    a.span(),
                    "only `///` comments, `#[args]`, `#[serde(..)]` and `#[schemars(..)]` are allowed on parameters here",
                ));
            }
        }
        let span = pt.span();
        let kind = match type_name(&pt.ty) {
            Some((n, by_ref)) if n == "RequestContext" => {
                if context_seen {
                    return Err(syn::Error::new(span, "only one `RequestContext` parameter"));
                }
                context_seen = true;
                Kind::Context { by_ref }
            }
            Some((n, false)) if n == "ReadRequest" => Kind::Request,
            Some((n, false)) if n == "State" => {
                if state_seen {
                    return Err(syn::Error::new(
                        span,
                        "only one `State` parameter: put what the handler needs in one state type",
                    ));
                }
                state_seen = true;
                Kind::State
            }
            _ if whole => Kind::Whole,
            _ => Kind::Value,
        };
        let ident = match (&kind, &*pt.pat) {
            (_, Pat::Ident(p)) => p.ident.clone(),
            (Kind::Value, other) => {
                return Err(syn::Error::new(
                    other.span(),
                    "a parameter here needs a plain name (it names the argument); to destructure a struct of arguments, mark it `#[args]`",
                ));
            }
            _ => format_ident!("__param{}", i),
        };
        params.push(Param {
            kind,
            ident,
            ty: (*pt.ty).clone(),
            field_attrs,
            span,
        });
    }
    let wholes = params
        .iter()
        .filter(|p| matches!(p.kind, Kind::Whole))
        .count();
    let values = params
        .iter()
        .filter(|p| matches!(p.kind, Kind::Value))
        .count();
    if wholes > 1 || (wholes == 1 && values > 0) {
        let p = params
            .iter()
            .find(|p| matches!(p.kind, Kind::Whole))
            .map_or_else(Span::call_site, |p| p.span);
        return Err(syn::Error::new(
            p,
            "an `#[args]` parameter is the whole arguments object: the other parameters may only be the RequestContext and the State",
        ));
    }
    Ok(params)
}

/// The call of the user's function with the handler's bindings: values by name, the
/// context as `__ctx`, the request as `__req`, the state as `__state`, the whole
/// arguments as `__args`.
pub(crate) fn call(item: &ItemFn, params: &[Param]) -> TokenStream {
    let f = &item.sig.ident;
    let args = params.iter().map(|p| match p.kind {
        Kind::Context { by_ref: true } => quote!(&__ctx),
        Kind::Context { by_ref: false } => quote!(__ctx),
        Kind::Request => quote!(__req),
        Kind::State => quote!(__state),
        Kind::Whole => quote!(__args),
        Kind::Value => {
            let i = &p.ident;
            quote!(#i)
        }
    });
    quote!(super::#f(#(#args),*).await)
}

/// The handler closure's leading `State<S>` parameter, when the function takes one
/// (which makes the handler the `(State<S>, input, context)` form).
pub(crate) fn state(params: &[Param]) -> Option<TokenStream> {
    params
        .iter()
        .find(|p| matches!(p.kind, Kind::State))
        .map(|p| {
            let ty = &p.ty;
            quote!(__state: #ty,)
        })
}

/// The wrapping module: the function's visibility and name, glob-importing the parent
/// so the parameter and return types resolve as they do at the function.
pub(crate) fn module(item: &ItemFn, what: &str, body: TokenStream) -> TokenStream {
    let vis = &item.vis;
    let name = &item.sig.ident;
    let doc = format!(
        "The `{name}` {what}, generated by `#[snodo::{what}]` from the function of the same name."
    );
    quote! {
        #item

        #[doc = #doc]
        #[allow(non_snake_case, unused_imports, clippy::all)]
        #vis mod #name {
            use super::*;
            #body
        }
    }
}
