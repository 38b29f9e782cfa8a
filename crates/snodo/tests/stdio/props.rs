//! Property: over any byte stream, the server writes only whole JSON-RPC messages,
//! answers every valid request exactly once (a request cancelled later in the stream at
//! most once), and ends after the end of input.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use snodo::stdio::StdioConfig;

use crate::client::{Client, V};
use crate::support::{MODERN, builder};

#[derive(Debug, Clone)]
enum Piece {
    /// Random bytes without a newline, then a newline.
    Noise(Vec<u8>),
    /// A valid request, answered once.
    Request,
    /// A cancellation for some id.
    Cancel(i64),
    /// Truncated JSON.
    Truncated(usize),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        proptest::collection::vec(
            any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
            0..300
        )
        .prop_map(Piece::Noise),
        Just(Piece::Request),
        (0i64..20).prop_map(Piece::Cancel),
        (1usize..60).prop_map(Piece::Truncated),
    ]
}

fn request(id: usize) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
        "name":"echo","arguments":{"text":"p"},"_meta":{
        "io.modelcontextprotocol/protocolVersion":V,
        "io.modelcontextprotocol/clientCapabilities":{}}}})
    .to_string()
}

async fn run(pieces: Vec<Piece>, limit: usize, split: usize) {
    let config = StdioConfig::default().max_line_bytes(limit);
    let mut c = Client::start_with(builder(&MODERN).build().unwrap(), config, 1 << 16);
    let mut stream = Vec::new();
    let mut expected = Vec::new();
    let mut cancelled = Vec::new();
    for (i, p) in pieces.into_iter().enumerate() {
        match p {
            Piece::Noise(bytes) => stream.extend_from_slice(&bytes),
            Piece::Request => {
                let r = request(i);
                if r.len() <= limit {
                    expected.push(i);
                }
                stream.extend_from_slice(r.as_bytes());
            }
            Piece::Cancel(id) => {
                // A request cancelled after it was read may or may not have answered.
                if let Ok(id) = usize::try_from(id) {
                    if expected.contains(&id) {
                        cancelled.push(id);
                    }
                }
                stream.extend_from_slice(
                json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}})
                    .to_string()
                    .as_bytes(),
                );
            }
            Piece::Truncated(n) => {
                let r = request(i);
                stream.extend_from_slice(&r.as_bytes()[..n.min(r.len() - 1)]);
            }
        }
        stream.push(b'\n');
    }
    for chunk in stream.chunks(split.max(1)) {
        c.raw(chunk).await;
    }
    let out: Vec<Value> = tokio::time::timeout(Duration::from_secs(20), c.finish())
        .await
        .expect("ends after EOF");
    let mut answered: Vec<usize> = Vec::new();
    for m in &out {
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        match m.get("id") {
            Some(Value::Number(n)) => {
                assert!(m["result"].is_object(), "{m}");
                answered.push(usize::try_from(n.as_u64().unwrap()).unwrap());
            }
            Some(Value::Null) => assert!(m["error"]["code"].is_i64(), "{m}"),
            _ => panic!("unexpected message {m}"),
        }
    }
    answered.sort_unstable();
    let mut once = answered.clone();
    once.dedup();
    assert_eq!(once, answered, "answered twice");
    expected.retain(|i| answered.contains(i) || !cancelled.contains(i));
    assert_eq!(answered, expected);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_byte_stream_gets_whole_messages_and_an_end(
        pieces in proptest::collection::vec(piece(), 0..40),
        limit in prop_oneof![Just(64usize), Just(400), Just(4 * 1024 * 1024)],
        split in 1usize..700,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(pieces, limit, split));
    }
}
