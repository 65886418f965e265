//! The integration tests, linked into one binary so the crate is linked once, not per file.

mod suite;
mod support;
