//! Installing the hook hosts' hooks and checking them (SPEC §21): `advisor install|uninstall`
//! write the hooks into Claude Code's and Codex's settings ([`install`], [`config_edit`],
//! [`diff`]) and `advisor doctor` checks the chain from the hook to the model ([`doctor`]).
//! What the hook itself and its background process need stays in the library
//! (`advisor::hosts`).

pub mod config_edit;
pub mod diff;
pub mod doctor;
pub mod install;
