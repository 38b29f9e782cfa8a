//! `#[snodo::prompt]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{ItemFn, ReturnType};

use crate::attrs::{Args, doc_text};
use crate::params::{self, Kind, generic_of, type_name};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = Args::parse("prompt", attr, &["name", "title", "description"], &[])?;
    let mut item: ItemFn = syn::parse2(item)?;
    let params = params::take("prompt", &mut item)?;

    let (name, mut chain) = args.identity(&item);
    let mut binds = Vec::new();
    for p in &params {
        match p.kind {
            Kind::Value => {}
            Kind::Context { .. } | Kind::State => continue,
            Kind::Whole | Kind::Request => {
                return Err(syn::Error::new(
                    p.span,
                    "a prompt's parameters are its string arguments (String or Option<String>), the RequestContext and the State",
                ));
            }
        }
        let is_string = |t: &syn::Type| type_name(t).is_some_and(|(n, r)| n == "String" && !r);
        let required = if is_string(&p.ty) {
            true
        } else if generic_of(&p.ty, "Option").is_some_and(is_string) {
            false
        } else {
            return Err(syn::Error::new(
                p.ty.span(),
                "prompt arguments are strings: use String (required) or Option<String> (optional)",
            ));
        };
        let Some(desc) = doc_text(&p.field_attrs) else {
            return Err(syn::Error::new(
                p.span,
                "document each prompt argument with a `///` comment: it is the argument's description",
            ));
        };
        let (ident, arg) = (&p.ident, p.ident.to_string());
        let required_call = required.then(|| quote!(.required()));
        chain.push(
            quote!(.arg(::snodo::PromptArgument::new(#arg).description(#desc) #required_call)),
        );
        binds.push(if required {
            quote!(let #ident = __args.get(#arg).cloned().unwrap_or_default();)
        } else {
            quote!(let #ident = __args.get(#arg).cloned();)
        });
    }
    let ReturnType::Type(_, ret) = &item.sig.output else {
        return Err(syn::Error::new(
            item.sig.fn_token.span(),
            "a prompt returns PromptResult, Vec<PromptMessage>, String, or a Result of one",
        ));
    };
    let call = params::call(&item, &params);
    let state = params::state(&params);
    let converted = quote_spanned! {ret.span()=>
        ::snodo::IntoPromptResult::into_prompt_result(#call)
    };
    let doc = format!("The `{name}` prompt, ready to register with `RuntimeBuilder::prompt`.");
    let body = quote! {
        #[doc = #doc]
        #[must_use]
        pub fn prompt() -> ::snodo::Prompt {
            ::snodo::Prompt::new(#name)
                #(#chain)*
                .on_get(|#state __args: ::snodo::PromptArguments, __ctx: ::snodo::RequestContext| async move {
                    #(#binds)*
                    #converted
                })
        }
    };
    Ok(params::module(&item, "prompt", body))
}
