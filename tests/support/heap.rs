//! A global allocator that counts the heap bytes live at any moment, over the system
//! allocator: `#[global_allocator] static ALLOCATOR: CountingAllocator = CountingAllocator;`
//! in a binary of its own (the count is process-wide). Shared as a file (`#[path]`) by
//! `tests/memory.rs` and `benches/sessions.rs`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Counts the heap bytes live now, over the system allocator.
pub struct CountingAllocator;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

fn count(delta: isize) {
    LIVE_BYTES.fetch_add(delta, Ordering::Relaxed);
}

/// The heap bytes live now, as counted by [`CountingAllocator`].
pub fn live() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

// SAFETY: every call is passed to the system allocator unchanged; the counter only adds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc_zeroed(layout);
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = System.realloc(ptr, layout, new_size);
        if !new.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new
    }
}
