//! The advisor's own transcript for `/advisor dump` (C4): compact (the messages, thinking
//! and tool results elided) or raw (system prompt, model, tools with schemas, then every
//! message with thinking, tool calls and tool results).

use crate::model::{AssistantPart, ChatMessage, ToolSchema};

/// What a raw dump shows before the messages.
#[derive(Debug, Clone, Copy)]
pub struct DumpHeader<'a> {
    /// The system prompt of the last review (or the base prompt before the first).
    pub system: &'a str,
    /// The model's id.
    pub model: &'a str,
    /// Its thinking level.
    pub thinking: &'a str,
    /// The tools offered.
    pub tools: &'a [ToolSchema],
}

/// Renders the advisor's `messages`; with a `header` the dump is raw (C4).
pub fn advisor_dump(messages: &[ChatMessage], header: Option<DumpHeader<'_>>) -> String {
    let raw = header.is_some();
    let mut out = String::new();
    if let Some(h) = header {
        out.push_str("## System prompt\n\n");
        out.push_str(h.system);
        out.push_str(&format!(
            "\n\n## Model\n\n{} (thinking: {})\n\n## Tools\n\n",
            h.model, h.thinking
        ));
        for tool in h.tools {
            out.push_str(&format!(
                "- {}: {}\n  {}\n",
                tool.name, tool.description, tool.parameters
            ));
        }
        out.push_str("\n## Messages\n\n");
    }
    for message in messages {
        match message {
            ChatMessage::User { text } => {
                out.push_str("**user**:\n");
                out.push_str(text.trim_end());
                out.push_str("\n\n");
            }
            ChatMessage::Assistant { parts } => {
                out.push_str("**advisor**:\n");
                for part in parts {
                    match part {
                        AssistantPart::Text { text } => {
                            out.push_str(text.trim_end());
                            out.push('\n');
                        }
                        AssistantPart::Thinking { text, .. } if raw => {
                            out.push_str("_thinking:_ ");
                            out.push_str(text.trim_end());
                            out.push('\n');
                        }
                        AssistantPart::Thinking { .. } => {}
                        AssistantPart::ToolCall {
                            name, arguments, ..
                        } => {
                            out.push_str(&format!("→ {name}({arguments})\n"));
                        }
                    }
                }
                out.push('\n');
            }
            ChatMessage::ToolResult {
                name,
                text,
                is_error,
                ..
            } => {
                if raw {
                    let flag = if *is_error { " (error)" } else { "" };
                    out.push_str(&format!(
                        "**{name} result{flag}**:\n{}\n\n",
                        text.trim_end()
                    ));
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("(the advisor's context is empty)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage::User {
                text: "### Session update\n\nfix it\n".into(),
            },
            ChatMessage::Assistant {
                parts: vec![
                    AssistantPart::Thinking {
                        text: "hmm".into(),
                        signature: None,
                        redacted: None,
                        details: None,
                    },
                    AssistantPart::ToolCall {
                        id: "1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a.rs"}),
                    },
                ],
            },
            ChatMessage::ToolResult {
                call_id: "1".into(),
                name: "read".into(),
                text: "no such file".into(),
                is_error: true,
            },
        ]
    }

    #[test]
    fn c4_compact_dump_elides_thinking_and_tool_results() {
        let out = advisor_dump(&messages(), None);
        assert_eq!(
            out,
            "**user**:\n### Session update\n\nfix it\n\n**advisor**:\n→ read({\"path\":\"a.rs\"})\n\n"
        );
        assert_eq!(
            advisor_dump(&[], None),
            "(the advisor's context is empty)\n"
        );
    }

    #[test]
    fn c4_raw_dump_adds_prompt_model_tools_thinking_and_results() {
        let tools = [ToolSchema {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object"}),
        }];
        let header = DumpHeader {
            system: "You review.",
            model: "scripted/test",
            thinking: "medium",
            tools: &tools,
        };
        let out = advisor_dump(&messages(), Some(header));
        assert!(out.starts_with(
            "## System prompt\n\nYou review.\n\n## Model\n\nscripted/test (thinking: medium)\n\n## Tools\n\n- read: Read a file.\n  {\"type\":\"object\"}\n\n## Messages\n\n"
        ), "{out}");
        assert!(out.contains("_thinking:_ hmm\n"));
        assert!(
            out.ends_with("**read result (error)**:\nno such file\n\n"),
            "{out}"
        );
    }
}
