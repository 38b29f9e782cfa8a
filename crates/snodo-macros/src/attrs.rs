//! The arguments of the attributes: `name = "..."`, flags, `flag = bool`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitBool, LitStr};

/// The attribute arguments one macro accepts, parsed.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) strings: Vec<(String, LitStr)>,
    pub(crate) flags: Vec<(String, bool, Span)>,
}

impl Args {
    /// Parses `tokens` accepting the string keys `strings` and the flags `flags`.
    pub(crate) fn parse(
        macro_name: &str,
        tokens: TokenStream,
        strings: &[&str],
        flags: &[&str],
    ) -> syn::Result<Self> {
        let mut out = Self::default();
        let parser = syn::meta::parser(|meta: ParseNestedMeta<'_>| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            if strings.contains(&key.as_str()) {
                if out.strings.iter().any(|(k, _)| *k == key) {
                    return Err(meta.error(format!("`{key}` is given twice")));
                }
                let value: LitStr = meta.value()?.parse()?;
                out.strings.push((key, value));
                Ok(())
            } else if flags.contains(&key.as_str()) {
                let on = if meta.input.peek(syn::Token![=]) {
                    let b: LitBool = meta.value()?.parse()?;
                    b.value
                } else {
                    true
                };
                out.flags.push((key, on, meta.path.span()));
                Ok(())
            } else {
                let mut expected: Vec<&str> = strings.to_vec();
                expected.extend_from_slice(flags);
                Err(meta.error(format!(
                    "unknown #[snodo::{macro_name}] argument `{key}`; expected one of: {}",
                    expected.join(", ")
                )))
            }
        });
        syn::parse::Parser::parse2(parser, tokens)?;
        Ok(out)
    }

    /// The component's name (`name = ".."` or the function's) and the builder calls for
    /// its description (`description = ".."` or the doc comment) and title.
    pub(crate) fn identity(&self, item: &syn::ItemFn) -> (String, Vec<TokenStream>) {
        let name = self
            .string("name")
            .map_or_else(|| item.sig.ident.to_string(), LitStr::value);
        let mut chain = Vec::new();
        if let Some(d) = self
            .string("description")
            .map(LitStr::value)
            .or_else(|| doc_text(&item.attrs))
        {
            chain.push(quote::quote!(.description(#d)));
        }
        if let Some(t) = self.string("title") {
            chain.push(quote::quote!(.title(#t)));
        }
        (name, chain)
    }

    /// A string argument.
    pub(crate) fn string(&self, key: &str) -> Option<&LitStr> {
        self.strings.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

use syn::spanned::Spanned as _;

/// The text of the `///` comments (`#[doc = ".."]` attributes): lines with their
/// leading space removed, joined by newlines, trimmed; `None` when there are none.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_owned())
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}
