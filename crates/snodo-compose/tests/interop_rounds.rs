//! The 2026-07-28 side of `interop/compose/rounds.sh`: snodo-client completes the
//! `input_required` round of a real backend's elicitation tool through a front snodo
//! (`COMPOSE_FRONT_URL`; the tool's front name in `COMPOSE_ELICIT_TOOLS`, space
//! separated). Ignored by default: the script starts the front and the backends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use snodo_client::{CallOptions, Client, Protocol, accept_with_defaults};

#[tokio::test]
#[ignore = "needs the processes interop/compose/rounds.sh starts"]
async fn a_2026_client_completes_a_real_backends_elicitation_round_through_the_front() {
    let url = std::env::var("COMPOSE_FRONT_URL").expect("COMPOSE_FRONT_URL");
    let tools = std::env::var("COMPOSE_ELICIT_TOOLS").expect("COMPOSE_ELICIT_TOOLS");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = asked.clone();
    let c = Client::builder("compose-interop-rounds", "1")
        .protocol(Protocol::Pinned("2026-07-28".into()))
        .on_elicitation(move |p: Value| {
            a.lock().unwrap().push(p["message"].clone());
            let mut answer = accept_with_defaults(&p);
            answer["content"]["name"] = json!("Ada");
            async move { Ok(answer) }
        })
        .connect_http(&url)
        .await
        .unwrap();
    for tool in tools.split_whitespace() {
        asked.lock().unwrap().clear();
        // The raw first answer is the front's input_required round...
        let keep = CallOptions::default().keep_input_required();
        let first = c
            .request_with("tools/call", json!({"name": tool, "arguments": {}}), &keep)
            .await
            .unwrap();
        assert_eq!(first["resultType"], "input_required", "{tool}: {first}");
        let q: Vec<&Value> = first["inputRequests"]
            .as_object()
            .unwrap()
            .values()
            .collect();
        assert_eq!(q[0]["method"], "elicitation/create", "{tool}: {first}");
        // ...continued by hand with the answer and the front's requestState...
        let (key, q0) = first["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let mut answer = accept_with_defaults(&q0["params"]);
        answer["content"]["name"] = json!("Ada");
        let p = json!({"name": tool, "arguments": {},
            "inputResponses": {key.clone(): answer}, "requestState": first["requestState"]});
        let done = c.request_with("tools/call", p, &keep).await.unwrap();
        let text = done["content"].to_string();
        assert!(text.contains("- Name: Ada"), "{tool}: {done}");
        // ...and by the client's own round driver.
        let r = c.call_tool(tool, json!({})).await.unwrap();
        assert!(!r.is_error, "{tool}: {r:?}");
        assert!(r.text().contains("- Name: Ada"), "{tool}: {}", r.text());
        assert_eq!(
            asked.lock().unwrap().len(),
            1,
            "{tool}: the handler asked once"
        );
        println!(
            "ok   snodo-client x 2026-07-28: {tool} asked {} as input_required, answered: {}",
            q[0]["params"]["message"],
            r.text()
                .lines()
                .find(|l| l.contains("Name"))
                .unwrap_or_default()
        );
    }
}
