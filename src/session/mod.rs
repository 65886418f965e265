//! Session files (SPEC L1).
