//! cargo-fuzz target `cursor`: see `snodo_fuzz::cursor` for the input format and the checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| snodo_fuzz::cursor(data));
