//! The messages pi writes less often, read by hand as the general way reads them: bash and
//! Python executions, extensions' custom messages, branch and compaction summaries. Each
//! field is read as the transcript's derive reads it from the message's tree (a missing
//! field is its default; `null` where a string or a boolean is read gives up, as the
//! derive then keeps the message opaque), and a member the reader does not use is skipped
//! whatever it holds (SPEC L1).

use crate::domain::transcript::{
    BranchSummaryMessage, CompactionSummaryMessage, Content, CustomMessage, ExecutionMessage,
    RawJson,
};

use super::{once, Parser};

impl Parser<'_, '_> {
    /// The rest of a `bashExecution` or `pythonExecution` message.
    pub(super) fn execution(&mut self) -> Option<ExecutionMessage> {
        let mut command: Option<String> = None;
        let mut output: Option<String> = None;
        let mut exit_code: Option<Option<i64>> = None;
        // cancelled, truncated, excludeFromContext
        let mut flags: [Option<bool>; 3] = [None; 3];
        self.members(
            |p, key| match key {
                "role" => None,
                // `code` is `command` under another name: both at once are a field written
                // twice, which the general way refuses.
                "command" | "code" => once(&mut command, p.string()?),
                "output" => once(&mut output, p.string()?),
                "exitCode" => once(&mut exit_code, p.integer()?),
                "cancelled" => once(&mut flags[0], p.boolean()?),
                "truncated" => once(&mut flags[1], p.boolean()?),
                "excludeFromContext" => once(&mut flags[2], p.boolean()?),
                _ => p.s.value(),
            },
            false,
        )?;
        Some(ExecutionMessage {
            command: command.unwrap_or_default(),
            output: output.unwrap_or_default(),
            exit_code: exit_code.flatten(),
            cancelled: flags[0].unwrap_or_default(),
            truncated: flags[1].unwrap_or_default(),
            exclude_from_context: flags[2].unwrap_or_default(),
        })
    }

    /// The rest of an extension's `custom` message.
    pub(super) fn custom(&mut self) -> Option<CustomMessage> {
        let mut custom_type: Option<String> = None;
        let mut content: Option<Option<Content>> = None;
        let mut display: Option<bool> = None;
        let mut details: Option<Option<RawJson>> = None;
        let mut attribution: Option<Option<String>> = None;
        self.members(
            |p, key| match key {
                "role" => None,
                "customType" => once(&mut custom_type, p.string()?),
                "content" => once(&mut content, p.content()?),
                "display" => once(&mut display, p.boolean()?),
                "details" => once(&mut details, p.raw()?),
                "attribution" => once(&mut attribution, p.string_or_null()?),
                _ => p.s.value(),
            },
            false,
        )?;
        Some(CustomMessage {
            custom_type: custom_type.unwrap_or_default(),
            content: content.flatten().unwrap_or_default(),
            display: display.unwrap_or_default(),
            details: details.flatten(),
            attribution: attribution.flatten(),
        })
    }

    /// The rest of a `branchSummary` message.
    pub(super) fn branch_summary(&mut self) -> Option<BranchSummaryMessage> {
        let mut summary: Option<String> = None;
        let mut from_id: Option<String> = None;
        self.members(
            |p, key| match key {
                "role" => None,
                "summary" => once(&mut summary, p.string()?),
                "fromId" => once(&mut from_id, p.string()?),
                _ => p.s.value(),
            },
            false,
        )?;
        Some(BranchSummaryMessage {
            summary: summary.unwrap_or_default(),
            from_id: from_id.unwrap_or_default(),
        })
    }

    /// The rest of a `compactionSummary` message.
    pub(super) fn compaction_summary(&mut self) -> Option<CompactionSummaryMessage> {
        let mut summary: Option<String> = None;
        self.members(
            |p, key| match key {
                "role" => None,
                "summary" => once(&mut summary, p.string()?),
                _ => p.s.value(),
            },
            false,
        )?;
        Some(CompactionSummaryMessage {
            summary: summary.unwrap_or_default(),
        })
    }

    /// An integer read as the derive reads an `i64` (`Some`), or `null` (`None`): plain
    /// digits, a minus sign allowed, that fit; anything else gives up (serde_json reads
    /// `-0` as a float, which the derive refuses).
    fn integer(&mut self) -> Option<Option<i64>> {
        if self.s.peek()? == b'n' {
            self.s.at += 1;
            return self.s.literal(b"ull").map(|()| None);
        }
        let start = self.s.at;
        self.s.number()?;
        let text = self.s.since(start)?;
        let digits = text.strip_prefix('-').unwrap_or(text);
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: i64 = text.parse().ok()?;
        (value != 0 || !text.starts_with('-')).then_some(Some(value))
    }
}
