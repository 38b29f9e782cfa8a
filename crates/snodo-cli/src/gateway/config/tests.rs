use super::*;

fn check(text: &str) -> Result<Vec<Plan>, String> {
    let path = Path::new("gw.toml");
    let file = parse(path, text)?;
    plan(path, text, file.backend, &|v| {
        (v == "TOKEN").then(|| "s3cret".to_owned())
    })
}

#[test]
fn errors_name_the_file_line_and_key() {
    let cases = [
        (
            "[[backend]]\nname = \"a\"\nurll = \"http://x\"\n",
            "gw.toml:3:1: backend[0].urll: unknown field `urll`, expected one of",
        ),
        (
            "[[backend]]\nname = \"a\"\ncommand = \"x\"\n\n[[backend]]\nname = \"b\"\ncommand = 3\n",
            "gw.toml:7:11: backend[1].command: invalid type: integer `3`",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"ftp://x\"\n",
            "gw.toml:3:7: backend[0].url: expected an http:// or https:// URL",
        ),
        (
            "[[backend]]\nname = \"a\"\n",
            "gw.toml:2:8: backend[0].name: the backend needs a command or a url",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x/mcp\"\nbearer_env = \"NOPE\"\n",
            "gw.toml:4:14: backend[0].bearer_env: the environment variable NOPE is not set",
        ),
        (
            "[[backend]]\nname = \"a\"\ncommand = \"x\"\ncall_timeout_secs = -1\n",
            "gw.toml:4:21: backend[0].call_timeout_secs: -1: expected seconds",
        ),
        (
            "[[backend]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"1999\"\n",
            "gw.toml:4:12: backend[0].protocol: unknown protocol version",
        ),
        ("[[backend]\n", "gw.toml:1:"),
        (
            "[gateway]\nadress = 1\n",
            "gw.toml:2:1: gateway.adress: unknown field `adress`",
        ),
        (
            "[[backend]]\nname = \"a b\"\ncommand = \"x\"\n",
            "gw.toml:2:8: backend[0].name: a backend's name is 1 to 64",
        ),
        (
            "[[backend]]\nname = \"a\"\ncommand = \"x\"\n[[backend.policy]]\ntools = \"*\"\nrate_limit = { calls = 5 }\n",
            "gw.toml:6:14: backend[0].policy[0].rate_limit: missing field `per_secs`",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x/mcp\"\nheaders = { \"bad name\" = \"v\" }\n",
            "gw.toml:4:26: backend[0].headers.bad name: \"bad name\" is not a valid header name",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x/mcp\"\nheaders = { x = \"a\\nb\" }\n",
            "gw.toml:4:17: backend[0].headers.x: the value of \"x\" is not a valid header value",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x/mcp\"\nbearer = \"t\"\nbearer_env = \"TOKEN\"\n",
            "gw.toml:5:14: backend[0].bearer: give one of bearer, bearer_env or an Authorization header",
        ),
        (
            "[[backend]]\nname = \"a\"\nurl = \"http://x/mcp\"\nbearer = \"t\"\nheaders = { Authorization = \"Basic x\" }\n",
            "gw.toml:3:7: backend[0].bearer: give one of bearer, bearer_env or an Authorization header",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(text, want)| {
            let got = check(text).err().unwrap_or_default();
            (!got.starts_with(want)).then(|| format!("{text:?}\n got: {got}\nwant: {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// deploy/gateway.toml and the ConfigMap of deploy/gateway-kubernetes.yaml stay
/// valid.
#[test]
fn the_shipped_examples_are_valid() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    let env = |_: &str| Some("from-the-environment".to_owned());
    let toml = std::fs::read_to_string(deploy.join("gateway.toml")).unwrap_or_default();
    let yaml = std::fs::read_to_string(deploy.join("gateway-kubernetes.yaml")).unwrap_or_default();
    // The block under `gateway.toml: |`, unindented.
    let configmap: String = yaml
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("gateway.toml: |"))
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.get(4..).unwrap_or("")))
        .collect();
    for (name, text, backends) in [("gateway.toml", toml, 2), ("ConfigMap", configmap, 2)] {
        let path = Path::new(name);
        let file = parse(path, &text).unwrap_or_else(|e| panic!("{e}"));
        let plans = plan(path, &text, file.backend, &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plans.len(), backends, "{name}");
    }
}

#[test]
fn a_full_backend_is_accepted() {
    let text = r#"
[[backend]]
name = "fs"
command = "npx"
args = ["-y", "server"]
env = { A = "1" }
cwd = "/tmp"
namespace = false
allow = ["read_*"]
deny = ["read_secret"]
rename = { read_file = "cat" }
describe = { cat = "Print a file" }
call_timeout_secs = 2.5
required = false
restart = { backoff_min_secs = 0.1, backoff_max_secs = 2, check_interval_secs = 1 }
[[backend.policy]]
tools = "read_*"
timeout_secs = 3
max_concurrent = 2
rate_limit = { calls = 10, per_secs = 60 }

[[backend]]
name = "py"
url = "https://example.com/mcp"
headers = { X-Team = "a" }
headers_env = { X-Key = "TOKEN" }
bearer_env = "TOKEN"
protocol = "2025-06-18"
"#;
    let plans = check(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plans.len(), 2);
    let fs = &plans[0];
    assert!(!fs.required);
    assert_eq!(
        fs.transforms.front_name("read_file").as_deref(),
        Some("cat")
    );
    assert_eq!(
        fs.transforms.front_name("read_dir").as_deref(),
        Some("read_dir")
    );
    assert_eq!(fs.transforms.front_name("read_secret"), None);
    assert_eq!(fs.transforms.front_name("write"), None);
    assert_eq!(fs.options.min_backoff, Duration::from_millis(100));
    assert_eq!(fs.options.health_interval, Duration::from_secs(1));
    let py = &plans[1];
    assert!(py.required);
    assert_eq!(py.transforms.front_name("x").as_deref(), Some("py_x"));
}
