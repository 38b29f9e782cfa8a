//! `snodo gateway --config FILE`: the TOML file that describes each backend — how to
//! reach it (a command with its arguments, environment and working directory, or a
//! URL with headers and upstream credentials), which revision to speak, how its
//! components appear at the front (namespace, allow/deny, renames, descriptions),
//! per-tool policy, timeouts, pool size and restart policy. The format is documented
//! with a full example in docs/gateway.md (and deploy/gateway.toml).
//!
//! An error names the file, the line and column, and the key
//! (`gateway.toml:7:1: backend[0].urll: unknown field …`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use snodo::RateLimit;
use snodo::http::ListenAddr;
use snodo_compose::{McpSource, MountOptions, RestartPolicy, ToolPolicy, Transforms};
use toml::Spanned;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    /// Front settings (a flag given on the command line wins).
    #[serde(default)]
    pub(crate) gateway: Front,
    /// The backends, in order (the first to claim a front name keeps it).
    #[serde(default)]
    pub(crate) backend: Vec<Backend>,
}

/// `[gateway]`: what the flags `--addr`, `--protocols` and `--ready-timeout-secs` set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Front {
    pub(crate) addr: Option<Spanned<String>>,
    pub(crate) protocols: Option<Vec<String>>,
    pub(crate) ready_timeout_secs: Option<u64>,
}

/// `[[backend]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Backend {
    name: Spanned<String>,
    // A child over stdio…
    command: Option<Spanned<String>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    // … or Streamable HTTP.
    url: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    /// Header name → the environment variable holding its value.
    #[serde(default)]
    headers_env: BTreeMap<String, Spanned<String>>,
    bearer: Option<String>,
    /// The environment variable holding the upstream bearer token.
    bearer_env: Option<Spanned<String>>,
    /// `auto` (negotiated, the default) or one revision.
    protocol: Option<Spanned<String>>,
    /// A prefix (default: the backend's name); `false` for none.
    namespace: Option<Namespace>,
    separator: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    /// Backend tool or prompt name → front name.
    #[serde(default)]
    rename: BTreeMap<String, String>,
    /// Backend component name (or URI) → description.
    #[serde(default)]
    describe: BTreeMap<String, String>,
    #[serde(default)]
    policy: Vec<Policy>,
    /// A limit for every request to the backend.
    call_timeout_secs: Option<Seconds>,
    /// Whether `/healthz` answers 503 while this backend is not up (default true).
    #[serde(default = "yes")]
    required: bool,
    /// Warm connections (children, sessions) per instance (default 1).
    pool: Option<usize>,
    #[serde(default)]
    restart: Restart,
}

fn yes() -> bool {
    true
}

/// `namespace = "ns"` or `namespace = false`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Namespace {
    Prefix(String),
    Default(bool),
}

/// `[[backend.policy]]`: snodo's limits on the tools whose backend name matches.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Policy {
    /// A glob over backend tool names (default `*`).
    #[serde(default = "any")]
    tools: String,
    timeout_secs: Option<Seconds>,
    max_concurrent: Option<usize>,
    rate_limit: Option<Rate>,
}

fn any() -> String {
    "*".to_owned()
}

/// `rate_limit = { calls = 60, per_secs = 60 }`, per principal.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rate {
    calls: u32,
    per_secs: Seconds,
}

/// `[backend.restart]`: how a backend that went away is brought back.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Restart {
    /// The first restart of a child that exited (default 0.1 s; the mount's first
    /// retry of a backend it could not list, 0.25 s), doubled each time…
    backoff_min_secs: Option<Seconds>,
    /// … up to this (default 10 s for a child, 5 s for the mount's retries).
    backoff_max_secs: Option<Seconds>,
    /// Between checks of a backend that is up (default 5 s).
    check_interval_secs: Option<Seconds>,
    /// A child that stayed up this long was healthy: its backoff starts over (60 s).
    healthy_after_secs: Option<Seconds>,
    /// How long a child's start and `initialize` may take (30 s).
    start_timeout_secs: Option<Seconds>,
}

/// A positive, finite number of seconds (at most a day).
#[derive(Clone, Copy, Debug)]
struct Seconds(Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Number {
            Int(u64),
            Float(f64),
        }
        let secs = match Number::deserialize(d)? {
            Number::Int(n) => n as f64,
            Number::Float(f) => f,
        };
        if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
            Ok(Self(Duration::from_secs_f64(secs)))
        } else {
            Err(serde::de::Error::custom(format!(
                "{secs}: expected seconds, more than 0 and at most 86400"
            )))
        }
    }
}

/// A backend ready to mount.
pub(crate) struct Plan {
    pub(crate) name: String,
    pub(crate) source: McpSource,
    pub(crate) transforms: Transforms,
    pub(crate) options: MountOptions,
    pub(crate) required: bool,
}

/// Where an error is: the file and the text, to turn byte offsets into lines.
struct Origin<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Origin<'_> {
    /// `FILE:LINE:COLUMN: KEY: message` (the position of `span`'s start).
    fn error(&self, span: Option<Range<usize>>, key: &str, message: &str) -> String {
        let file = self.path.display();
        let Some(span) = span else {
            return format!("{file}: {key}: {message}");
        };
        let before = self.text.get(..span.start).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!("{file}:{line}:{column}: {key}: {message}")
    }
}

/// Reads and checks `path` (syntax, keys and types; the semantic checks are
/// [`plan`]'s, which need the environment).
pub(crate) fn load(path: &Path) -> Result<(File, String), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--config {}: {e}", path.display()))?;
    let file = parse(path, &text)?;
    Ok((file, text))
}

fn parse(path: &Path, text: &str) -> Result<File, String> {
    let origin = Origin { path, text };
    let de = toml::Deserializer::parse(text)
        .map_err(|e| origin.error(e.span(), "(syntax)", e.message()))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        // (`Spanned` values add a private segment of serde_spanned's to the path.)
        let key = e
            .path()
            .to_string()
            .replace(".$__serde_spanned_private_value", "");
        let inner = e.into_inner();
        origin.error(inner.span(), &key, inner.message())
    })
}

/// The front settings of the file.
pub(crate) fn front(path: &Path, text: &str, file: &Front) -> Result<Option<ListenAddr>, String> {
    let origin = Origin { path, text };
    file.addr
        .as_ref()
        .map(|a| {
            a.get_ref()
                .parse::<ListenAddr>()
                .map_err(|e| origin.error(Some(a.span()), "gateway.addr", &e.to_string()))
        })
        .transpose()
}

/// Turns each backend of the file into a source, its transforms and mount options;
/// `env` reads the environment (credentials named by `*_env`).
pub(crate) fn plan(
    path: &Path,
    text: &str,
    backends: Vec<Backend>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Plan>, String> {
    let origin = Origin { path, text };
    backends
        .into_iter()
        .enumerate()
        .map(|(i, b)| b.plan(&origin, &format!("backend[{i}]"), env))
        .collect()
}

/// A backend's name: 1 to 64 letters, digits, `_`, `-` or `.` (it prefixes tool names).
pub(crate) fn check_name(name: &str) -> Result<(), &'static str> {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        return Err(
            "a backend's name is 1 to 64 letters, digits, '_', '-' or '.' (it prefixes tool names)",
        );
    }
    Ok(())
}

/// An upstream header that HTTP can carry (it would otherwise be left out).
fn check_header(name: &str, value: &str) -> Result<(), String> {
    http::HeaderName::try_from(name).map_err(|_| format!("{name:?} is not a valid header name"))?;
    http::HeaderValue::try_from(value)
        .map_err(|_| format!("the value of {name:?} is not a valid header value"))?;
    Ok(())
}

impl Backend {
    fn plan(
        self,
        origin: &Origin<'_>,
        at: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Plan, String> {
        let err = |span: Range<usize>, key: &str, m: &str| {
            origin.error(Some(span), &format!("{at}.{key}"), m)
        };
        let name = self.name.get_ref().clone();
        check_name(&name).map_err(|m| err(self.name.span(), "name", m))?;
        let mut source = match (&self.command, &self.url) {
            (Some(c), None) => {
                if c.get_ref().trim().is_empty() {
                    return Err(err(c.span(), "command", "the command is empty"));
                }
                if !(self.headers.is_empty()
                    && self.headers_env.is_empty()
                    && self.bearer.is_none()
                    && self.bearer_env.is_none())
                {
                    return Err(err(
                        c.span(),
                        "command",
                        "headers and bearer credentials are for url backends",
                    ));
                }
                let mut s = McpSource::stdio(name.clone(), c.get_ref().clone(), self.args);
                for (k, v) in self.env {
                    s = s.env(k, v);
                }
                if let Some(dir) = self.cwd {
                    s = s.current_dir(dir);
                }
                s
            }
            (None, Some(u)) => {
                let url = u.get_ref();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(err(u.span(), "url", "expected an http:// or https:// URL"));
                }
                if !(self.args.is_empty() && self.env.is_empty() && self.cwd.is_none()) {
                    return Err(err(
                        u.span(),
                        "url",
                        "args, env and cwd are for command backends",
                    ));
                }
                let mut s = McpSource::http(name.clone(), url.clone());
                // One Authorization header at most: a bearer token is one.
                let bearers = usize::from(self.bearer.is_some())
                    + usize::from(self.bearer_env.is_some())
                    + self
                        .headers
                        .keys()
                        .chain(self.headers_env.keys())
                        .filter(|h| h.eq_ignore_ascii_case("authorization"))
                        .count();
                if bearers > 1 {
                    let span = self.bearer_env.as_ref().map_or(u.span(), Spanned::span);
                    return Err(err(
                        span,
                        "bearer",
                        "give one of bearer, bearer_env or an Authorization header",
                    ));
                }
                for (h, v) in &self.headers {
                    let key = format!("headers.{h}");
                    check_header(h, v.get_ref()).map_err(|m| err(v.span(), &key, &m))?;
                    s = s.header(h, v.get_ref());
                }
                for (h, var) in &self.headers_env {
                    let v = read_env(env, var).map_err(|m| err(var.span(), "headers_env", &m))?;
                    let key = format!("headers_env.{h}");
                    check_header(h, &v).map_err(|m| err(var.span(), &key, &m))?;
                    s = s.header(h, &v);
                }
                if let Some(token) = &self.bearer {
                    s = s.bearer(token);
                }
                if let Some(var) = &self.bearer_env {
                    let token =
                        read_env(env, var).map_err(|m| err(var.span(), "bearer_env", &m))?;
                    s = s.bearer(&token);
                }
                s
            }
            (Some(c), Some(_)) => {
                return Err(err(
                    c.span(),
                    "command",
                    "give either command or url, not both",
                ));
            }
            (None, None) => {
                return Err(err(
                    self.name.span(),
                    "name",
                    "the backend needs a command or a url",
                ));
            }
        };
        if let Some(p) = &self.protocol {
            let protocol = p
                .get_ref()
                .parse::<snodo_client::Protocol>()
                .map_err(|m| err(p.span(), "protocol", &m))?;
            source = source.protocol(protocol);
        }
        if let Some(Seconds(t)) = self.call_timeout_secs {
            source = source.timeout(t);
        }
        // Warm connections per instance (stdio children, HTTP sessions).
        if let Some(n) = self.pool {
            if n == 0 {
                return Err(err(self.name.span(), "pool", "the pool needs at least 1"));
            }
            source = source.pool(n);
        }
        let mut t = Transforms::new();
        match self.namespace {
            None | Some(Namespace::Default(true)) => t = t.namespace(name.clone()),
            Some(Namespace::Prefix(ns)) if !ns.is_empty() => t = t.namespace(ns),
            Some(Namespace::Prefix(_) | Namespace::Default(false)) => {}
        }
        if let Some(sep) = self.separator {
            t = t.separator(sep);
        }
        for g in &self.allow {
            t = t.allow(g);
        }
        for g in &self.deny {
            t = t.deny(g);
        }
        for (from, to) in self.rename {
            t = t.rename(from, to);
        }
        for (n, d) in self.describe {
            t = t.describe(n, d);
        }
        for p in self.policy {
            t = t.policy(
                &p.tools,
                ToolPolicy {
                    timeout: p.timeout_secs.map(|s| s.0),
                    max_concurrent: p.max_concurrent,
                    rate_limit: p
                        .rate_limit
                        .map(|r| RateLimit::per_principal(r.calls, r.per_secs.0)),
                },
            );
        }
        // A child that exits is started again by its pool with this backoff; the mount
        // retries a backend it could not list (an HTTP one) with the same bounds.
        let policy = RestartPolicy::default();
        let r = &self.restart;
        source = source.restart(RestartPolicy {
            min_backoff: r.backoff_min_secs.map_or(policy.min_backoff, |s| s.0),
            max_backoff: r.backoff_max_secs.map_or(policy.max_backoff, |s| s.0),
            healthy_after: r.healthy_after_secs.map_or(policy.healthy_after, |s| s.0),
            start_timeout: r.start_timeout_secs.map_or(policy.start_timeout, |s| s.0),
        });
        let defaults = MountOptions::default();
        let options = MountOptions {
            health_interval: r
                .check_interval_secs
                .map_or(defaults.health_interval, |s| s.0),
            min_backoff: r.backoff_min_secs.map_or(defaults.min_backoff, |s| s.0),
            max_backoff: r.backoff_max_secs.map_or(defaults.max_backoff, |s| s.0),
            // A backend that answers no listing or check within a start's time is down.
            check_timeout: r.start_timeout_secs.map_or(defaults.check_timeout, |s| s.0),
        };
        Ok(Plan {
            name,
            source,
            transforms: t,
            options,
            required: self.required,
        })
    }
}

fn read_env(env: &dyn Fn(&str) -> Option<String>, var: &Spanned<String>) -> Result<String, String> {
    env(var.get_ref())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("the environment variable {} is not set", var.get_ref()))
}

#[cfg(test)]
mod tests;
