//! The domain model beneath everything else: the primary's transcript, advisories and the
//! deliveries made of them, and the host-facing events. Nothing here depends on another
//! module of the crate.

pub mod advice;
pub mod host;
mod raw_json;
pub mod transcript;
