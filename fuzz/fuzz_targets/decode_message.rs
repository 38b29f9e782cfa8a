//! cargo-fuzz target `decode_message`: see `snodo_fuzz::decode_message` for the input format and the checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| snodo_fuzz::decode_message(data));
