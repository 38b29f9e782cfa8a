//! What the gateway's wire tests share: the processes a gateway started.

#![allow(dead_code)]

use std::process::Command;

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
