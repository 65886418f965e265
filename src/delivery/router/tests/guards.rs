//! Each advisor's guard (RO13, RO15, RO22, P3): registration, the branch seed, merged
//! advisor names.

use super::*;

#[test]
fn ro15_an_unregistered_advisor_uses_the_session_settings_a_registered_one_its_own() {
    let mut g = Guards::new(DeliveryPolicy::Interrupt, 4);
    let arch = label("arch", "Architecture");
    assert_eq!(g.for_label(Some(&arch)).policy, DeliveryPolicy::Interrupt);
    assert_eq!(g.for_label(Some(&arch)).budget.per_update(), 4);
    g.register(
        &arch,
        Some(DeliveryPolicy::Reconfirm),
        2,
        Severity::Concern,
        ReviewMode::Turn,
    );
    assert_eq!(g.policy(&Some("arch".into())), DeliveryPolicy::Reconfirm);
    assert_eq!(g.policy(&Some("gone".into())), DeliveryPolicy::Interrupt);
    assert!(g.uses(DeliveryPolicy::Reconfirm));
    assert!(
        !g.uses(DeliveryPolicy::Interrupt),
        "the unnamed advisor is not in use"
    );
    g.reviewing(None);
    assert!(g.uses(DeliveryPolicy::Interrupt));
    g.register(&arch, None, 2, Severity::Concern, ReviewMode::Turn);
    assert_eq!(g.policy(&Some("arch".into())), DeliveryPolicy::Interrupt);
    assert!(g.remove(&Some("arch".into())));
    assert!(g.get_mut(&Some("arch".into())).is_none());
}

#[test]
fn p3_ro13_the_seed_gives_each_advisor_its_own_advice_and_unknown_names_to_all() {
    let mut g = Guards::new(DeliveryPolicy::Interrupt, 4);
    g.register(
        &label("arch", "Architecture"),
        None,
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    g.register(
        &label("sec", "Security"),
        None,
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    g.seed(
        &[
            Advisory::new("unnamed note", None),
            Advisory::new("arch note", None).with_advisor("Architecture"),
            Advisory::new("both note", None).with_advisor("Architecture, Security"),
            Advisory::new("old note", None).with_advisor("Renamed"),
        ],
        2000,
    );
    let rank = |g: &mut Guards, owner: Owner, key: &str| {
        g.get_mut(&owner).and_then(|x| x.history.rank(key))
    };
    assert_eq!(rank(&mut g, None, "unnamed note"), Some(1));
    assert_eq!(rank(&mut g, None, "arch note"), None);
    let arch: Owner = Some("arch".into());
    let sec: Owner = Some("sec".into());
    assert_eq!(rank(&mut g, arch.clone(), "arch note"), Some(1));
    assert_eq!(rank(&mut g, sec.clone(), "arch note"), None);
    assert_eq!(rank(&mut g, arch.clone(), "both note"), Some(1));
    assert_eq!(rank(&mut g, sec.clone(), "both note"), Some(1));
    assert_eq!(rank(&mut g, sec, "old note"), Some(1));
    assert_eq!(rank(&mut g, arch.clone(), "unnamed note"), None);
}

#[test]
fn ro22_names_are_added_in_raise_order_once() {
    let mut a = Advisory::new("x", None).with_advisor("Architecture");
    add_advisor_name(&mut a, "Security");
    add_advisor_name(&mut a, "Security");
    add_advisor_name(&mut a, "Architecture");
    assert_eq!(a.advisor.as_deref(), Some("Architecture, Security"));
}
