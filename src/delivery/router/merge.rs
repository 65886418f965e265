//! RO22: a named advisor's note another named advisor already raised about the same update
//! is merged into that one, wherever it waits — one note naming both, in raise order, at the
//! higher severity, the other advisor a co-author ([`Origin::co_authors`]).

use std::sync::Arc;

use crate::delivery::advisors::{add_advisor_name, Origin, Owner};
use crate::domain::advice::{Advisory, Severity};

/// An incoming note of a named advisor, to merge into the same note of another.
#[derive(Debug)]
pub(super) struct Merge<'a> {
    /// The incoming note's advisor and update.
    origin: &'a Origin,
    /// Its advisor's slug.
    author: Arc<str>,
    /// Its dedupe key.
    key: &'a str,
    /// The note.
    incoming: &'a Advisory,
}

impl<'a> Merge<'a> {
    /// The merge of `incoming`, raised by the advisor of `origin` with dedupe key `key`;
    /// `None` for the unnamed advisor's, which merges into nothing.
    pub(super) fn of(origin: &'a Origin, key: &'a str, incoming: &'a Advisory) -> Option<Self> {
        Some(Self {
            author: origin.owner.clone()?,
            origin,
            key,
            incoming,
        })
    }

    /// The incoming note's advisor.
    pub(super) fn author(&self) -> Owner {
        self.origin.owner.clone()
    }

    /// Its dedupe key.
    pub(super) fn key(&self) -> &str {
        self.key
    }

    /// Whether a waiting note of dedupe key `key` from `origin` is the same note (equal
    /// keys: D8's normalisation, case-insensitive) of another named advisor about the same
    /// update.
    pub(super) fn same(&self, key: &str, origin: &Origin) -> bool {
        key == self.key
            && origin.update == self.origin.update
            && origin.owner.is_some()
            && origin.owner != self.origin.owner
    }

    /// Merges the incoming note into the waiting `into` of `origin`: the incoming advisor's
    /// name and model join it, its severity the higher of the two, the incoming advisor a
    /// co-author. Answers the merged severity.
    pub(super) fn fold_into(&self, into: &mut Advisory, origin: &mut Origin) -> Severity {
        let name = self.incoming.advisor.as_deref().unwrap_or_default();
        add_advisor_name(into, name);
        into.add_model(self.incoming.model.as_deref());
        if self.incoming.effective_severity() > into.effective_severity() {
            into.severity = self.incoming.severity;
        }
        tracing::info!(
            advisors = into.advisor.as_deref().unwrap_or(""),
            severity = into.effective_severity().as_str(),
            "advisory merged with another advisor's"
        );
        if !origin.co_authors.contains(&self.author) {
            origin.co_authors.push(self.author.clone());
        }
        into.effective_severity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(slug: Option<&str>) -> Origin {
        Origin {
            owner: slug.map(Into::into),
            ..Origin::default()
        }
    }

    #[test]
    fn ro22_the_same_note_of_another_named_advisor_merges_at_the_higher_severity() {
        let incoming_origin = of(Some("security"));
        let incoming =
            Advisory::new("check input", Some(Severity::Concern)).with_advisor("Security");
        let merge = Merge::of(&incoming_origin, "check input", &incoming).expect("named");
        assert!(merge.same("check input", &of(Some("architecture"))));
        assert!(
            !merge.same("check input", &of(Some("security"))),
            "its own note"
        );
        assert!(
            !merge.same("check input", &of(None)),
            "the unnamed advisor's"
        );
        assert!(!merge.same("other", &of(Some("architecture"))));
        let mut waiting =
            Advisory::new("check input", Some(Severity::Nit)).with_advisor("Architecture");
        let mut origin = of(Some("architecture"));
        assert_eq!(
            merge.fold_into(&mut waiting, &mut origin),
            Severity::Concern
        );
        assert_eq!(
            merge.fold_into(&mut waiting, &mut origin),
            Severity::Concern
        );
        assert_eq!(waiting.advisor.as_deref(), Some("Architecture, Security"));
        assert_eq!(
            origin.co_authors,
            vec![Arc::<str>::from("security")],
            "once"
        );
        let unnamed = of(None);
        assert!(Merge::of(&unnamed, "check input", &incoming).is_none());
    }
}
