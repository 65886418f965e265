//! `advisor tool NAME --root DIR --args JSON`: runs one workspace tool exactly as the advisor
//! would (same code, same confinement, a fresh `cli-advisor` tool session) and prints what the
//! model would see.
//!
//! Output contract:
//! - success: the tool's text on standard output, then a newline; exit 0;
//! - tool error (bad arguments, a path outside the root, a missing file…): the error text the
//!   model would see, on standard error as one line `advisor: TEXT`; exit 1;
//! - `--args` that is not JSON, an unknown tool name or an unusable root: one line on
//!   standard error; exit 1.
//!
//! `--schema` prints the tool's schema as the model is offered it (pretty JSON) instead.

use std::path::PathBuf;

use advisor::tools::{ToolRegistry, ToolSession};
use clap::Args;
use serde_json::Value;

use super::CliError;

/// Arguments of `advisor tool`.
#[derive(Debug, Args)]
pub struct ToolArgs {
    /// The tool to run: read, search or find.
    pub name: String,
    /// The workspace root the tool is confined to.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// The tool's arguments as a JSON object, as the model would send them.
    #[arg(long, default_value = "{}")]
    pub args: String,
    /// Print the tool's schema (name, description, JSON Schema of the arguments) as the model
    /// is offered it, instead of running the tool.
    #[arg(long)]
    pub schema: bool,
}

/// Runs `advisor tool`: prints the tool's result, or fails with the tool error's text.
pub fn run(args: ToolArgs) -> Result<(), CliError> {
    let text = run_to_text(&args)?;
    println!("{text}");
    Ok(())
}

/// The text the model would see, or the error line.
fn run_to_text(args: &ToolArgs) -> Result<String, CliError> {
    let json: Value = serde_json::from_str(&args.args)
        .map_err(|e| CliError::new(format!("--args is not valid JSON: {e}")))?;
    if !args.root.is_dir() {
        return Err(CliError::new(format!(
            "--root `{}` is not a directory",
            args.root.display()
        )));
    }
    let registry = ToolRegistry::workspace();
    let Some(tool) = registry.get(&args.name) else {
        let known = registry.names().join(", ");
        return Err(CliError::new(format!(
            "unknown tool `{}`: `advisor tool` runs the workspace tools {known}",
            args.name
        )));
    };
    if args.schema {
        let schema = tool.schema();
        let shown = serde_json::json!({
            "name": schema.name,
            "description": schema.description,
            "parameters": schema.parameters,
        });
        return serde_json::to_string_pretty(&shown)
            .map_err(|e| CliError::new(format!("the schema cannot be printed: {e}")));
    }
    let session = ToolSession::for_primary("cli", &args.root);
    tool.run(&json, &session)
        .map_err(|e| CliError::new(e.to_string()))
}
