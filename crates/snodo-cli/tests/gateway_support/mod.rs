//! What the gateway's wire tests share: the processes a gateway started, its address,
//! the tools it lists.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::Command;

use snodo_client::Client;

/// The children of process `pid` (its backends).
pub fn children(pid: u32) -> Vec<u32> {
    let out = Command::new("pgrep")
        .arg("-P")
        .arg(pid.to_string())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The command line of process `pid` (empty once it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .replace('\0', " ")
}

/// The socket address of an `http://HOST:PORT/mcp` URL.
pub fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap()
}

/// The names of the tools `client` lists.
pub async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}
