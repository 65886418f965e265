//! Helpers shared by the integration tests.

#![allow(dead_code, unused_imports)]

pub mod fixtures;
pub mod runtime;
pub mod sse_server;
pub mod virtual_clock;
pub mod wire;
