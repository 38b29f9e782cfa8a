//! The Skills extension on the wire (feature `skills`): declared in `server/discover`
//! only where the dialect has `capabilities.extensions`, `skills/list`, `skills/get`,
//! `resources/directory/read`, and the files read through `resources/read` with the
//! digests the entries promise.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use snodo::protocol::{V2025_11_25, V2026_07_28};
use snodo::skills::Skills;

use super::support::*;

const MD: &str = "---\nname: pdf-processing\ndescription: Fill PDFs\n---\nBody.\n";

async fn skills_server() -> TestServer {
    let skills = Skills::new()
        .skill(
            "pdf-processing",
            [("SKILL.md", MD), ("references/FORMS.md", "# Forms\n")],
        )
        .unwrap();
    TestServer::start(
        builder(&[&V2026_07_28, &V2025_11_25])
            .skills(skills)
            .build()
            .unwrap(),
    )
    .await
}

async fn ok(s: &TestServer, method: &str, params: Value) -> Value {
    let r = s.modern(json!(1), method, params, json!({})).await;
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    assert!(r.json().get("error").is_none(), "{method}: {}", r.text());
    r.result()
}

#[tokio::test]
async fn declared_only_where_extensions_exist() {
    let s = skills_server().await;
    let r = s
        .modern(json!(1), "server/discover", json!({}), json!({}))
        .await;
    assert_valid("2026-07-28", "server/discover", &r);
    assert_eq!(
        r.result()["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/skills": {"directoryRead": true}})
    );
    let init = json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}});
    let r = s
        .legacy("2025-11-25", json!(1), "initialize", Some(init))
        .await;
    assert_valid("2025-11-25", "initialize", &r);
    assert!(r.result()["capabilities"].get("extensions").is_none());
    let r = s
        .legacy("2025-11-25", json!(2), "skills/list", Some(json!({})))
        .await;
    assert_eq!(r.error_code(), -32601, "{}", r.text());
}

#[tokio::test]
async fn list_get_read_and_directories() {
    let s = skills_server().await;
    let list = ok(&s, "skills/list", json!({})).await;
    assert_eq!(list["resultType"], "complete");
    assert!(list.get("ttlMs").is_some() && list.get("cacheScope").is_some());
    let entry = &list["skills"][0];
    assert_eq!(entry["uri"], "skill://pdf-processing/SKILL.md");
    assert_eq!(
        entry["frontmatter"],
        json!({"name":"pdf-processing","description":"Fill PDFs"})
    );
    assert_eq!(entry["resources"].as_array().unwrap().len(), 2);

    let got = ok(
        &s,
        "skills/get",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    )
    .await;
    assert_eq!(&got["skill"], entry);
    assert!(got.get("nextCursor").is_none());
    let r = s
        .modern(
            json!(2),
            "skills/get",
            json!({"uri": "skill://nope/SKILL.md"}),
            json!({}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);

    // Every listed file reads back with the promised digest and size.
    for f in entry["resources"].as_array().unwrap() {
        let uri = f["uri"].as_str().unwrap();
        let r = s
            .modern(json!(3), "resources/read", json!({"uri": uri}), json!({}))
            .await;
        assert_valid("2026-07-28", "resources/read", &r);
        let text = r.result()["contents"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(f["size"], text.len());
        assert_eq!(
            f["digest"],
            format!("sha256:{:x}", Sha256::digest(text.as_bytes()))
        );
    }
    let read = ok(
        &s,
        "resources/read",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    )
    .await;
    assert_eq!(read["contents"][0]["mimeType"], "text/markdown");

    let dir = ok(
        &s,
        "resources/directory/read",
        json!({"uri": "skill://pdf-processing"}),
    )
    .await;
    let kinds: Vec<(String, String)> = dir["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["uri"].as_str().unwrap().into(),
                c["mimeType"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (
                "skill://pdf-processing/SKILL.md".to_owned(),
                "text/markdown".to_owned()
            ),
            (
                "skill://pdf-processing/references".to_owned(),
                "inode/directory".to_owned()
            ),
        ]
    );
    let r = s
        .modern(
            json!(4),
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
            json!({}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
}
