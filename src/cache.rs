//! The one shape of the process-wide caches (SPEC A6): a result per key (a place and what
//! else the result depends on), kept for as long as the caller's freshness check (the
//! metadata of the files it was read from) says it is current.
//!
//! The settings (K1), WATCHDOG.md (W8) and roster (RO21, RO24) caches are this type with
//! their own key, value and check. Callers asking for one key at once wait for a single
//! load; a load that fails is not kept; past `max_keys` keys the map starts afresh (loads
//! in flight are unaffected), which bounds memory in a process that sees many places.
//!
//! Nothing here touches the filesystem itself, but the checks and loads handed in do:
//! call it off the actor threads.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

type Slot<V> = Arc<Mutex<Option<Arc<V>>>>;

/// What [`KeyedCache::get`] found.
#[derive(Debug)]
pub enum Lookup<V> {
    /// The caller's previous value is still current (not counted as shared).
    Unchanged(Arc<V>),
    /// A value loaded earlier, still current; nothing was loaded for this call.
    Shared(Arc<V>),
    /// Loaded for this call (the key was new, or its value was stale).
    Loaded(Arc<V>),
}

impl<V> Lookup<V> {
    /// The value, however it was found.
    pub fn value(self) -> Arc<V> {
        match self {
            Lookup::Unchanged(value) | Lookup::Shared(value) | Lookup::Loaded(value) => value,
        }
    }
}

/// Loads and shares counted by a [`KeyedCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Loads begun (a failed one included).
    pub loads: u64,
    /// Answers served from an earlier load.
    pub shared: u64,
}

/// A map from key to the current value, each key behind its own lock.
pub struct KeyedCache<K, V> {
    keys: Mutex<HashMap<K, Slot<V>>>,
    max_keys: usize,
    loads: AtomicU64,
    shared: AtomicU64,
}

impl<K: Eq + Hash + Clone, V> std::fmt::Debug for KeyedCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedCache")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl<K: Eq + Hash + Clone, V> KeyedCache<K, V> {
    /// An empty cache holding at most `max_keys` keys.
    pub fn new(max_keys: usize) -> Self {
        Self {
            keys: Mutex::new(HashMap::new()),
            max_keys,
            loads: AtomicU64::new(0),
            shared: AtomicU64::new(0),
        }
    }

    /// The value for `key`: the kept one while `current` holds for it (`Unchanged` when it
    /// is the caller's `previous`), else `load`ed now and kept when it succeeds.
    pub fn get<E>(
        &self,
        key: K,
        previous: Option<&Arc<V>>,
        current: impl Fn(&V) -> bool,
        load: impl FnOnce() -> Result<V, E>,
    ) -> Result<Lookup<V>, E> {
        let slot = self.slot(key);
        let mut entry = slot.lock();
        if let Some(kept) = entry.as_ref().filter(|kept| current(kept)) {
            if previous.is_some_and(|p| Arc::ptr_eq(p, kept)) {
                return Ok(Lookup::Unchanged(Arc::clone(kept)));
            }
            self.shared.fetch_add(1, Ordering::Relaxed);
            return Ok(Lookup::Shared(Arc::clone(kept)));
        }
        self.loads.fetch_add(1, Ordering::Relaxed);
        *entry = None;
        let loaded = Arc::new(load()?);
        *entry = Some(Arc::clone(&loaded));
        Ok(Lookup::Loaded(loaded))
    }

    /// The counters now.
    pub fn counts(&self) -> CacheCounts {
        CacheCounts {
            loads: self.loads.load(Ordering::Relaxed),
            shared: self.shared.load(Ordering::Relaxed),
        }
    }

    fn slot(&self, key: K) -> Slot<V> {
        let mut keys = self.keys.lock();
        if keys.len() >= self.max_keys && !keys.contains_key(&key) {
            keys.clear();
        }
        Arc::clone(keys.entry(key).or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::convert::Infallible;

    fn ok(value: u32) -> impl FnOnce() -> Result<u32, Infallible> {
        move || Ok(value)
    }

    #[test]
    fn a6_a_current_value_is_shared_a_stale_one_reloaded_and_the_callers_own_unchanged() {
        let cache = KeyedCache::new(8);
        let first = cache.get("a", None, |_| true, ok(1)).unwrap();
        let Lookup::Loaded(first) = first else {
            panic!("a new key loads");
        };
        assert!(matches!(cache.get("a", None, |_| true, ok(2)).unwrap(),
            Lookup::Shared(v) if Arc::ptr_eq(&v, &first)));
        assert!(matches!(
            cache.get("a", Some(&first), |_| true, ok(2)).unwrap(),
            Lookup::Unchanged(_)
        ));
        assert!(
            matches!(cache.get("a", Some(&first), |v| *v == 2, ok(2)).unwrap(),
            Lookup::Loaded(v) if *v == 2)
        );
        assert_eq!(
            cache.counts(),
            CacheCounts {
                loads: 2,
                shared: 1
            }
        );
    }

    #[test]
    fn a6_a_failed_load_is_counted_and_not_kept() {
        let cache: KeyedCache<&str, u32> = KeyedCache::new(8);
        let calls = Cell::new(0);
        let failing = || {
            calls.set(calls.get() + 1);
            Err::<u32, &str>("unreadable")
        };
        assert_eq!(
            cache.get("a", None, |_| true, failing).unwrap_err(),
            "unreadable"
        );
        assert_eq!(
            cache.get("a", None, |_| true, failing).unwrap_err(),
            "unreadable"
        );
        assert_eq!((calls.get(), cache.counts().loads), (2, 2));
        assert!(matches!(
            cache.get("a", None, |_| true, ok(3)).unwrap(),
            Lookup::Loaded(v) if *v == 3
        ));
    }

    #[test]
    fn a6_past_its_bound_the_map_starts_afresh_and_keys_stay_apart() {
        let cache = KeyedCache::new(2);
        cache.get(1, None, |_| true, ok(10)).unwrap();
        cache.get(2, None, |_| true, ok(20)).unwrap();
        assert!(matches!(cache.get(1, None, |_| true, ok(11)).unwrap(),
            Lookup::Shared(v) if *v == 10));
        cache.get(3, None, |_| true, ok(30)).unwrap();
        assert!(
            matches!(cache.get(1, None, |_| true, ok(12)).unwrap(),
            Lookup::Loaded(v) if *v == 12),
            "forgotten when the third key came"
        );
    }
}
