//! Multi round-trip requests (2026-07-28): opening a round from `inputResponses` and
//! `requestState`, and answering `input_required`.

use serde_json::{Map, Value};

use super::{Answer, Call, Router, Stop};
use crate::protocol::{Asking, Method, RpcError};
use crate::runtime::context::{Principal, RequestContext};
use crate::runtime::envelopes::ResultType;
use crate::runtime::input::{InputRequired, StateContents};

impl Router<'_> {
    /// Runs tools/call, prompts/get or resources/read, with multi round-trip input on
    /// 2026-07-28.
    pub(super) async fn interactive(&self, call: &mut Call, ctx: RequestContext) -> Answer {
        let stateless = call.dialect.asking() == Asking::Rounds;
        // Params only multi round-trip requests (and 2025-11-25 tasks) use.
        if !stateless && call.params.interactive()?.rounds.present() {
            return Err(RpcError::invalid_params(
                "Tasks and multi-round-trip inputs are not supported",
            )
            .into());
        }
        let principal = ctx.principal().cloned();
        // The scope is only formatted when a requestState is opened or sealed.
        let scope = |call: &Call| round_scope(call, principal.as_ref());
        // (No `let` for the round: a local named here would keep its place in this
        // future's state across the awaits below, and push the boxed execution over
        // glibc's per-thread cache size, 1 KiB.)
        let (ctx, app) = match stateless
            .then(|| self.open_round(call, scope))
            .transpose()?
            .flatten()
        {
            Some(contents) => {
                let app = contents.app.clone();
                (ctx.with_round(contents.answers, contents.app), app)
            }
            None => (ctx, None),
        };
        let outcome = match call.method {
            Method::ToolsCall => self.call_tool(call, ctx.clone()).await,
            Method::PromptsGet => self.get_prompt(call, ctx.clone()).await.map(Into::into),
            _ => self.read_resource(call, ctx.clone()).await.map(Into::into),
        };
        match outcome {
            Ok(result) => Ok(result),
            Err(Stop::Error(e)) => Err(e),
            Err(Stop::Input(input)) if stateless => Ok(self
                .input_required(&scope(call), ctx.answers(), app, input)
                .into()),
            Err(Stop::Input(_)) => Err(RpcError::internal(
                "The handler asked for input in a way this protocol version cannot carry",
            )
            .into()),
        }
    }

    /// Reads `inputResponses` and verifies `requestState`; the answers of this round
    /// and earlier ones, merged (`None` for a first round: neither was sent).
    fn open_round(
        &self,
        call: &Call,
        scope: impl Fn(&Call) -> String,
    ) -> Result<Option<StateContents>, RpcError> {
        let (state, responses) = call.params.interactive()?.rounds.open()?;
        if state.is_none() && responses.is_none() {
            return Ok(None);
        }
        let mut contents = match state {
            None => StateContents::default(),
            Some(s) => self.runtime.signer().open(&scope(call), s)?,
        };
        for (k, v) in responses.into_iter().flatten() {
            contents.answers.insert(k.clone(), v.clone());
        }
        Ok(Some(contents))
    }

    /// `{"resultType":"input_required","inputRequests":…,"requestState":…}`.
    fn input_required(
        &self,
        scope: &str,
        answers: Map<String, Value>,
        previous_app: Option<Value>,
        input: InputRequired,
    ) -> Map<String, Value> {
        let app = input.state.or(previous_app);
        let state = self
            .runtime
            .signer()
            .seal(scope, &StateContents { answers, app });
        let mut out = Map::new();
        ResultType::InputRequired.write(&mut out);
        if !input.requests.is_empty() {
            out.insert("inputRequests".into(), Value::Object(input.requests));
        }
        out.insert("requestState".into(), Value::String(state));
        out
    }
}

/// What a `requestState` is bound to: the method, its target and the caller.
fn round_scope(call: &Call, principal: Option<&Principal>) -> String {
    let target = call.target().unwrap_or_default();
    let principal = principal.map(Principal::id).unwrap_or_default();
    format!("{}\u{1f}{target}\u{1f}{principal}", call.method_name)
}
