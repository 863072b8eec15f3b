mod batch;
mod boundary;
mod handles;
mod header;
mod leaks;
mod not_sent;
mod threads;
mod version;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the bytes each thread holds, so a test
/// can see a call keep memory it should not (`leaks.rs`).
struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // During thread teardown the counter may be gone: nothing to count then.
    let _ = HELD.try_with(|h| h.set(h.get() + delta));
}

fn size(layout: Layout) -> isize {
    isize::try_from(layout.size()).unwrap_or(isize::MAX)
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(size(layout));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(size(layout));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) };
        count(-size(layout));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(isize::try_from(new_size).unwrap_or(isize::MAX) - size(layout));
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes allocated and not freed by this thread so far.
pub(crate) fn held() -> isize {
    HELD.with(Cell::get)
}
