//! Transcript renderers (SPEC §3).
