//! The hook hosts: Claude Code and Codex CLI (SPEC §19, §20).
//!
//! Both CLIs run a command at their hook events and read its standard output. `advisor hook`
//! is that command: it parses the event ([`payload`]), hands it over a private Unix socket
//! ([`protocol`]) to one background process per user ([`daemon`]), which keeps one advisor
//! session per host session, and prints what is due ([`output`]) within a short bound. The
//! places all of this lives are in [`paths`]; a host session's settings and default model in
//! [`settings`]. `advisor install|uninstall` write the hooks into the hosts' settings
//! ([`install`], [`config_edit`], [`diff`]) and `advisor doctor` checks the chain ([`doctor`]).

pub mod client;
pub mod config_edit;
pub mod daemon;
pub mod diff;
pub mod doctor;
pub mod host_session;
pub mod install;
pub mod open;
pub mod output;
pub mod paths;
pub mod payload;
pub mod protocol;
pub mod settings;
pub mod turns;
