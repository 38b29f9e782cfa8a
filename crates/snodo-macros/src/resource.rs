//! `#[snodo::resource]`: a fixed resource or a resource template.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{ItemFn, ReturnType};

use crate::attrs::Args;
use crate::params::{self, Kind, type_name};

/// The variable names of an RFC 6570 template (`{+path}`, `{a,b}`, `{x:3}`, `{list*}`).
fn variables(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let expr = &rest[open + 1..open + close];
        let expr = expr.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for var in expr.split(',') {
            let var = var
                .split(':')
                .next()
                .unwrap_or_default()
                .trim_end_matches('*');
            if !var.is_empty() {
                out.push(var.to_owned());
            }
        }
        rest = &rest[open + close + 1..];
    }
    out
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let strings = ["uri", "name", "title", "description", "mime_type"];
    let args = Args::parse("resource", attr.clone(), &strings, &[])?;
    let mut item: ItemFn = syn::parse2(item)?;
    let params = params::take("resource", &mut item)?;
    let Some(uri) = args.string("uri") else {
        return Err(syn::Error::new(
            if attr.is_empty() {
                item.sig.ident.span()
            } else {
                attr.span()
            },
            "#[snodo::resource] needs `uri = \"...\"`: a URI, or a URI template such as \"file:///{+path}\"",
        ));
    };
    let vars = variables(&uri.value());
    let (name, mut chain) = args.identity(&item);
    let mime = match args.string("mime_type") {
        Some(m) => {
            chain.push(quote!(.mime_type(#m)));
            quote!(Some(#m))
        }
        None => quote!(None),
    };
    let mut binds = Vec::new();
    for p in &params {
        match p.kind {
            Kind::Context { .. } | Kind::Request | Kind::State => {}
            Kind::Whole => {
                return Err(syn::Error::new(
                    p.span,
                    "a resource's parameters are its template variables (String), the ReadRequest, the RequestContext and the State",
                ));
            }
            Kind::Value => {
                let var = p.ident.to_string();
                if !vars.contains(&var) {
                    return Err(syn::Error::new(
                        p.ident.span(),
                        format!(
                            "`{var}` is not a variable of the URI template {:?} (its variables: {})",
                            uri.value(),
                            if vars.is_empty() {
                                "none".to_owned()
                            } else {
                                vars.join(", ")
                            }
                        ),
                    ));
                }
                if !type_name(&p.ty).is_some_and(|(n, r)| n == "String" && !r) {
                    return Err(syn::Error::new(
                        p.ty.span(),
                        "a template variable is a String",
                    ));
                }
                let ident = &p.ident;
                binds.push(quote!(let #ident = __vars.get(#var).cloned().unwrap_or_default();));
            }
        }
    }
    let ReturnType::Type(_, ret) = &item.sig.output else {
        return Err(syn::Error::new(
            item.sig.fn_token.span(),
            "a resource returns String, ResourceContents, Vec<ResourceContents>, or a Result of one",
        ));
    };
    let call = params::call(&item, &params);
    let state = params::state(&params);
    let converted = quote_spanned! {ret.span()=>
        ::snodo::IntoResourceContents::into_contents(#call, &__uri, #mime)
    };
    let handler = quote! {
        .on_read(|#state __req: ::snodo::ReadRequest, __ctx: ::snodo::RequestContext| async move {
            let __uri = __req.uri.clone();
            let __vars = __req.variables.clone();
            #(#binds)*
            #converted
        })
    };
    let body = if vars.is_empty() {
        let doc =
            format!("The `{name}` resource, ready to register with `RuntimeBuilder::resource`.");
        quote! {
            #[doc = #doc]
            #[must_use]
            pub fn resource() -> ::snodo::Resource {
                ::snodo::Resource::new(#uri, #name) #(#chain)* #handler
            }
        }
    } else {
        let doc = format!(
            "The `{name}` resource template, ready to register with `RuntimeBuilder::resource`."
        );
        quote! {
            #[doc = #doc]
            #[must_use]
            pub fn resource() -> ::snodo::ResourceTemplate {
                ::snodo::ResourceTemplate::new(#uri, #name) #(#chain)* #handler
            }

            /// The same as [`resource`]: the entry point's name before it served
            /// templates too.
            #[must_use]
            #[deprecated(note = "call `resource()`: it returns the template, and `RuntimeBuilder::resource` registers it")]
            pub fn template() -> ::snodo::ResourceTemplate {
                resource()
            }
        }
    };
    Ok(params::module(&item, "resource", body))
}

#[cfg(test)]
mod tests {
    use super::variables;

    #[test]
    fn template_variables() {
        assert_eq!(variables("file:///{+path}"), ["path"]);
        assert_eq!(
            variables("x://{a,b:3}/{list*}{?q}"),
            ["a", "b", "list", "q"]
        );
        assert!(variables("x://fixed").is_empty());
    }
}
