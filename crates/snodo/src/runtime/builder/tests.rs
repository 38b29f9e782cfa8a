use super::*;
use crate::protocol::{V2025_06_18, V2025_11_25};
use crate::runtime::tool::NoArguments;
use crate::{Runtime, ToolResult};

fn echo(name: &str) -> Tool {
    Tool::new(name)
        .description("d")
        .handler(|_: NoArguments| async { ToolResult::text("x") })
}

#[test]
fn refuses_bad_descriptions() {
    let e = Runtime::builder("", "1").build().err();
    assert!(matches!(e, Some(BuildError::InvalidServerInfo(_))));
    let e = Runtime::builder("s", "1")
        .tool(echo("a"))
        .tool(echo("a"))
        .build()
        .err();
    assert_eq!(
        e,
        Some(BuildError::Duplicate {
            kind: "tool",
            name: "a".into()
        })
    );
    let e = Runtime::builder("s", "1")
        .tool(echo("bad name"))
        .build()
        .err();
    assert!(matches!(e, Some(BuildError::InvalidToolName(_))));
    let e = Runtime::builder("s", "1")
        .tool(Tool::new("t"))
        .build()
        .err();
    assert!(matches!(e, Some(BuildError::MissingHandler { .. })));
    let e = Runtime::builder("s", "1")
        .tool(echo("t").input_schema(serde_json::json!({"type":"array"})))
        .build()
        .err();
    assert!(matches!(
        e,
        Some(BuildError::InvalidSchema { which: "input", .. })
    ));
    let e = Runtime::builder("s", "1")
        .tool(echo("t").output_schema(serde_json::json!({"type": 12})))
        .build()
        .err();
    assert!(matches!(
        e,
        Some(BuildError::InvalidSchema {
            which: "output",
            ..
        })
    ));
    let e = Runtime::builder("s", "1")
        .protocols([&V2025_11_25, &V2025_11_25])
        .build()
        .err();
    assert_eq!(e, Some(BuildError::DuplicateProtocol("2025-11-25")));
    let e = Runtime::builder("s", "1").protocols([]).build().err();
    assert_eq!(e, Some(BuildError::NoProtocols));
}

#[test]
fn capability_must_be_valid_for_every_dialect() {
    let e = Runtime::builder("s", "1")
        .protocols([&V2026_07_28, &V2025_11_25, &V2025_06_18])
        .list_changed(true)
        .build()
        .err();
    let Some(BuildError::UnsupportedCapability { capability, reason }) = e else {
        panic!("expected a capability error");
    };
    assert_eq!(capability, "listChanged");
    assert!(reason.contains("2025-11-25, 2025-06-18"), "{reason}");
}

#[test]
fn defaults_to_2026_only() {
    let rt = Runtime::builder("s", "1")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rt.supported_versions(), ["2026-07-28"]);
}
