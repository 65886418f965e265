//! WATCHDOG.md discovery and expansion (SPEC §8).
