//! The hook hosts: Claude Code and Codex CLI (SPEC §19, §21).
//!
//! Both CLIs run a command at their hook events and read its standard output. `advisor hook`
//! is that command: it parses the event ([`payload`]), hands it over a private Unix socket
//! ([`protocol`]) to one background process per user (`daemon`), which keeps one advisor
//! session per host session, and prints what is due ([`output`]) within a short bound. The
//! places all of this lives are in [`paths`]; a host session's settings and default model in
//! [`settings`]; whether its action gate can act, and the hook that needs, in [`gate_hook`]. Installing the hooks into the hosts' settings and checking the chain
//! (`advisor install|uninstall|doctor`) belong to the command, not to this library.

pub mod client;
pub mod daemon;
pub mod gate_hook;
pub mod host_session;
pub mod open;
pub mod output;
pub mod paths;
pub mod payload;
pub mod protocol;
pub mod settings;
pub mod turns;
