//! cargo-fuzz target `http_admission`: see `snodo_fuzz::http_admission` for the input format and the checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| snodo_fuzz::http_admission(data));
