//! `--bus URL` on `serve` and `fixture` (issue 35): the deployment's shared bus
//! (PostgreSQL or Redis, crate `snodo-bus`), this instance's id on it, and what rate
//! limits do while it is down. With the feature `bus` (default).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use snodo::bus::{Bus, InstanceId, WhenDown};
use snodo::http::{AuthRejection, Authenticator, HttpConfig};
use snodo::{
    HandlerError, NoArguments, Principal, RateLimit, RequestContext, RuntimeBuilder, Tool,
    ToolResult,
};

/// The bus flags.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct BusArgs {
    /// Share listen-stream changes, tools' rate limits and initialize-era cancellations
    /// and answers with every instance on this bus: postgres://… (TLS as the URL's
    /// sslmode and sslrootcert say) or redis://… (rediss://… over TLS)
    #[arg(
        long = "bus",
        env = "SNODO_BUS",
        value_name = "URL",
        hide_env_values = true
    )]
    bus_url: Option<String>,
    /// This instance's id on the bus (default: random); unique per live process.
    #[arg(
        long = "bus-instance",
        env = "SNODO_BUS_INSTANCE",
        requires = "bus_url"
    )]
    bus_instance: Option<String>,
    /// Rate limits while the bus is down: `open` (each instance alone) or `closed`
    /// (refused until it is back).
    #[arg(long = "bus-rate-limits", value_enum, default_value_t = Fail::Open)]
    bus_when_down: Fail,
    /// Fixture only (the scale lane): requests bearing this bearer token are the
    /// principal `lane` (initialize-era cancellation needs a principal); others stay
    /// anonymous.
    #[arg(long = "bus-lane-token", hide = true, requires = "bus_url")]
    bus_lane_token: Option<String>,
}

/// `--bus-rate-limits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Fail {
    /// Each instance holds the limit alone while the bus is down.
    Open,
    /// Rate-limited calls are refused while the bus is down.
    Closed,
}

/// The bus the flags name, connected; `None` without `--bus`.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    bus: Option<(Arc<dyn Bus>, Option<InstanceId>, WhenDown)>,
    lane_token: Option<String>,
}

impl Shared {
    /// Connects to the bus the flags name (bounded by the bus's deadline).
    pub(crate) async fn connect(args: &BusArgs) -> Result<Self, String> {
        let Some(url) = &args.bus_url else {
            return Ok(Self::default());
        };
        let instance = match &args.bus_instance {
            Some(id) => Some(InstanceId::new(id).map_err(|e| format!("--bus-instance: {e}"))?),
            None => None,
        };
        #[cfg(not(feature = "bus"))]
        {
            let _ = (instance, &args.bus_when_down, &args.bus_lane_token);
            Err(format!(
                "--bus {:?}: snodo was built without the `bus` feature",
                redacted(url)
            ))
        }
        #[cfg(feature = "bus")]
        {
            let bus: Arc<dyn Bus> =
                if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                    Arc::new(
                        snodo_bus::PgBus::connect(url, snodo_bus::PgBusOptions::default())
                            .await
                            .map_err(|e| format!("--bus: {e}"))?,
                    )
                } else if url.starts_with("redis://") || url.starts_with("rediss://") {
                    Arc::new(
                        snodo_bus::RedisBus::connect(url, snodo_bus::RedisBusOptions::default())
                            .await
                            .map_err(|e| format!("--bus: {e}"))?,
                    )
                } else {
                    return Err(format!(
                        "--bus {:?}: expected postgres://…, redis://… or rediss://…",
                        redacted(url)
                    ));
                };
            let when_down = match args.bus_when_down {
                Fail::Open => WhenDown::Open,
                Fail::Closed => WhenDown::Closed,
            };
            Ok(Self {
                bus: Some((bus, instance, when_down)),
                lane_token: args.bus_lane_token.clone(),
            })
        }
    }

    /// The builder with the bus, if any.
    pub(crate) fn apply(&self, mut builder: RuntimeBuilder) -> RuntimeBuilder {
        if let Some((bus, instance, when_down)) = &self.bus {
            builder = builder
                .bus(Arc::clone(bus))
                .rate_limits_when_bus_down(*when_down);
            if let Some(id) = instance {
                builder = builder.bus_instance(id.clone());
            }
        }
        builder
    }

    /// The fixture's additions for the scale lane, with `--bus`: `bus_limited` (5 calls
    /// a minute per principal, deployment-wide) and `bus_wait` (waits up to 20 s unless
    /// cancelled), and the lane's token.
    pub(crate) fn fixture(
        &self,
        mut builder: RuntimeBuilder,
        config: HttpConfig,
    ) -> (RuntimeBuilder, HttpConfig) {
        if self.bus.is_none() {
            return (builder, config);
        }
        builder = builder
            .tool(
                Tool::new("bus_limited")
                    .description("Five calls a minute per principal, across the deployment")
                    .rate_limit(RateLimit::per_principal(5, Duration::from_secs(60)))
                    .handler(|_: NoArguments| async { Ok::<_, HandlerError>(ToolResult::text("ok")) }),
            )
            .tool(
                Tool::new("bus_wait")
                    .description("Waits up to 20 s unless cancelled")
                    .handler(|_: NoArguments, ctx: RequestContext| async move {
                        tokio::select! {
                            () = ctx.cancellation().cancelled() => {
                                tracing::info!(target: "snodo::bus", "bus_wait cancelled");
                                Ok::<_, HandlerError>(ToolResult::text("cancelled"))
                            }
                            () = tokio::time::sleep(Duration::from_secs(20)) => Ok(ToolResult::text("not cancelled")),
                        }
                    }),
            );
        let config = match &self.lane_token {
            Some(token) => config.authenticator(LaneToken(format!("Bearer {token}"))),
            None => config,
        };
        (builder, config)
    }
}

/// `--bus-lane-token`: the bearer of this token is the principal `lane`.
struct LaneToken(String);

impl Authenticator for LaneToken {
    fn authenticate<'a>(
        &'a self,
        request: &'a http::request::Parts,
    ) -> Pin<Box<dyn Future<Output = Result<Option<Principal>, AuthRejection>> + Send + 'a>> {
        let lane = request
            .headers
            .get(http::header::AUTHORIZATION)
            .is_some_and(|v| v.as_bytes() == self.0.as_bytes());
        Box::pin(async move { Ok(lane.then(|| Principal::new("lane"))) })
    }
}

/// `url` with its user information (a password) replaced by `***`, for messages.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn a_bus_url_is_shown_without_its_password() {
        assert_eq!(
            redacted("postgres://snodo:s3cret@db:5432/app?sslmode=require"),
            "postgres://***@db:5432/app?sslmode=require"
        );
        assert_eq!(redacted("redis://:pw@h:6379/0"), "redis://***@h:6379/0");
        assert_eq!(redacted("redis://h:6379/0?x=a@b"), "redis://h:6379/0?x=a@b");
        assert_eq!(redacted("nats://u:p@h"), "nats://***@h");
        assert_eq!(redacted("not a url"), "not a url");
    }
}
