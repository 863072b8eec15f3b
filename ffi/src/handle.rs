//! One thread at a time, checked: every handle of the C API is a
//! [`Guarded`] value whose atomic busy flag each exported function taking
//! the handle sets on entry (a compare-exchange, [`hold`]) and clears on
//! exit. A second thread's call while one is in flight gets `ONAIR_BUSY`
//! and changes nothing: misuse across threads is answered, never undefined
//! (the models: PyO3's runtime borrow check, sqlite3's `check_same_thread`).
//! A lock would make the second caller wait; a flag never blocks, never
//! deadlocks, and costs one uncontended atomic pair per call.
//!
//! What cannot be checked: a handle freed while another thread uses it
//! (the memory goes away). `_free` refuses a handle whose flag is set (and
//! does nothing), but a call that starts after the free reads freed memory:
//! the caller must serialize free with every other call.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::onair_result::{self, *};

/// The part of every handle that is read without holding it: the flag.
struct Head {
    busy: AtomicBool,
}

impl Head {
    fn acquire(&self) -> Result<(), onair_result> {
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(drop)
            .map_err(|_| ONAIR_BUSY)
    }

    fn release(&self) {
        self.busy.store(false, Ordering::Release);
    }
}

/// A handle's state behind its busy flag.
pub(crate) struct Guarded<T> {
    head: Head,
    value: UnsafeCell<T>,
}

impl<T> fmt::Debug for Guarded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value is not read: another thread may hold it.
        f.debug_struct("Guarded")
            .field("busy", &self.head.busy.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Guarded<T> {
    pub(crate) fn new(value: T) -> Guarded<T> {
        Guarded {
            head: Head {
                busy: AtomicBool::new(false),
            },
            value: UnsafeCell::new(value),
        }
    }
}

/// An opaque handle type of the C API: a newtype over `Guarded<State>`.
/// Only shared references to a handle are ever made; its state is reached
/// through [`hold`].
pub(crate) trait Handle: Sized {
    type State;
    fn guarded(&self) -> &Guarded<Self::State>;
    fn from_guarded(g: Guarded<Self::State>) -> Self;
}

/// Implements [`Handle`] for `onair_x(Guarded<State>)` newtypes (the
/// structs themselves are written out, for cbindgen).
macro_rules! handles {
    ($($name:ident => $state:ty),* $(,)?) => {$(
        impl $crate::handle::Handle for $name {
            type State = $state;
            fn guarded(&self) -> &$crate::handle::Guarded<$state> {
                &self.0
            }
            fn from_guarded(g: $crate::handle::Guarded<$state>) -> Self {
                $name(g)
            }
        }
    )*};
}
pub(crate) use handles;

/// A new handle for C to own, with its flag clear.
pub(crate) fn new_handle<H: Handle>(state: H::State) -> *mut H {
    Box::into_raw(Box::new(H::from_guarded(Guarded::new(state))))
}

/// A handle's state, held for one call: the flag is cleared on drop.
pub(crate) struct Held<'a, T> {
    guarded: &'a Guarded<T>,
}

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the flag is held: this is the only access to the value.
        unsafe { &*self.guarded.value.get() }
    }
}

impl<T> DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as `deref`; `&mut self` makes it unique here too.
        unsafe { &mut *self.guarded.value.get() }
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.guarded.head.release();
    }
}

impl<T: fmt::Debug> fmt::Debug for Held<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Holds handle `p` for this call: NULL → `ONAIR_NULL_PARAMETER`; a call on
/// it in flight on another thread → `ONAIR_BUSY` (nothing is touched).
///
/// # Safety
/// `p` is NULL or a live handle of type `H` from this library.
pub(crate) unsafe fn hold<'a, H: Handle + 'a>(
    p: *const H,
) -> Result<Held<'a, H::State>, onair_result> {
    // SAFETY: the caller's promise; only a shared reference is made.
    let guarded = unsafe { p.as_ref() }.ok_or(ONAIR_NULL_PARAMETER)?.guarded();
    guarded.head.acquire()?;
    Ok(Held { guarded })
}

/// Frees handle `p` (NULL is fine). When a call on it is in flight on
/// another thread the flag is set and nothing happens: the handle stays
/// (freeing memory in use cannot be made safe; the caller must serialize
/// free with every other call).
///
/// # Safety
/// `p` is NULL or a live handle of type `H` from [`new_handle`], freed once.
pub(crate) unsafe fn free<H: Handle>(p: *mut H) {
    // SAFETY: as `hold`.
    let Some(handle) = (unsafe { p.as_ref() }) else {
        return;
    };
    if handle.guarded().head.acquire().is_err() {
        return;
    }
    // SAFETY: a pointer from Box::into_raw in `new_handle`; its flag is now
    // held for good, so no call is inside it.
    drop(unsafe { Box::from_raw(p) });
}
