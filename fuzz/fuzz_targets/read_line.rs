//! The session reader's hand-written fast way against its general way (SPEC L1), on any
//! bytes: each line of the input is read both ways (`check_line`: the fast way gives up or
//! reads what the general way reads, from the line's start as from after its leading keys),
//! and the input after a version 3 header is read as a file taken at its lines' leading
//! keys and with every line checked (`check_file`). A disagreement or a panic is a crash.

#![no_main]

use advisor::session::differential::{check_file, check_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        if let Err(disagreement) = check_line(line) {
            panic!("{}\n{disagreement}", String::from_utf8_lossy(line));
        }
    }
    let mut file = br#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#.to_vec();
    file.push(b'\n');
    file.extend_from_slice(data);
    if let Err(disagreement) = check_file(&file) {
        panic!("{disagreement}");
    }
});
