//! Every integration test, one module per area; they link into one binary (`tests/all.rs`).

mod agent_policy;
mod consult;
mod context_maintenance;
mod delivery_guard;
mod providers_anthropic;
mod providers_common;
mod providers_openai;
mod providers_runtime;
mod reconfirm;
mod redact;
mod render_cli;
mod render_golden;
mod replay_ask;
mod replay_e2e;
mod runtime_pipeline;
mod session_driver;
mod session_memory;
mod session_reader;
mod settings_cli;
mod tools_cli;
mod tools_workspace;
mod watchdog_cli;
mod watchdog_discovery;
mod watchdog_loader;
