//! `#[snodo::tool]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{ItemFn, ReturnType};

use crate::attrs::Args;
use crate::params::{self, Kind, generic_of};

const STRINGS: &[&str] = &["name", "title", "description"];
const FLAGS: &[&str] = &["read_only", "destructive", "idempotent", "open_world"];

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = Args::parse("tool", attr, STRINGS, FLAGS)?;
    let mut item: ItemFn = syn::parse2(item)?;
    let params = params::take("tool", &mut item)?;

    let (name, mut chain) = args.identity(&item);
    for (flag, on, span) in &args.flags {
        chain.push(match flag.as_str() {
            "read_only" => quote_spanned!(*span=> .annotation("readOnlyHint", #on)),
            "destructive" => quote_spanned!(*span=> .destructive(#on)),
            "idempotent" => quote_spanned!(*span=> .idempotent(#on)),
            _ => quote_spanned!(*span=> .open_world(#on)),
        });
    }

    let ret = match &item.sig.output {
        ReturnType::Default => {
            return Err(syn::Error::new(
                item.sig.fn_token.span(),
                "a tool returns its result: ToolResult, String, &'static str, Json<T>, or a Result of one",
            ));
        }
        ReturnType::Type(_, ty) => (**ty).clone(),
    };
    let output = generic_of(&ret, "Json")
        .or_else(|| generic_of(&ret, "Result").and_then(|ok| generic_of(ok, "Json")));
    if let Some(t) = output {
        chain.push(quote!(.output::<#t>()));
    }

    let call = params::call(&item, &params);
    let checked = quote_spanned! {ret.span()=>
        __tool_result(#call)
    };
    let values: Vec<_> = params
        .iter()
        .filter(|p| matches!(p.kind, Kind::Value))
        .collect();
    let whole = params.iter().find(|p| matches!(p.kind, Kind::Whole));
    let (args_struct, args_ty, bind) = if let Some(w) = whole {
        let ty = &w.ty;
        (quote!(), quote!(#ty), quote!())
    } else if values.is_empty() {
        (quote!(), quote!(::snodo::NoArguments), quote!())
    } else {
        let fields = values.iter().map(|p| {
            let (i, t, a) = (&p.ident, &p.ty, &p.field_attrs);
            quote!(#(#a)* #i: #t,)
        });
        let idents: Vec<_> = values.iter().map(|p| &p.ident).collect();
        (
            quote! {
                // No doc comment: schemars would make it the schema's description.
                #[doc(hidden)]
                #[derive(::snodo::__private::serde::Deserialize, ::snodo::__private::schemars::JsonSchema)]
                #[serde(crate = "::snodo::__private::serde")]
                #[schemars(crate = "::snodo::__private::schemars")]
                pub struct Arguments {
                    #(#fields)*
                }
            },
            quote!(Arguments),
            quote!(let Arguments { #(#idents),* } = __args;),
        )
    };
    let state = params::state(&params);
    let doc = format!("The `{name}` tool, ready to register with `RuntimeBuilder::tool`.");
    let body = quote! {
        #args_struct

        fn __tool_result<R: ::snodo::IntoToolResult>(
            r: R,
        ) -> ::std::result::Result<::snodo::ToolResult, ::snodo::HandlerError> {
            ::snodo::IntoToolResult::into_tool_result(r)
        }

        #[doc = #doc]
        #[must_use]
        pub fn tool() -> ::snodo::Tool {
            ::snodo::Tool::new(#name)
                #(#chain)*
                .handler(|#state __args: #args_ty, __ctx: ::snodo::RequestContext| async move {
                    #bind
                    #checked
                })
        }
    };
    Ok(params::module(&item, "tool", body))
}
