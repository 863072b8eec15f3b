//! Handles a stale pointer cannot alias, one thread at a time, checked.
//!
//! A handle the C API gives out (`onair_bot *`, `onair_decoder *`, …) is not
//! the address of its object: it is a number in a pointer's clothes that
//! names a slot of a per-kind table and the slot's generation,
//! `generation << 32 | index << 8 | tag` on 64-bit targets (the tag byte
//! says which kind of handle it is). The object lives behind the slot; every
//! exported function taking a handle looks the slot up and checks, in one
//! compare-exchange on the slot's state word ([`hold`]):
//!
//! - the tag, the index and the generation are ones this library issued for
//!   this kind of handle, else `ONAIR_INVALID_HANDLE` (a pointer from
//!   elsewhere, another kind of handle, garbage);
//! - the slot still holds that generation's object, else
//!   `ONAIR_FREED_HANDLE` (a use after free, a double free);
//! - no call on it is in flight on another thread, else `ONAIR_BUSY`;
//!
//! and on success marks the slot busy for the call. `_free` drops the object
//! and bumps the slot's generation, so the old handle value never names
//! anything again: a slot whose generation would wrap is retired, never
//! reused. A stale free after the slot was reused therefore answers
//! `ONAIR_FREED_HANDLE` and cannot free the new occupant, whose handle
//! carries a newer generation. The tables' memory is never returned (a slot
//! is a word and a pointer), so a stale handle is always safe to look up.
//!
//! Why a table rather than `Box` pointers: with real pointers a freed handle
//! cannot be told from a live one (its memory is gone or reused; rustls-ffi
//! and most C libraries document a double free as undefined behaviour).
//! The cost is one indexed load more per call; the busy check was already a
//! compare-exchange (the models: PyO3's runtime borrow check, sqlite3's
//! `check_same_thread`).
//!
//! What is still the caller's: a view or borrowed text of a handle is valid
//! until the next call on it (or its free); after a free it dangles.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::onair_result::{self, *};

/// The state word of a slot: its generation, a busy bit and a live bit.
const LIVE: u64 = 1;
const BUSY: u64 = 2;
const GEN_SHIFT: u32 = 2;

#[cfg(target_pointer_width = "64")]
mod layout {
    pub(super) const TAG_BITS: u32 = 8;
    pub(super) const INDEX_BITS: u32 = 24;
    pub(super) const GEN_BITS: u32 = 32;
}
#[cfg(not(target_pointer_width = "64"))]
mod layout {
    pub(super) const TAG_BITS: u32 = 4;
    pub(super) const INDEX_BITS: u32 = 14;
    pub(super) const GEN_BITS: u32 = 14;
}
use layout::{GEN_BITS, INDEX_BITS, TAG_BITS};

const MAX_GEN: u64 = (1 << GEN_BITS) - 1;
/// Slots per chunk; chunks are allocated as needed and never freed.
const CHUNK: usize = 256;
const CHUNKS: usize = (1 << INDEX_BITS) / CHUNK;

/// One slot: the state word, the object (`None` when free), and the next
/// free slot's index + 1 while it is on the free list (read and written
/// under the table's lock only).
struct Slot<T> {
    state: AtomicU64,
    value: UnsafeCell<Option<Box<T>>>,
    next_free: AtomicU32,
}

/// Indexes to hand out: freed ones first (a list through the slots; `head`
/// is an index + 1, 0 for none), then fresh ones.
struct Free {
    head: u32,
    fresh: u32,
}

/// The table of one kind of handle. All zero bytes when new, so the statics
/// cost nothing in the library file (they live in .bss).
pub(crate) struct Table<T> {
    chunks: [AtomicPtr<Slot<T>>; CHUNKS],
    free: Mutex<Free>,
}

// SAFETY: a slot's value is reached only by the thread that set its busy
// bit (an Acquire compare-exchange, cleared with a Release store), or by
// `new_handle` before the slot is published as live; the values are moved
// between threads, never shared. (No `T: Send` bound: a state may hold raw
// pointers into its own buffers, for the views it lends; C moves handles
// between threads, and those pointers move with the state they point into.)
unsafe impl<T> Sync for Table<T> {}

impl<T> Table<T> {
    pub(crate) const fn new() -> Table<T> {
        Table {
            chunks: [const { AtomicPtr::new(null_mut()) }; CHUNKS],
            free: Mutex::new(Free { head: 0, fresh: 0 }),
        }
    }

    fn slot(&self, index: usize) -> Option<&Slot<T>> {
        let chunk = self.chunks.get(index / CHUNK)?.load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a published chunk is CHUNK slots, never freed.
        Some(unsafe { &*chunk.add(index % CHUNK) })
    }

    /// An index no live handle holds, its chunk allocated; None when every
    /// index is taken or retired.
    fn take_index(&self) -> Option<usize> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.head != 0 {
            let i = (free.head - 1) as usize;
            let slot = self.slot(i)?;
            free.head = slot.next_free.load(Ordering::Relaxed);
            return Some(i);
        }
        let i = free.fresh as usize;
        let chunk = self.chunks.get(i / CHUNK)?;
        if chunk.load(Ordering::Acquire).is_null() {
            let slots: Box<[Slot<T>]> = (0..CHUNK)
                .map(|_| Slot {
                    state: AtomicU64::new(0),
                    value: UnsafeCell::new(None),
                    next_free: AtomicU32::new(0),
                })
                .collect();
            chunk.store(Box::into_raw(slots).cast::<Slot<T>>(), Ordering::Release);
        }
        free.fresh += 1;
        Some(i)
    }

    fn give_back(&self, index: usize) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(slot), Ok(i)) = (self.slot(index), u32::try_from(index)) {
            slot.next_free.store(free.head, Ordering::Relaxed);
            free.head = i + 1;
        }
    }
}

/// The marker field of an opaque handle struct: the structs exist for the
/// header (cbindgen makes them opaque types) and are never built.
pub(crate) struct Guarded<T>(PhantomData<T>);

impl<T> fmt::Debug for Guarded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Guarded")
    }
}

/// An opaque handle type of the C API, with its table and tag.
pub(crate) trait Handle: Sized + 'static {
    type State: 'static;
    /// The low bits of every handle of this kind (nonzero, odd: never an
    /// aligned address).
    const TAG: usize;
    fn table() -> &'static Table<Self::State>;
    /// Called with the state at the start of every call but the last-error
    /// getters (which use [`peek`]): clears what describes the previous call.
    fn enter(_state: &mut Self::State) {}
}

/// Implements [`Handle`] for the opaque structs (written out, for cbindgen):
/// `onair_x => State, tag N, enter f` (tag 1..=7, unique per kind).
macro_rules! handles {
    ($($name:ident => $state:ty, tag $tag:literal $(, enter $enter:path)?);* $(;)?) => {$(
        impl $crate::handle::Handle for $name {
            type State = $state;
            const TAG: usize = $crate::handle::tag($tag);
            fn table() -> &'static $crate::handle::Table<$state> {
                static TABLE: $crate::handle::Table<$state> = $crate::handle::Table::new();
                &TABLE
            }
            $(fn enter(state: &mut $state) {
                $enter(state)
            })?
        }
    )*};
}
pub(crate) use handles;

/// The tag bits of kind `kind` (1..=7).
pub(crate) const fn tag(kind: usize) -> usize {
    (kind << 1) | 1 | (0b1010 << (TAG_BITS - 4))
}

fn encode(tag: usize, index: usize, generation: u64) -> usize {
    // On 64-bit targets the generation fits above the index; elsewhere too,
    // by the layout's widths.
    ((generation as usize) << (TAG_BITS + INDEX_BITS)) | (index << TAG_BITS) | tag
}

/// (index, generation) of a handle of kind `H`, or `ONAIR_INVALID_HANDLE`.
fn decode<H: Handle>(p: usize) -> Result<(usize, u64), onair_result> {
    if p & ((1 << TAG_BITS) - 1) != H::TAG {
        return Err(ONAIR_INVALID_HANDLE);
    }
    let index = (p >> TAG_BITS) & ((1 << INDEX_BITS) - 1);
    let generation = (p >> (TAG_BITS + INDEX_BITS)) as u64;
    if generation == 0 {
        return Err(ONAIR_INVALID_HANDLE);
    }
    Ok((index, generation))
}

/// A new handle for C to own, or `ONAIR_TOO_MANY_HANDLES` when every slot
/// of the kind is live or retired (about sixteen million on 64-bit targets).
pub(crate) fn new_handle<H: Handle>(state: H::State) -> Result<*mut H, onair_result> {
    let table = H::table();
    let index = table.take_index().ok_or(ONAIR_TOO_MANY_HANDLES)?;
    let slot = table.slot(index).ok_or(ONAIR_TOO_MANY_HANDLES)?;
    let free_state = slot.state.load(Ordering::Acquire);
    let generation = (free_state >> GEN_SHIFT).max(1);
    // SAFETY: the slot is free (not live) and its index is ours alone: no
    // call can acquire it until the live state below is published.
    unsafe { *slot.value.get() = Some(Box::new(state)) };
    slot.state
        .store((generation << GEN_SHIFT) | LIVE, Ordering::Release);
    Ok(encode(H::TAG, index, generation) as *mut H)
}

/// A handle's state, held for one call: the busy bit is cleared on drop.
pub(crate) struct Held<'a, T> {
    slot: &'a Slot<T>,
    live: u64,
}

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the busy bit is held: this is the only access to the
        // value, which is Some while the slot is live.
        match unsafe { &*self.slot.value.get() } {
            Some(v) => v,
            None => unreachable!("a live slot holds its value"),
        }
    }
}

impl<T> DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as `deref`; `&mut self` makes it unique here too.
        match unsafe { &mut *self.slot.value.get() } {
            Some(v) => v,
            None => unreachable!("a live slot holds its value"),
        }
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.slot.state.store(self.live, Ordering::Release);
    }
}

impl<T: fmt::Debug> fmt::Debug for Held<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Looks up handle `p` and sets its busy bit: NULL → `ONAIR_NULL_PARAMETER`,
/// not a handle of this kind from this library → `ONAIR_INVALID_HANDLE`,
/// freed → `ONAIR_FREED_HANDLE`, in a call on another thread → `ONAIR_BUSY`.
/// Nothing is touched on an error.
fn acquire<'a, H: Handle>(p: *const H) -> Result<Held<'a, H::State>, onair_result> {
    if p.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
    }
    let (index, generation) = decode::<H>(p as usize)?;
    let slot = H::table().slot(index).ok_or(ONAIR_INVALID_HANDLE)?;
    let live = (generation << GEN_SHIFT) | LIVE;
    match slot
        .state
        .compare_exchange(live, live | BUSY, Ordering::Acquire, Ordering::Relaxed)
    {
        Ok(_) => Ok(Held { slot, live }),
        Err(now) if now == live | BUSY => Err(ONAIR_BUSY),
        Err(now) => {
            let current = now >> GEN_SHIFT;
            let issued = current > generation || (current == generation && now & LIVE == 0);
            Err(if issued {
                ONAIR_FREED_HANDLE
            } else {
                ONAIR_INVALID_HANDLE
            })
        }
    }
}

/// Holds handle `p` for this call (see [`acquire`]) and clears what
/// described the previous call (`Handle::enter`).
///
/// # Safety
/// None beyond the C contract: any pointer value is looked up, never read.
pub(crate) unsafe fn hold<'a, H: Handle + 'a>(
    p: *const H,
) -> Result<Held<'a, H::State>, onair_result> {
    let mut held = acquire(p)?;
    H::enter(&mut held);
    Ok(held)
}

/// Holds handle `p` without `Handle::enter`: for the last-error getters.
///
/// # Safety
/// As [`hold`].
pub(crate) unsafe fn peek<'a, H: Handle + 'a>(
    p: *const H,
) -> Result<Held<'a, H::State>, onair_result> {
    acquire(p)
}

/// Frees handle `p`: NULL → `Ok` (nothing to do); the errors of [`acquire`]
/// otherwise (a double free is `ONAIR_FREED_HANDLE`, a free while another
/// thread is in a call `ONAIR_BUSY`), and nothing is freed then.
///
/// # Safety
/// As [`hold`].
pub(crate) unsafe fn free<H: Handle>(p: *mut H) -> Result<(), onair_result> {
    if p.is_null() {
        return Ok(());
    }
    let held = acquire(p)?;
    let slot = held.slot;
    let generation = held.live >> GEN_SHIFT;
    std::mem::forget(held);
    // SAFETY: the busy bit is ours and stays set until the state below.
    let value = unsafe { (*slot.value.get()).take() };
    drop(value);
    let next = generation + 1;
    if next > MAX_GEN {
        // Retired: this slot's handles could wrap around; it stays busy and
        // dead, so every handle naming it is answered, none aliases.
        slot.state
            .store(BUSY | (MAX_GEN << GEN_SHIFT), Ordering::Release);
        return Ok(());
    }
    slot.state.store(next << GEN_SHIFT, Ordering::Release);
    let table = H::table();
    let index = (p as usize >> TAG_BITS) & ((1 << INDEX_BITS) - 1);
    table.give_back(index);
    Ok(())
}
