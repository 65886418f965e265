//! CA13–CA20: the conversation as the final-boundary window sees it — T, its turn count
//! (CA14); the window open now and the notes it buffers (CA13); when the guidance text was
//! last shown (CA15); the last genuine user prompt and the continuation mark (CA17).

use crate::delivery::advisors::Origin;
use crate::delivery::catch_up::CatchUpPlan;
use crate::delivery::window::{guidance_due, BoundaryWindow, LastPrompt, WindowNote, GUIDANCE};

/// What the router answers a primary turn end (CA13, CA17, D5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnEndPlanned {
    /// The catch-up block the turn end waits through (D5), if any.
    pub catch_up: Option<CatchUpPlan>,
    /// The boundary is an advisor continuation's (CA17): its review cadence counts nothing
    /// here and nothing is scheduled or waited on (CA4).
    pub continuation: bool,
    /// The final-boundary window this turn end opened (CA13), to close by its id when the
    /// turn end's waits are over; `None` at a WIP boundary.
    pub window: Option<u64>,
}

/// The conversation's window state.
#[derive(Debug, Clone, Default)]
pub(super) struct Conversation {
    /// T (CA14): the conversation's turn ends, +1 at every boundary, WIP rounds and
    /// continuation turns included; 0 again when another conversation begins (CA8).
    turns: u64,
    /// The final-boundary window open now (CA13).
    window: Option<BoundaryWindow>,
    /// Windows opened in the session: the next one's id.
    windows: u64,
    /// T when the guidance text was last shown (CA15); `None`: not yet in this
    /// conversation.
    guidance_at: Option<u64>,
    /// The last genuine user prompt at the latest boundary (CA17).
    last_prompt: LastPrompt,
    /// The continuation mark (CA17): the last genuine user prompt when an advisor delivery
    /// last started a turn; boundaries under the same prompt are continuation boundaries.
    mark: Option<LastPrompt>,
}

impl Conversation {
    /// The same conversation with no window open (F5: the router restarted).
    pub(super) fn restarted(&self) -> Self {
        Self {
            window: None,
            ..self.clone()
        }
    }

    /// Another conversation begins (CA8): T, the guidance turn and the mark start over.
    pub(super) fn new_conversation(&mut self) {
        self.turns = 0;
        self.guidance_at = None;
        self.mark = None;
    }

    /// A turn ended: T + 1 (CA14).
    pub(super) fn turn_ended(&mut self) {
        self.turns += 1;
    }

    /// A boundary under `prompt` (CA17): whether it is an advisor continuation's. It is
    /// while the mark holds that prompt, up to and including the continuation's final
    /// boundary (not `wip`), after which the mark clears; another prompt clears it.
    pub(super) fn boundary_under(&mut self, prompt: LastPrompt, wip: bool) -> bool {
        let continuation = match &self.mark {
            Some(mark) if *mark == prompt => {
                if !wip {
                    self.mark = None;
                }
                true
            }
            Some(_) => {
                self.mark = None;
                false
            }
            None => false,
        };
        self.last_prompt = prompt;
        continuation
    }

    /// A user prompt clears the mark (CA17).
    pub(super) fn user_prompt(&mut self) {
        self.mark = None;
    }

    /// An advisor delivery starts a turn (CA17): the boundaries under the last genuine user
    /// prompt are continuation boundaries until the continuation's final one.
    pub(super) fn mark_continuation(&mut self) {
        tracing::info!("advisor continuation marked");
        self.mark = Some(self.last_prompt.clone());
    }

    /// Whether the mark is set (CA17).
    #[cfg(test)]
    pub(super) fn marked(&self) -> bool {
        self.mark.is_some()
    }

    /// Opens a window (CA13); answers its id.
    pub(super) fn open_window(&mut self) -> u64 {
        self.windows += 1;
        self.window = Some(BoundaryWindow {
            id: self.windows,
            notes: Vec::new(),
        });
        tracing::info!(window = self.windows, "final-boundary window opened");
        self.windows
    }

    /// The id of the window open now.
    pub(super) fn window_id(&self) -> Option<u64> {
        self.window.as_ref().map(|w| w.id)
    }

    /// Buffers `note` in the open window (CA13); gives it back when none is open.
    pub(super) fn buffer(&mut self, note: WindowNote) -> Option<WindowNote> {
        match &mut self.window {
            Some(window) => {
                tracing::info!(
                    severity = note.advisory.effective_severity().as_str(),
                    window = window.id,
                    "advisory buffered for the merged delivery"
                );
                window.notes.push(note);
                None
            }
            None => Some(note),
        }
    }

    /// Closes the open window, answering it.
    pub(super) fn close(&mut self) -> Option<BoundaryWindow> {
        self.window.take()
    }

    /// The notes of the open window, in routing order.
    pub(super) fn notes(&self) -> &[WindowNote] {
        self.window.as_ref().map_or(&[], |w| &w.notes)
    }

    /// Takes the buffered notes whose origin is `pick`; the window stays open.
    pub(super) fn take_notes(&mut self, pick: impl Fn(&Origin) -> bool) -> Vec<WindowNote> {
        let Some(window) = &mut self.window else {
            return Vec::new();
        };
        let (taken, kept) = std::mem::take(&mut window.notes)
            .into_iter()
            .partition(|n| pick(&n.origin));
        window.notes = kept;
        taken
    }

    /// The first buffered note that is `pick`.
    pub(super) fn find_mut(
        &mut self,
        pick: impl Fn(&WindowNote) -> bool,
    ) -> Option<&mut WindowNote> {
        self.window.as_mut()?.notes.iter_mut().find(|n| pick(n))
    }

    /// A merged delivery's `content`, opened by the guidance text when it is due at T
    /// (CA15), which is then counted as shown.
    pub(super) fn with_guidance(&mut self, content: String) -> String {
        if !guidance_due(self.guidance_at, self.turns) {
            return content;
        }
        self.guidance_at = Some(self.turns);
        format!("{GUIDANCE}\n{content}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::Advisory;

    fn note(text: &str, slug: &str) -> WindowNote {
        WindowNote {
            advisory: Advisory::new(text, None),
            key: text.into(),
            origin: Origin {
                owner: Some(slug.into()),
                ..Origin::default()
            },
        }
    }

    #[test]
    fn ca13_a_window_buffers_until_it_closes_and_notes_can_leave_it() {
        let mut c = Conversation::default();
        assert!(
            c.buffer(note("early", "a")).is_some(),
            "no window: given back"
        );
        let id = c.open_window();
        assert_eq!(c.window_id(), Some(id));
        for (text, slug) in [("one", "a"), ("two", "b"), ("three", "a")] {
            assert!(c.buffer(note(text, slug)).is_none());
        }
        let taken = c.take_notes(|o| o.owner.as_deref() == Some("a"));
        assert_eq!(taken.len(), 2);
        assert_eq!(c.notes().len(), 1);
        assert!(c.find_mut(|n| n.key == "two").is_some());
        let closed = c.close().expect("the open window");
        assert_eq!((closed.id, closed.notes.len()), (id, 1));
        assert_eq!(c.window_id(), None);
        assert_eq!(c.open_window(), id + 1, "ids grow over the session");
    }

    #[test]
    fn ca15_the_guidance_opens_the_first_merged_delivery_then_every_fifty_turns() {
        let mut c = Conversation::default();
        assert!(c.with_guidance("x".into()).starts_with(GUIDANCE));
        c.turn_ended();
        assert_eq!(c.with_guidance("x".into()), "x");
        for _ in 0..50 {
            c.turn_ended();
        }
        assert!(c.with_guidance("x".into()).ends_with("\nx"));
        c.new_conversation();
        assert!(c.with_guidance("x".into()).starts_with(GUIDANCE), "CA8");
    }

    #[test]
    fn ca17_the_mark_holds_through_the_continuations_wip_boundaries_until_its_final_one() {
        let mut c = Conversation::default();
        let prompt = LastPrompt::default();
        assert!(!c.boundary_under(prompt.clone(), true));
        c.mark_continuation();
        assert!(c.marked());
        assert!(
            c.boundary_under(prompt.clone(), true),
            "a WIP continuation boundary"
        );
        assert!(
            c.boundary_under(prompt.clone(), false),
            "its final boundary"
        );
        assert!(!c.marked(), "then the mark clears");
        c.mark_continuation();
        c.user_prompt();
        assert!(!c.marked());
    }
}
