//! The hook hosts: Claude Code and the Codex CLI run `advisor hook` from their hooks, and
//! `advisor install|uninstall|doctor` set those hooks up and check them.

pub mod config_edit;
pub mod diff;
pub mod doctor;
pub mod install;
pub mod settings;
