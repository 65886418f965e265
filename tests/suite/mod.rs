//! Every integration test, one module per area; they link into one binary (`tests/all.rs`).

mod context_maintenance;
mod pi_e2e;
mod providers_anthropic;
mod providers_common;
mod providers_openai;
mod providers_runtime;
mod reconfirm;
mod redact;
mod render_cli;
mod render_golden;
mod replay_e2e;
mod runtime_pipeline;
mod serve_binary;
mod serve_client;
mod serve_dispatch;
mod session_driver;
mod session_memory;
mod session_reader;
mod settings_cli;
mod tools_cli;
mod tools_workspace;
mod watchdog_cli;
mod watchdog_discovery;
mod watchdog_loader;
