//! Model providers over reqwest (SPEC §10).
